#!/usr/bin/env bash
# The CRI part of CI: a private containerd (scripts/cri-env.sh) in a temporary directory, the CRI
# agent's tests against it (the ignored runtime tests included), and the teardown, always.
#
# Called from .ci/run as `bash .ci/cri-part.sh`; honours CARGO_TARGET_DIR. Exits with the tests'
# status. Needs root (CI runs as root); installs containerd, runc, CNI plugins and busybox-static
# with apt-get when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d /tmp/schedperf-ci-cri.XXXXXX)
teardown() {
  local rc=$?
  scripts/cri-env.sh "$dir" down || rc=1
  rm -rf --one-file-system "$dir" || true
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

echo "== cri: containerd up in $dir"
eval "$(scripts/cri-env.sh "$dir" up)"
echo "== cri: endpoint $CRI_ENDPOINT, test image $CRI_TEST_IMAGE ($(nproc) cores)"
# The measurement test prints its latency table; --nocapture shows it in the CI log.
cargo test --release --lib agent::cri -- --include-ignored --test-threads 2 --nocapture
# The CRI agent wired into `schedperf run` and `schedperf cri check` (the ignored tests of the CLI
# binary that need CRI_ENDPOINT); they take the runtime one at a time.
cargo test --release --test cli cri -- --include-ignored --nocapture
