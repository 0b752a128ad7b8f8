#!/usr/bin/env bash
# Build the chart renderer (scripts/chart-render/main.go: Helm's template
# engine, Go's text/template with the sprig functions) and print its path.
#
# The renderer needs Debian's golang-go, golang-github-masterminds-sprig-dev
# and golang-k8s-sigs-yaml-dev. When they are missing and this runs as root or
# with CI=true, they are installed with apt-get (Debian mirrors only); else the
# script names the packages and exits 3. The binary is cached under
# $CARGO_TARGET_DIR (or ./target) and rebuilt when main.go changes.
#
#   scripts/chart-render.sh            # prints the renderer's path
#   "$(scripts/chart-render.sh)" --chart charts/scion --values v.yaml
set -euo pipefail
cd "$(dirname "$0")/.."

GOPATH_DEBIAN=/usr/share/gocode
PACKAGES=(golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev)

have_all() {
  command -v go >/dev/null 2>&1 &&
    [ -d "$GOPATH_DEBIAN/src/github.com/Masterminds/sprig" ] &&
    [ -d "$GOPATH_DEBIAN/src/sigs.k8s.io/yaml" ]
}

if ! have_all; then
  if [ "$(id -u)" = 0 ] || [ "${CI:-}" = true ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "chart-render: installing ${PACKAGES[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    # A fresh image has no package lists; update once, then install.
    $sudo apt-get install -y --no-install-recommends "${PACKAGES[@]}" >&2 ||
      { $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends "${PACKAGES[@]}" >&2; }
  fi
  if ! have_all; then
    echo "chart-render: needs the Debian packages ${PACKAGES[*]} (run as root or with CI=true to install them)" >&2
    exit 3
  fi
fi

target="${CARGO_TARGET_DIR:-$PWD/target}/chart-render"
mkdir -p "$target"
src=scripts/chart-render/main.go
sum=$(sha256sum "$src" | cut -c1-16)
bin="$target/chart-render-$sum"
if [ ! -x "$bin" ]; then
  # Debian's Go libraries live in a GOPATH; no module proxy is involved.
  GO111MODULE=off GOPATH="$GOPATH_DEBIAN" GOCACHE="$target/gocache" \
    go build -o "$bin.tmp" "./$src" >&2
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
