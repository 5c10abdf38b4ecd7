#!/usr/bin/env bash
# scripts/lab-capacity.sh (`make lab-capacity`): how many labs one server
# takes. On labs of its own (a registry of its own under the report
# directory, ports in LAB_PORT_MIN..LAB_PORT_MAX) it measures:
#   memory  one single lab and one ha lab (3 instances each), idle and
#           right after a bench (seckill bench --strategies redis): RSS and
#           PSS (shared pages split between processes) of every process of
#           the lab, from /proc;
#   cpu     one lesson (LESSON, default 1) on one lab alone, then on 2 ..
#           LABS single labs at once: wall time, and the CPU seconds the
#           labs' processes and the lesson clients used.
# Its summary replaces the block lab-capacity (docs/labs.md), and the
# labs-per-server lines of the workshop handout (blocks workshop-labs and
# workshop-zh-labs: a class's lab, lab new --for all). About 10 minutes on
# 2 cores; every lab is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=bin/seckill
LAB_PORT_MIN=${LAB_PORT_MIN:-10000}
LAB_PORT_MAX=${LAB_PORT_MAX:-25999}
LESSON=${LESSON:-1}
LABS=${LABS:-3}
BENCH_REQUESTS=${BENCH_REQUESTS:-3000}
OUT=${LAB_CAPACITY_OUT:-results/lab-capacity-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export SECKILL_LAB_REGISTRY=$OUT/registry
window=(--port-min "$LAB_PORT_MIN" --port-max "$LAB_PORT_MAX")

labs=()
cleanup() {
	for n in "${labs[@]}"; do [ -n "$n" ] && "$BIN" lab rm "$n" --purge > /dev/null 2>&1 || true; done
}
trap cleanup EXIT

# mem DIR: "RSS_MiB PSS_MiB PROCS" of every process in the process groups
# of the stack's components (each leads its own group).
mem() {
	python3 - "$1" <<'EOF'
import json, os, sys
st = json.load(open(os.path.join(sys.argv[1], "state.json")))
groups = {c["pid"] for c in st["components"]}
rss = pss = n = 0
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        stat = open(f"/proc/{p}/stat").read()
        pgrp = int(stat[stat.rindex(")") + 2:].split()[2])
        if pgrp not in groups:
            continue
        for line in open(f"/proc/{p}/smaps_rollup"):
            k, v = line.split(":", 1) if ":" in line else ("", "")
            if k == "Rss":
                rss += int(v.split()[0])
            elif k == "Pss":
                pss += int(v.split()[0])
        n += 1
    except (OSError, ValueError, IndexError):
        pass
print(rss // 1024, pss // 1024, n)
EOF
}

# cpu DIR...: CPU seconds (user+system) used so far by every process in
# the process groups of those stacks' components.
cpu() {
	python3 - "$@" <<'EOF'
import json, os, sys
groups = set()
for d in sys.argv[1:]:
    groups |= {c["pid"] for c in json.load(open(os.path.join(d, "state.json")))["components"]}
hz = os.sysconf("SC_CLK_TCK")
t = 0
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        s = open(f"/proc/{p}/stat").read()
        f = s[s.rindex(")") + 2:].split()
        if int(f[2]) in groups:
            t += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    except (OSError, ValueError, IndexError):
        pass
print(f"{t / hz:.1f}")
EOF
}

# timed FILE CMD...: runs CMD, writing "wall user sys" (s) of it to FILE.
timed() {
	local file=$1
	shift
	local TIMEFORMAT='%R %U %S'
	{ time "$@" > "$file.out" 2>&1; } 2> "$file"
}

new_lab() {
	local name=$1
	shift
	"$BIN" lab new "$name" --dir "$OUT/$name" "${window[@]}" "$@" > "$OUT/$name-new.txt"
	labs+=("$name")
}

began=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
# Each lab: single and ha with every server, single sized to exercise 1
# (lab new --for redislock: Redis and MySQL only), and single sized to the
# workshop's three exercises (--for all: Redis, etcd and MySQL).
for config in single ha redislock all; do
	name=mem-$config
	case $config in
	redislock | all) topology=single; new_lab "$name" --for "$config" --instances 3 ;;
	*) topology=$config; new_lab "$name" --topology "$topology" --instances 3 ;;
	esac
	sleep 30 # let the servers settle (JVMs, caches)
	backends=$(python3 -c 'import json,sys; print(", ".join(json.load(open(sys.argv[1]))["backends"]))' "$OUT/$name/state.json")
	read -r rss_idle pss_idle procs < <(mem "$OUT/$name")
	c0=$(cpu "$OUT/$name")
	sleep 60
	c1=$(cpu "$OUT/$name")
	idle_cpu=$(python3 -c "print(f'{($c1 - $c0) / 60 * 100:.1f}')")
	c0=$(cpu "$OUT/$name")
	timed "$OUT/$name-bench.time" "$BIN" bench --dir "$OUT/$name" --strategies redis --requests "$BENCH_REQUESTS" --out "$OUT/$name-bench"
	c1=$(cpu "$OUT/$name")
	read -r bwall buser bsys < "$OUT/$name-bench.time"
	read -r rss_bench pss_bench _ < <(mem "$OUT/$name")
	bench_cpu=$(python3 -c "print(f'{$c1 - $c0 + $buser + $bsys:.1f}')")
	label="$topology, 3 instances ($backends)"
	case $config in redislock | all) label="single, 3 instances, \`--for $config\` ($backends)" ;; esac
	rows+=("| $label | $procs | $rss_idle | $pss_idle | $rss_bench | $pss_bench | $idle_cpu % | ${bwall}s, ${bench_cpu} CPU-s |")
	eval "pss_$config=$pss_bench"
	"$BIN" lab rm "$name" --purge > /dev/null
	labs=("${labs[@]/$name/}")
