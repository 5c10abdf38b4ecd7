#!/usr/bin/env bash
# readme-block.sh NAME FILE: replaces the lines between
#   <!-- BEGIN generated:NAME -->  and  <!-- END generated:NAME -->
# with FILE's contents, in the one page that holds the block: README.md or
# a page under docs/ (it is an error when none or several hold it). The
# blocks are written only by the scripts that measure them (make readme,
# make perf): their figures are regenerated, never retyped.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 file=$2
begin="<!-- BEGIN generated:$name -->"
mapfile -t pages < <(grep -lxF -- "$begin" README.md $(find docs -name '*.md' | sort) || true)
case ${#pages[@]} in
1) page=${pages[0]} ;;
0) echo "readme-block: no page (README.md, docs/**/*.md) has the block $name" >&2; exit 1 ;;
*) echo "readme-block: several pages have the block $name: ${pages[*]}" >&2; exit 1 ;;
esac
awk -v name="$name" -v file="$file" '
	$0 == "<!-- BEGIN generated:" name " -->" { print; while ((getline line < file) > 0) print line; skip = 1; next }
	$0 == "<!-- END generated:" name " -->" { skip = 0 }
	!skip { print }
' "$page" > "$page.tmp" && mv "$page.tmp" "$page"
echo "readme-block: $page block $name regenerated from $file"
