#!/usr/bin/env python3
"""Prints the policy table of `berth simulate --federation ... --json FILE` as
Markdown (docs/results/federation.md).

  python3 scripts/federation-table.py out/federation-1x.json
"""
import json
import sys


def main():
    for path in sys.argv[1:]:
        rows = json.load(open(path))
        print(f"| policy | JCT mean (s) | JCT p99 (s) | queue mean (s) | moved (TB) | egress ($) | GPU cost ($) "
              f"| deadline misses | double promises | re-dispatches | finished / lost | utilization A / B / C |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            util = " / ".join(f"{100 * c['utilization']:.1f} %" for c in r["clusters"])
            print(f"| {r['policy']} | {r['jct_mean_s']:,.0f} | {r['jct_p99_s']:,.0f} | {r['queue_delay_mean_s']:,.1f} "
                  f"| {r['cross_region_bytes'] / 1e12:,.1f} | {r['egress_cost']:,.0f} | {r['gpu_cost']:,.0f} "
                  f"| {r['deadline_misses']:,} | {r['double_promises']:,} | {r['redispatches']:,} "
                  f"| {r['jobs_finished']:,} / {r['jobs_lost']:,} | {util} |")
        print()


if __name__ == "__main__":
    main()
