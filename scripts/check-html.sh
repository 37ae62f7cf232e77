#!/usr/bin/env bash
# Loads a schedperf report.html in headless Chromium and checks that it ran its inline script
# without errors and drew every chart.
#
# Usage: scripts/check-html.sh [--allow-no-data] [--screenshot OUT.png] FILE.html
#
# The page's inline script sets data-charts (number of charts), data-charts-drawn (charts with
# drawn marks) and, on any script error, data-js-errors on <body>, and data-drawn="1" on each
# drawn <svg data-chart>. This script dumps the DOM after load and checks those attributes:
# no script error, and every chart drawn (with --allow-no-data, a chart may instead say "no data").
# Installs Debian's chromium when it is missing (needs root and the package registry).
set -euo pipefail

allow_no_data=0
screenshot=""
file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --allow-no-data) allow_no_data=1 ;;
    --screenshot) screenshot="$2"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) file="$1" ;;
  esac
  shift
done
if [ -z "$file" ] || [ ! -f "$file" ]; then
  echo "check-html: usage: $0 [--allow-no-data] [--screenshot OUT.png] FILE.html" >&2
  exit 2
fi

browser=""
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
  echo "check-html: installing chromium" >&2
  if ! apt-get install -y chromium >/dev/null 2>&1; then
    apt-get update >/dev/null && apt-get install -y chromium >/dev/null
  fi
  browser=chromium
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
url="file://$(cd "$(dirname "$file")" && pwd)/$(basename "$file")"
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
  --disable-sync --no-first-run --disable-dev-shm-usage --enable-logging=stderr --v=0
  --user-data-dir="$work/profile")

timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" >"$work/dom.html" 2>"$work/stderr.log" || {
  echo "check-html: chromium failed on $file:" >&2
  tail -20 "$work/stderr.log" >&2
  exit 1
}

fail=0
err() { echo "check-html: $*" >&2; fail=1; }

# Console errors from the page itself (Chromium logs them as CONSOLE lines with Uncaught ...).
if grep -E "Uncaught|CONSOLE\(.*(Error|Refused)" "$work/stderr.log" >"$work/console.log"; then
  err "script errors or blocked loads in the console:"
  cat "$work/console.log" >&2
fi
if grep -q 'data-js-errors=' "$work/dom.html"; then
  err "the page recorded a script error: $(grep -o 'data-js-error-message="[^"]*"' "$work/dom.html")"
fi
charts=$(grep -o '<body[^>]*data-charts="[0-9]*"' "$work/dom.html" | grep -o '[0-9]*"$' | tr -d '"' || true)
drawn=$(grep -o '<body[^>]*data-charts-drawn="[0-9]*"' "$work/dom.html" | grep -o '[0-9]*"$' | tr -d '"' || true)
if [ -z "$charts" ] || [ -z "$drawn" ]; then
  err "the inline script did not finish (no data-charts/data-charts-drawn on <body>)"
else
  echo "check-html: $drawn of $charts charts drawn"
fi
for kind in throughput latency plugins utilization; do
  tag=$(grep -o "<svg[^>]*data-chart=\"$kind\"[^>]*>" "$work/dom.html" || true)
  if [ -z "$tag" ]; then
    err "no <svg data-chart=\"$kind\">"
  elif ! grep -q 'data-drawn="1"' <<<"$tag"; then
    if [ "$allow_no_data" = 1 ] && grep -A3 -F "$tag" "$work/dom.html" | grep -q '>no data</text>'; then
      echo "check-html: chart $kind says no data"
    else
      err "chart $kind has no drawn marks"
    fi
  fi
done

if [ -n "$screenshot" ]; then
  timeout 120 "$browser" "${flags[@]}" --hide-scrollbars --window-size=1400,2600 \
    --screenshot="$screenshot" "$url" >/dev/null 2>>"$work/stderr.log" || err "screenshot failed"
  [ -s "$screenshot" ] && echo "check-html: screenshot $screenshot"
fi

if [ "$fail" = 0 ]; then
  echo "check-html: OK $file"
fi
exit "$fail"
