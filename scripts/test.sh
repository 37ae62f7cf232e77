#!/usr/bin/env bash
# The whole test suite, on a fresh machine (run as root: it installs Debian packages).
#
#   scripts/test.sh
#
# 1. Installs what the tests need and no build needs: containerd, runc, CNI plugins and
#    busybox-static (by scripts/cri-env.sh), chromium (the HTML report check).
# 2. Starts a private containerd (scripts/cri-env.sh) and takes it down at the end, always.
# 3. Runs every test, the ignored ones included (CRI runtime tests, the headless-browser check), so
#    nothing is skipped: `cargo test --release -- --include-ignored`.
# 4. Runs the loom models of the lock-free assume cache (`--cfg schedperf_loom`, own target dir).
# 5. Builds the oracle first (scripts/oracle.sh: the real kube-scheduler v1.37.2; its module download
#    also brings upstream's scheduler_perf files that tests/upstream_suites.rs runs) and checks
#    decisions against it at the end (scripts/verify.sh).
set -euo pipefail
# runc, ip and friends live in the sbin directories, which a non-login root shell may not have.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null 2>&1; then
  echo "== installing valgrind (run --measure instructions)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends valgrind >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends valgrind >/dev/null; }
fi
export SCHEDPERF_REQUIRE_VALGRIND=1

echo "== building the oracle (scripts/oracle.sh)" >&2
# The ignored test of `compare --upstream` on the real kube-scheduler reads the binary from here.
SCHEDPERF_ORACLE=$(scripts/oracle.sh | tail -1)
export SCHEDPERF_ORACLE

if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing chromium (HTML report check)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null; }
fi

dir=$(mktemp -d /tmp/schedperf-test-cri.XXXXXX)
teardown() {
  local rc=$?
  scripts/cri-env.sh "$dir" down >/dev/null 2>&1 || true
  rm -rf --one-file-system "$dir" || true
  rm -f "$dir.env"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# `eval "$(cri-env.sh up)"` would go on with an empty environment when `up` fails (the status of a
# command substitution inside eval is lost), and every CRI test would then fail with "CRI_ENDPOINT is
# not set". So: the KEY=VALUE lines go to a file, a failed `up` is retried once after `down`, and a
# second failure stops here with containerd's log.
cri_up() {
  local attempt
  for attempt in 1 2; do
    echo "== containerd up in $dir (attempt $attempt)" >&2
    if scripts/cri-env.sh "$dir" up >"$dir.env"; then
      return 0
    fi
    echo "== scripts/cri-env.sh $dir up failed; containerd log:" >&2
    tail -n 40 "$dir/containerd.log" >&2 2>/dev/null || true
    scripts/cri-env.sh "$dir" down >&2 || true
  done
  echo "error: could not start containerd for the CRI tests (scripts/cri-env.sh $dir up failed twice)" >&2
  return 1
}
cri_up
# shellcheck disable=SC1090
source "$dir.env"
rm -f "$dir.env"
: "${CRI_ENDPOINT:?scripts/cri-env.sh up printed no CRI_ENDPOINT}" "${CRI_TEST_IMAGE:?}" "${CRI_SANDBOX_IMAGE:?}"
export CRI_ENDPOINT CRI_TEST_IMAGE CRI_SANDBOX_IMAGE
echo "== CRI_ENDPOINT=$CRI_ENDPOINT CRI_TEST_IMAGE=$CRI_TEST_IMAGE" >&2

echo "== cargo test --release -- --include-ignored" >&2
cargo test --release -- --include-ignored --test-threads 2

echo "== loom models of the assume cache" >&2
RUSTFLAGS="--cfg schedperf_loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" cargo test --release --lib cache::

echo "== the converter of upstream's scheduler_perf DataItems (scripts/upstream_report_test.py)" >&2
# Only the conversion: running upstream behind kube-apiserver and etcd (scripts/upstream-apiserver.sh)
# takes minutes per workload and is not part of the suite.
python3 scripts/upstream_report_test.py

echo "== decisions against the oracle (scripts/verify.sh)" >&2
scripts/verify.sh target/release/schedperf
