#!/usr/bin/env bash
# report-shot: screenshots of a report in headless Chromium, for people to
# look at: a bench report (report.html), a scenario's (scenario.html) or a
# course's (course.html, `seckill lesson`). REPORT: the page, or a
# directory holding one (default: the newest results/*/report.html or
# results/*/course.html). Writes, beside the page: shot-projector.png
# (1280x720, what the room sees first) and shot-full.png (1280 wide, the
# whole page; HEIGHT, default 9000, 20000 for a course).
set -euo pipefail
cd "$(dirname "$0")/.."
REPORT=${REPORT:-$(ls -t results/*/report.html results/*/course.html 2>/dev/null | head -1)}
if [ -d "${REPORT:-}" ]; then
	for p in course.html report.html scenario.html; do
		if [ -f "$REPORT/$p" ]; then REPORT=$REPORT/$p; break; fi
	done
fi
if [ -z "$REPORT" ] || [ ! -f "$REPORT" ]; then
	echo "report-shot: no report found; run a bench or a lesson first (make bench, bin/seckill lesson 1) or pass REPORT=path/report.html (or course.html)" >&2
	exit 2
fi
case $(basename "$REPORT") in
course.html) HEIGHT=${HEIGHT:-20000} ;;
*) HEIGHT=${HEIGHT:-9000} ;;
esac
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROMIUM" ]; then
	echo "report-shot: chromium is not installed (make deps installs it)" >&2
	exit 2
fi
dir=$(cd "$(dirname "$REPORT")" && pwd)
page="file://$dir/$(basename "$REPORT")"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless=new --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --user-data-dir="$profile")
"$CHROMIUM" "${flags[@]}" --window-size=1280,720 --screenshot="$dir/shot-projector.png" "$page" 2>/dev/null
"$CHROMIUM" "${flags[@]}" --window-size=1280,$HEIGHT --screenshot="$dir/shot-full.png" "$page" 2>/dev/null
echo "report-shot: $dir/shot-projector.png and $dir/shot-full.png"