done

# CPU: one lesson on one lab alone, then on 2 .. LABS labs at once.
dirs=()
for i in $(seq 1 "$LABS"); do
	new_lab "cpu-$i" --instances 3
	dirs+=("$OUT/cpu-$i")
done
sleep 20
cores=$(nproc)
cpu_rows=()
for n in $(seq 1 "$LABS"); do
	c0=$(cpu "${dirs[@]}")
	for i in $(seq 1 "$n"); do
		timed "$OUT/lesson-$n-$i.time" "$BIN" lesson "$LESSON" --dir "${dirs[$((i - 1))]}" --out "$OUT/lesson-$n-$i" &
	done
	wait
	c1=$(cpu "${dirs[@]}")
	walls=() clients=0
	for i in $(seq 1 "$n"); do
		read -r w u s < "$OUT/lesson-$n-$i.time"
		walls+=("$w")
		clients=$(python3 -c "print($clients + $u + $s)")
	done
	cpu_n=$(python3 -c "print(f'{$c1 - $c0 + $clients:.1f}')")
	wall_n=$(printf '%s\n' "${walls[@]}" | sort -n | tail -1)
	verdicts=$(sed -n 's/^  verdict: *\([a-z ]*[a-z]\).*/\1/p' "$OUT"/lesson-"$n"-[0-9]*.time.out | sort | uniq -c | sed 's/^ *//' | paste -sd, - | sed 's/,/, /g')
	if [ "$n" = 1 ]; then
		wall1=$wall_n cpu1=$cpu_n
	fi
	slow=$(python3 -c "print(f'{$wall_n / $wall1:.1f}')")
	cpu_rows+=("| $n | ${wall_n} s | ${slow}× | $cpu_n | $(python3 -c "print(f'{$cpu_n / $wall_n:.2f}')") | $verdicts |")
