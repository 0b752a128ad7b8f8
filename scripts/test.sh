#!/usr/bin/env bash
# The test command (README, .ci/run): everything `cargo test --locked` runs,
# with the end-to-end tests on a real etcd, kube-apiserver and helm (the test
# bed), in a network namespace whose only interface is loopback, so that no
# process of a test, the API servers included, can ever connect off this
# machine (docs/testing.md).
#
#   scripts/test.sh                       # all tests
#   scripts/test.sh --test mutation_e2e   # arguments go to cargo test
#
# Outside the namespace first, while the package registries are reachable:
# the crates (cargo fetch) and the test bed (scripts/testbed.sh build; the
# first build takes minutes, later runs find it in the cache). The namespace
# needs unshare and ip (util-linux, iproute2); as root it is a plain network
# namespace, otherwise a user namespace maps the caller to root in it.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fetch --locked
scripts/testbed.sh build >/dev/null

flags=(--net)
[ "$(id -u)" = 0 ] || flags=(--map-root-user --net)
exec unshare "${flags[@]}" -- bash -c 'ip link set lo up && exec cargo test --locked --offline "$@"' bash "$@"
