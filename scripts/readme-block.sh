#!/usr/bin/env bash
# readme-block.sh NAME FILE: replaces the lines between
#   <!-- BEGIN generated:NAME -->  and  <!-- END generated:NAME -->
# in README.md with FILE's contents. The blocks are written only by the
# scripts that measure them (make readme, make perf): README figures are
# regenerated, never retyped.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 file=$2
grep -q "^<!-- BEGIN generated:$name -->$" README.md || { echo "readme-block: README.md has no block $name" >&2; exit 1; }
awk -v name="$name" -v file="$file" '
	$0 == "<!-- BEGIN generated:" name " -->" { print; while ((getline line < file) > 0) print line; skip = 1; next }
	$0 == "<!-- END generated:" name " -->" { skip = 0 }
	!skip { print }
' README.md > README.md.tmp && mv README.md.tmp README.md
echo "readme-block: README.md block $name regenerated from $file"
