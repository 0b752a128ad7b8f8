#!/usr/bin/env bash
# The test bed: a real etcd, kube-apiserver, kube-controller-manager (its
# garbage collector and namespace controller; the volume binder where a test
# asks), kubectl, helm and the shoot's csi-snapshot-controller, built from
# their Go modules (pinned in scripts/testbed/*/go.mod and go.sum) into a
# per-machine cache, and a shell with them running in a network namespace.
#
#   scripts/testbed.sh build   # build what is missing; print the bin directory
#   scripts/testbed.sh shell [--shoot]
#                              # a bash in a network namespace with only loopback,
#                              # etcd + kube-apiserver running (a second one, the
#                              # shoot, with --shoot), KUBECONFIG set, kubectl and
#                              # helm on PATH; exit the shell to stop everything
#
# Cache: ${SCION_TESTBED_CACHE:-$HOME/.cache/scion-testbed}/<key>/bin, where
# <key> hashes this script, the pins (go.mod, go.sum) and `go version`: a
# changed pin builds into a new directory, an unchanged one is never rebuilt.
# Two callers at once wait for each other on a lock (flock). The only network
# used is the Go module proxy (GOPROXY as configured), and only on a build.
#
# A cold build of all six on 2 cores takes minutes (kube-apiserver dominates;
# docs/testing.md has today's figure); a cached call returns in milliseconds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pins="$root/scripts/testbed"

need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "testbed: $1 is required ($2)" >&2
    exit 3
  }
}

# The cache key: everything that decides the binaries' bytes.
key() {
  need go "Go 1.26 builds the test bed from the Go module proxy"
  {
    sha256sum "$root/scripts/testbed.sh"
    (cd "$pins" && sha256sum */go.mod */go.sum)
    go version
  } | sha256sum | cut -c1-16
}

# module directory, package, output name
BUILDS=(
  "kubernetes k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver"
  "kubernetes k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager"
  "kubernetes k8s.io/kubernetes/cmd/kubectl kubectl"
  "etcd go.etcd.io/etcd/server/v3 etcd"
  "helm helm.sh/helm/v3/cmd/helm helm"
  "snapshotter github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller snapshot-controller"
)

# The version a release build stamps in (`kubectl version`, the API
# server's /version, helm's default Kubernetes version come from it).
version_flags() {
  local v
  case "$1" in
    kubernetes)
      v=$(cd "$pins/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
      local major=${v#v}; major=${major%%.*}
      local minor=${v#v*.}; minor=${minor%%.*}
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        printf -- "-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean " \
          "$p" "$v" "$p" "$major" "$p" "$minor" "$p"
      done
      ;;
    helm)
      v=$(cd "$pins/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
      printf -- "-X helm.sh/helm/v3/internal/version.version=%s" "$v"
      ;;
    snapshotter)
      v=$(cd "$pins/snapshotter" && go list -m -f '{{.Version}}' github.com/kubernetes-csi/external-snapshotter/v8)
      printf -- "-X main.version=%s" "$v"
      ;;
  esac
}

build() {
  need flock "util-linux: the build lock"
  local cache="${SCION_TESTBED_CACHE:-$HOME/.cache/scion-testbed}"
  local dir
  dir="$cache/$(key)"
  mkdir -p "$dir"
  if [ -f "$dir/complete" ]; then
    echo "$dir/bin"
    return
  fi
  exec 9>"$dir/lock"
  if ! flock -n 9; then
    echo "testbed: another build of $dir is running; waiting for it" >&2
    flock 9
  fi
  if [ ! -f "$dir/complete" ]; then
    mkdir -p "$dir/bin"
    local start=$SECONDS
    for b in "${BUILDS[@]}"; do
      read -r module pkg out <<<"$b"
      [ -x "$dir/bin/$out" ] && continue
      echo "testbed: building $out ($pkg, pinned in scripts/testbed/$module/go.mod)" >&2
      local t=$SECONDS
      # -mod=readonly: the committed go.sum is the whole truth; GOFLAGS of the
      # caller (e.g. -buildvcs=false) still apply. GOTOOLCHAIN=local: never
      # download a toolchain.
      (cd "$pins/$module" &&
        GOTOOLCHAIN=local go build -mod=readonly -ldflags="-s -w $(version_flags "$module")" \
          -o "$dir/bin/$out.tmp" "$pkg") >&2 || {
        echo "testbed: building $out failed (see above); the Go module proxy must be reachable for the first build" >&2
        exit 1
      }
      mv "$dir/bin/$out.tmp" "$dir/bin/$out"
      echo "testbed: $out built in $((SECONDS - t)) s" >&2
    done
    echo "$((SECONDS - start))" >"$dir/build-seconds"
    touch "$dir/complete"
  fi
  echo "$dir/bin"
}

shell() {
  need unshare "util-linux: the network namespace"
  need ip "iproute2: bringing up loopback in the namespace"
  local bin
  bin="$(build)"
  # Everything the shell needs from outside (crates, the example) before the
  # namespace cuts the network.
  (cd "$root" && cargo build --locked --example testbed --bin scion >&2)
  local flags=(--net)
  [ "$(id -u)" = 0 ] || flags=(--map-root-user --net)
  exec unshare "${flags[@]}" -- bash -c '
    set -euo pipefail
    ip link set lo up
    state="$(mktemp -d)"
    "$0/debug/examples/testbed" --state "$state" "${@}" &
    bed=$!
    trap "kill $bed 2>/dev/null; wait $bed 2>/dev/null; rm -rf \"$state\"" EXIT
    for _ in $(seq 1 900); do
      [ -f "$state/env" ] && break
      kill -0 $bed 2>/dev/null || { echo "testbed: the test bed did not start" >&2; exit 1; }
      sleep 0.2
    done
    [ -f "$state/env" ] || { echo "testbed: not ready after 180 s" >&2; exit 1; }
    cat "$state/env"
    bash --rcfile <(cat ~/.bashrc 2>/dev/null; cat "$state/env"; echo "PS1=\"(testbed) \$PS1\"") -i
  ' "${CARGO_TARGET_DIR:-$root/target}" "$@"
}

case "${1:-}" in
  build) build ;;
  shell) shift; shell "$@" ;;
  key) key ;;
  *)
    sed -n '2,20p' "$0" >&2
    exit 2
    ;;
esac
