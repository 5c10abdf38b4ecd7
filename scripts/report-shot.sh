#!/usr/bin/env bash
# report-shot: screenshots of a bench report in headless Chromium, for
# people to look at. REPORT (default: the newest results/*/report.html).
# Writes, beside the report: shot-projector.png (1280x720, what the room
# sees first) and shot-full.png (1280 wide, the whole page).
set -euo pipefail
cd "$(dirname "$0")/.."
REPORT=${REPORT:-$(ls -t results/*/report.html 2>/dev/null | head -1)}
if [ -z "$REPORT" ] || [ ! -f "$REPORT" ]; then
	echo "report-shot: no report found; run a bench first (make bench) or pass REPORT=path/report.html" >&2
	exit 2
fi
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
"$CHROMIUM" "${flags[@]}" --window-size=1280,${HEIGHT:-9000} --screenshot="$dir/shot-full.png" "$page" 2>/dev/null
echo "report-shot: $dir/shot-projector.png and $dir/shot-full.png"