done
read -r busy per_core labs_box per_min < <(python3 -c "
busy = $cpu1 / $wall1            # cores one lab uses while its lesson runs
print(f'{busy:.2f}', f'{1 / busy:.1f}', f'{$cores / busy:.1f}', f'{60 / $cpu1:.1f}')")
per_gib_single=$(python3 -c "print(f'{1024 / $pss_single:.1f}')")
per_gib_ha=$(python3 -c "print(f'{1024 / $pss_ha:.1f}')")
per_gib_ex1=$(python3 -c "print(f'{1024 / $pss_redislock:.1f}')")
# The same model for two servers: memory less 2 GiB for the system, and
# the labs' lessons a core runs at once at full speed.
# fits GIB CORES [PSS] [zh]: the labs of PSS MiB (an exercise-1 lab's by
# default) such a server holds, in English or in Chinese.
fits() { python3 -c "
m = ($1 - 2) * 1024 / ${3:-$pss_redislock}
c = $2 / ($cpu1 / $wall1)
if '${4:-}' == 'zh':
    print(f'按内存能放 {int(m)} 个，其中 {c:.1f} 个同时跑第 $LESSON 课仍是全速')
else:
    print(f'{int(m)} labs by memory, {c:.1f} of them running lesson $LESSON at once at full speed')"; }
fit_here=$(fits "$(free -g | awk '/^Mem:/ {print $2}')" "$(nproc)")
fit_8=$(fits 32 8)
mem_here=$(free -g | awk '/^Mem:/ {print $2}')
class_here=$(fits "$mem_here" "$(nproc)" "$pss_all")
class_8=$(fits 32 8 "$pss_all")
class_here_zh=$(fits "$mem_here" "$(nproc)" "$pss_all" zh)
class_8_zh=$(fits 32 8 "$pss_all" zh)
wall=$(( $(date +%s) - began ))

{
	echo "Printed by \`scripts/lab-capacity.sh\` (\`make lab-capacity\`, LESSON=$LESSON LABS=$LABS, $(date -u +%Y-%m-%d), $wall s) on $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p')), $(free -g | awk '/^Mem:/ {print $2}') GiB RAM, load average $load0 at the start (other work on the machine counts in the CPU figures); the CPU labs with every server."
	echo
	echo "| lab | processes | RSS idle (MiB) | PSS idle (MiB) | RSS after the bench | PSS after the bench | CPU idle | \`bench --strategies redis --requests $BENCH_REQUESTS\` |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	printf '%s\n' "${rows[@]}"
	echo
	echo "- Memory: PSS splits the pages processes share (the seckill binary of the instances, the dashboard); a single lab takes about $pss_single MiB after a bench, an ha lab $pss_ha MiB, a lab for exercise 1 (\`seckill lab new NAME --for redislock\`) $pss_redislock MiB: **$per_gib_single single labs, $per_gib_ha ha labs or $per_gib_ex1 exercise-1 labs per GiB** of free memory."
	echo "- Class labs (\`--for all\`, the three exercises of the workshop) take $pss_all MiB after a bench: this machine, $(nproc) cores and $mem_here GiB: $class_here; 8 cores and 32 GiB: $class_8."
	echo "- Exercise-1 labs per server (memory less 2 GiB for the system; CPU: one lesson's cores, below): this machine, $(nproc) cores and $(free -g | awk '/^Mem:/ {print $2}') GiB: $fit_here; 8 cores and 32 GiB: $fit_8. Idle labs cost their idle CPU only."
	echo "- CPU: \`seckill lesson $LESSON\` on one lab alone took ${wall1} s and $cpu1 CPU-s (the lab's processes and the lesson's client): the lab keeps $busy cores busy while its lesson runs, so **$per_core labs per core** run a lesson at the same moment at full speed ($labs_box on these $cores cores); put another way, a core runs **$per_min such lessons a minute**. Between lessons a lab is idle (the CPU idle column). The same lesson on 1 to $LABS labs at once:"
	echo
	echo "| labs at once | slowest lesson | slowdown | CPU-s in all | cores busy | verdicts |"
	echo "| ---: | ---: | ---: | ---: | ---: | --- |"
	printf '%s\n' "${cpu_rows[@]}"
} > "$OUT/lab-capacity.md"
cat "$OUT/lab-capacity.md"
scripts/readme-block.sh lab-capacity "$OUT/lab-capacity.md"

# The handout's line: a class's lab, this server and the 8-core model.
cat > "$OUT/workshop-labs.md" <<EOF
Measured by \`make lab-capacity\` ($(date -u +%Y-%m-%d), $(nproc) CPUs, $mem_here GiB, load average $load0 at the start): a class's lab (\`lab new NAME --for all\`: Redis, etcd and MySQL, 3 instances) takes **$pss_all MiB** after a bench. This server: **$class_here**. By the same model, 8 cores and 32 GiB: **$class_8**. The other lab sizes and the model: [labs.md](../labs.md#several-labs-on-one-server).
EOF
cat > "$OUT/workshop-zh-labs.md" <<EOF
由 \`make lab-capacity\` 测得（$(date -u +%Y-%m-%d)，$(nproc) 个 CPU，$mem_here GiB，开始时负载 $load0）：一个上课用的实验环境（\`lab new NAME --for all\`：Redis、etcd 和 MySQL，3 个实例）压测后占 **$pss_all MiB**。这台服务器：**$class_here_zh**。按同一模型，8 核 32 GiB：**$class_8_zh**。其他大小的实验环境和模型见 [labs.md](../labs.md#several-labs-on-one-server)。
EOF
scripts/readme-block.sh workshop-labs "$OUT/workshop-labs.md"
scripts/readme-block.sh workshop-zh-labs "$OUT/workshop-zh-labs.md"
