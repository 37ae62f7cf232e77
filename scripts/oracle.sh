#!/usr/bin/env bash
# Builds the oracle (the real kube-scheduler v1.37.2 behind a small CLI) into oracle/bin/schedperf-oracle.
# Idempotent; works offline once the Go modules are cached. Progress goes to stderr; the last stdout line is
# the binary's absolute path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/oracle"
# The machines' Go lives in /usr/local/go/bin, which a non-login shell may lack.
export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null 2>&1; then
  echo "oracle.sh: go is not on PATH (Go >= 1.26 is needed)" >&2
  exit 2
fi
mkdir -p bin
echo "oracle.sh: building schedperf-oracle with $(go version) (the first build takes several minutes)" >&2
start=$(date +%s)
go build -trimpath -o bin/schedperf-oracle . >&2
echo "oracle.sh: built in $(( $(date +%s) - start ))s" >&2
echo "$root/oracle/bin/schedperf-oracle"
