#!/usr/bin/env python3
"""Prints the median of each criterion benchmark under the given groups as a Markdown table.

Usage: benches/medians.py [CRITERION_DIR] GROUP...
CRITERION_DIR defaults to $CARGO_TARGET_DIR/criterion (else target/criterion). The median is
criterion's median of the per-iteration sample times (`new/estimates.json`); with an element
throughput, the table also gives ns per element and elements per second at that median.
"""
import json
import os
import re
import sys


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.1f} ns"


def main(argv):
    args = argv[1:]
    if args and os.path.isdir(args[0]) and not os.path.isdir(os.path.join(default_dir(), args[0])):
        root, groups = args[0], args[1:]
    else:
        root, groups = default_dir(), args
    print("| benchmark | median / iter | elements | ns / element | elements / s |")
    print("|---|---:|---:|---:|---:|")
    for group in groups:
        rows = []
        for dirpath, _, files in os.walk(os.path.join(root, group)):
            if os.path.basename(dirpath) != "new" or "estimates.json" not in files:
                continue
            with open(os.path.join(dirpath, "estimates.json")) as f:
                median = json.load(f)["median"]["point_estimate"]
            with open(os.path.join(dirpath, "benchmark.json")) as f:
                bench = json.load(f)
            elements = (bench.get("throughput") or {}).get("Elements")
            per = f"{median / elements:.1f}" if elements else ""
            rate = f"{elements / median * 1e9:,.0f}" if elements else ""
            rows.append((bench["full_id"], f"| {bench['full_id']} | {fmt_ns(median)} | {elements or ''} | {per} | {rate} |"))
        for _, row in sorted(rows, key=lambda r: natural_key(r[0])):
            print(row)


def natural_key(name):
    """Sorts `threads2/500` before `threads2/1000`."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def default_dir():
    return os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")


if __name__ == "__main__":
    main(sys.argv)
