#!/usr/bin/env bash
# scripts/check-go.sh (first step of `make deps` and `make build`): stops
# with a message saying how to get a new enough Go when the Go that make
# would run ($GO, default go) is older than go.mod's `go` line, the one
# source of the version the lab needs. The go command runs from the
# repository's root, so a Go >= 1.21 that switches toolchains by itself
# (GOTOOLCHAIN=auto) reports the toolchain it would build with.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}

need=$(awk '$1 == "go" { print $2; exit }' go.mod)
if [ -z "$need" ]; then
  echo "check-go: go.mod has no 'go' line" >&2
  exit 1
fi

# vparse VERSION: "major minor patch pre" of 1.26.8, 1.26, 1.26rc1 (pre is
# 0 for a release, 1 for a beta or release candidate, which comes before
# the release of the same minor: 1.26rc1 < 1.26.0).
vparse() {
  local v=$1 pre=0
  if [[ $v =~ ^([0-9]+)\.([0-9]+)(\.([0-9]+))?(rc[0-9]+|beta[0-9]+)?$ ]]; then
    [ -n "${BASH_REMATCH[5]}" ] && pre=1
    echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[4]:-0} $pre"
    return 0
  fi
  return 1
}

# older A B: A is an older version than B.
older() {
  local a b
  read -r -a a <<<"$(vparse "$1")"
  read -r -a b <<<"$(vparse "$2")"
  for i in 0 1 2; do
    if [ "${a[$i]}" -ne "${b[$i]}" ]; then
      [ "${a[$i]}" -lt "${b[$i]}" ]
      return
    fi
  done
  # Same numbers: a prerelease is older than the release.
  [ "${a[3]}" -gt "${b[3]}" ]
}

if ! vparse "$need" >/dev/null; then
  echo "check-go: go.mod's 'go $need' is not a version this script reads" >&2
  exit 1
fi

# The release archive and toolchain names of the version go.mod needs
# (1.26 -> go1.26.0: from 1.21 on, every release has a patch number).
want=go$need
if [[ $need =~ ^[0-9]+\.[0-9]+$ ]]; then
  want=go$need.0
fi

if ! command -v "$GO" >/dev/null 2>&1; then
  found="no '$GO' on PATH"
  out=""
else
  out=$("$GO" version 2>&1) || true
  found="$out ($(command -v "$GO"))"
fi

# "go version go1.26.8 linux/amd64", or a development build's
# "go version devel go1.27-abcdef Mon Jan 1 ... linux/amd64".
ver="" platform=""
if [[ $out =~ ^go\ version\ (devel\ )?go([0-9]+\.[0-9]+(\.[0-9]+)?(rc[0-9]+|beta[0-9]+)?)[-\ ] ]]; then
  ver=${BASH_REMATCH[2]}
fi
if [[ $out =~ \ ([a-z0-9]+)/([a-z0-9]+)$ ]]; then
  platform="${BASH_REMATCH[1]}-${BASH_REMATCH[2]}"
fi
if [ -z "$ver" ] && [[ $out =~ ^go\ version\ devel ]]; then
  # A development build that does not say which release it follows.
  echo "check-go: $out: a development build; assuming it is at least Go $need" >&2
  exit 0
fi

if [ -n "$ver" ] && ! older "$ver" "$need"; then
  exit 0
fi

# How to get one: from Go 1.21 on, the go command fetches a toolchain
# itself; older ones need the release archive.
modern=0
if [ -n "$ver" ] && ! older "$ver" 1.21; then
  modern=1
fi
{
  echo "check-go: found $found"
  echo "check-go: the lab needs Go >= $need (go.mod's 'go' line)."
  if [ "$modern" = 1 ]; then
    cat <<EOF
check-go: Go $ver fetches a newer toolchain itself:
    export GOTOOLCHAIN=$want   # every go command now runs Go ${want#go} (also in ~/.profile)
    $GO version                # fetches it once from the module proxy, then prints it
  or install it beside this one:
    $GO install golang.org/dl/$want@latest && "\$($GO env GOPATH)/bin/$want" download
    make GO="\$($GO env GOPATH)/bin/$want" deps build
EOF
  else
    plat=${platform:-linux-amd64}
    cat <<EOF
check-go: install the official release into /usr/local/go (a distribution's
check-go: own package, e.g. Debian 12's golang-go at 1.19, is too old):
    curl -fsSL https://go.dev/dl/$want.$plat.tar.gz -o /tmp/$want.tar.gz
    sudo rm -rf /usr/local/go && sudo tar -C /usr/local -xzf /tmp/$want.tar.gz
    export PATH=/usr/local/go/bin:\$PATH   # before the older go; also in ~/.profile
  then run make again.
EOF
  fi
} >&2
exit 1
