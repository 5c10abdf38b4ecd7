#!/usr/bin/env python3
"""handout.py OUT: renders the workshop handout's generated blocks
(docs/workshop/en.md and zh.md) from the runs `make readme`'s handout part
made in OUT: OUT/lesson-N/course.json and OUT/lesson-N.wall (seckill
lesson N), OUT/grade-EX-starter.json and OUT/grade-EX-key.json (the
grade.json of seckill grade EX, and of --key), OUT/list.txt (seckill lesson
list). Writes OUT/blocks/NAME.md, one per block: workshop-NAME in en.md,
workshop-zh-NAME in zh.md. The figures are the tool's, as printed; only the
framing is in each page's language."""
import json
import os
import re
import sys

out = sys.argv[1]
date, cpus = os.environ["HANDOUT_DATE"], os.environ["HANDOUT_CPUS"]
blocks = os.path.join(out, "blocks")
os.makedirs(blocks, exist_ok=True)


def write(name, en, zh):
    for prefix, text in (("workshop-", en), ("workshop-zh-", zh)):
        with open(os.path.join(blocks, prefix + name + ".md"), "w") as f:
            f.write(text.rstrip("\n") + "\n")


def text(figure):
    """A figure as one line of Markdown prose: no raw HTML (`<nil>`)."""
    return " ".join(figure.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def estimates():
    est = {}
    for line in open(os.path.join(out, "list.txt")):
        m = re.match(r"^(\d+)\s+.*?\(([a-z0-9-]+)\)\s+~(\d+)s", line)
        if m:
            est[int(m.group(1))] = (m.group(2), int(m.group(3)))
    return est


est = estimates()
times = []
for d in sorted(os.listdir(out)):
    m = re.fullmatch(r"lesson-(\d+)", d)
    if not m:
        continue
    n = int(m.group(1))
    o = json.load(open(os.path.join(out, d, "course.json")))["outcomes"][0]
    wall = float(open(os.path.join(out, d + ".wall")).read())
    times.append((n, o["slug"], est.get(n, ("", 0))[1], wall, o["verdict"]))
    why = f" ({o['why']})" if o.get("why") else ""
    cond = f"; {o['conditions']}" if o.get("conditions") else ""
    en = (f"**Our run** (`bin/seckill lesson {n}`, `make readme`, {date}, {cpus} CPUs{cond}; {wall:.1f} s): "
          f"{o['verdict']}{why}. {text(o['ours'])}")
    zh = (f"**我们的一次运行**（`bin/seckill lesson {n}`，`make readme`，{date}，{cpus} 核{cond}；{wall:.1f} 秒）："
          f"结论 {o['verdict']}{why}。{text(o['ours'])}")
    write(f"lesson-{n}", en, zh)

times.sort()
total = sum(t[3] for t in times)
rows = "\n".join(f"| {n} | {slug} | {e} | {w:.1f} | {v} |" for n, slug, e, w, v in times)
write("times",
      f"Measured by `make readme` (its handout part), {date}, {cpus} CPUs: one run of each lesson of the plan, "
      f"one at a time, on a single stack of 3 instances (`bin/seckill up --instances 3`); {total:.0f} s in all. "
      "\"List\" is the estimate in seconds that `bin/seckill lesson list` prints; a loaded machine is slower.\n\n"
      "| # | Lesson | List | Measured s | Verdict |\n|---|---|---|---|---|\n" + rows,
      f"由 `make readme`（handout 部分）测得，{date}，{cpus} 核：日程里的每一课各跑一次，一次只跑一课，"
      f"实验环境是 3 个实例的单机拓扑（`bin/seckill up --instances 3`）；合计 {total:.0f} 秒。"
      "“预计”是 `bin/seckill lesson list` 打印的预计秒数；机器负载高时会更慢。\n\n"
      "| # | 课 | 预计 | 实测秒数 | 结论 |\n|---|---|---|---|---|\n" + rows)

parts_zh = {"conformance": "接口一致性测试", "bench": "压测", "faults": "故障场景"}
for ex in ("redislock", "watchdog", "fencing"):
    for who in ("starter", "key"):
        p = os.path.join(out, f"grade-{ex}-{who}.json")
        if not os.path.exists(p):
            continue
        s = json.load(open(p))
        checks = s["checks"]
        passed = sum(c["pass"] for c in checks)
        steps = ", ".join(f"{t['part']} {t['wall_s']:.1f} s" for t in s["times"])
        failed = [c for c in checks if not c["pass"]]
        flag = " --key" if who == "key" else ""
        en = (f"**Our grade of the {'starter' if who == 'starter' else 'answer key'}** (`bin/seckill grade {ex}{flag} --dir DIR`, "
              f"`make readme`, {date}, {cpus} CPUs): **{passed} of {len(checks)} checks passed**, "
              f"{s['wall_s']:.0f} s in all, the build included ({steps}).")
        zh = (f"**我们给{'起始代码' if who == 'starter' else '参考答案'}的一次评分**（`bin/seckill grade {ex}{flag} --dir DIR`，"
              f"`make readme`，{date}，{cpus} 核）：**{len(checks)} 项通过 {passed} 项**，"
              f"共 {s['wall_s']:.0f} 秒（含编译；{steps}）。")
        if failed:
            en += " Failed:\n"
            zh += "失败的检查：\n"
            for c in failed:
                en += f"\n- `{c['name']}` ({c['part']}): {text(c['figure'])}"
                zh += f"\n- `{c['name']}`（{parts_zh.get(c['part'], c['part'])}）：{text(c['figure'])}"
        write(f"{ex}-{who}", en, zh)
