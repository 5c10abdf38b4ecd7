#!/usr/bin/env bash
# examples/curator/build.sh [OUT_DIR]: compiles the Curator stock service
# with javac --release 17 against Debian's jars under /usr/share/java into
# OUT_DIR/seckill-curator.jar (default bin/curator). No network, no Maven:
# the jar's manifest names the Debian jars (Class-Path), so
# `java -jar OUT_DIR/seckill-curator.jar` finds Curator, ZooKeeper, Guava,
# Connector/J and Gson where apt-get put them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(cd "$here/../.." && pwd)/bin/curator}
JARS=${CURATOR_JAR_DIR:-/usr/share/java}
# curator-recipes.jar's own manifest names curator-framework, curator-client,
# zookeeper(-jute), guava and slf4j-api; slf4j-simple is the log binding.
jars=(curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple mariadb-java-client gson)
pkgs="default-jdk-headless libcurator-recipes-java libmariadb-java libgoogle-gson-java"

for tool in javac jar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "curator: no $tool: apt-get install --no-install-recommends $pkgs (make deps does)" >&2
    exit 1
  fi
done
cp=()
for j in "${jars[@]}"; do
  if [ ! -f "$JARS/$j.jar" ]; then
    echo "curator: $JARS/$j.jar missing: apt-get install --no-install-recommends $pkgs (make deps does)" >&2
    exit 1
  fi
  cp+=("$JARS/$j.jar")
done

mkdir -p "$out"
tmp=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/classes"
classpath=$(IFS=:; echo "${cp[*]}")
mapfile -t sources < <(find "$here/src" -name '*.java' | sort)
# -path off: the Debian jars' manifests name optional jars (jline) that
# need not be installed.
javac --release 17 -Xlint:all,-path -Werror -encoding UTF-8 -cp "$classpath" -d "$tmp/classes" "${sources[@]}"
{
  echo "Main-Class: seckill.curator.Main"
  # A manifest line holds at most 72 bytes: one jar per line, each
  # continuation line's first space dropped, its second the separator.
  printf 'Class-Path: %s\n' "${cp[0]}"
  for p in "${cp[@]:1}"; do printf '  %s\n' "$p"; done
} >"$tmp/manifest.txt"
jar --create --file "$tmp/seckill-curator.jar" --manifest "$tmp/manifest.txt" -C "$tmp/classes" .
mv -f "$tmp/seckill-curator.jar" "$out/seckill-curator.jar"
echo "curator: built $out/seckill-curator.jar"
