#!/usr/bin/env python3
"""Builds the scale workload from the Philly trace: every job with its GPUs and
duration, the trace's span mapped linearly onto DAYS days, the whole trace
replicated COPIES times (names suffixed -0 ... -<COPIES-1>), each copy's submit
times jittered by a uniform 0..JITTER seconds (seeded), sorted by submit time.
With the defaults (40 copies, 30 days) that is 3,289,880 jobs, about 54% of
100,000 GPUs offered over the 30 days.

Input is the trace in Berth's native format (JSON lines), so first:

  build/release/apps/berth/berth convert --trace ../shared/data/pollux-philly/philly.csv --out philly.jsonl
  scripts/philly-scale.py philly.jsonl philly-x40.jsonl                       # 3.29 M jobs
  scripts/philly-scale.py philly.jsonl philly-x40-100k.jsonl --max-jobs 100000  # its first 100,000
  scripts/philly-scale.py philly.jsonl queue-100k.jsonl --max-jobs 100000 \
      --hold-gpus 100000 --span 3600 --quantum 60   # 100,000 GPUs held for good, 100,000 jobs queue behind

The output is generated data: do not commit it. Ties in submit time keep copy
order, then the input's order, so the same arguments give the same file.
"""
import argparse
import json
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help="the Philly trace as native JSON lines (berth convert)")
    ap.add_argument("output", help="where to write the scaled workload (JSON lines)")
    ap.add_argument("--copies", type=int, default=40, help="replicas of the whole trace (default 40)")
    ap.add_argument("--days", type=float, default=30.0, help="span the trace is mapped onto (default 30)")
    ap.add_argument("--jitter", type=float, default=3600.0, help="max submit jitter per copy, seconds (default 3600)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the jitter (default 1)")
    ap.add_argument("--max-jobs", type=int, default=-1, help="write only the first N jobs by submit time")
    # A standing queue (the queue-length measurements of docs/results/benchmarks.md).
    ap.add_argument("--hold-gpus", type=int, default=0,
                    help="first write ceil(N/8) jobs of 8 GPUs (tenant 'hold') at t=0 that never end")
    ap.add_argument("--span", type=float, default=-1,
                    help="map the written jobs' submit times linearly onto [60, 60 + SPAN] seconds")
    ap.add_argument("--quantum", type=float, default=0,
                    help="round submit times down to multiples of Q seconds (fewer, larger arrival batches)")
    a = ap.parse_args()
    if a.copies < 1 or a.days <= 0 or a.jitter < 0 or a.hold_gpus < 0 or a.quantum < 0:
        sys.exit("philly-scale: --copies must be >= 1, --days > 0, --jitter, --hold-gpus and --quantum >= 0")

    jobs = []
    with open(a.input) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{a.input}:{lineno}: bad json: {e}")
            if not isinstance(j, dict) or "name" not in j or "groups" not in j:
                sys.exit(f"{a.input}:{lineno}: not a native job (needs name and groups)")
            jobs.append(j)
    if not jobs:
        sys.exit(f"{a.input}: no jobs")
    times = [float(j.get("submit_time_s", 0)) for j in jobs]
    t0, t1 = min(times), max(times)
    scale = a.days * 86400.0 / (t1 - t0) if t1 > t0 else 1.0

    rng = random.Random(a.seed)
    order = []  # (submit time, copy, index)
    for c in range(a.copies):
        for i, t in enumerate(times):
            order.append((round((t - t0) * scale + rng.uniform(0.0, a.jitter), 6), c, i))
    order.sort()
    if a.max_jobs >= 0:
        order = order[: a.max_jobs]

    if a.span >= 0 and order:
        first, last = order[0][0], order[-1][0]
        k = a.span / (last - first) if last > first else 0.0
        order = [(round(60.0 + (t - first) * k, 6), c, i) for t, c, i in order]
    if a.quantum > 0:
        order = [(float(int(t // a.quantum) * a.quantum), c, i) for t, c, i in order]

    with open(a.output, "w") as out:
        for h in range((a.hold_gpus + 7) // 8):
            hold = {"name": f"hold-{h}", "tenant": "hold", "submit_time_s": 0,
                    "groups": [{"name": "main", "count": 1, "gpus": 8}]}
            out.write(json.dumps(hold, separators=(",", ":")) + "\n")
        for t, c, i in order:
            j = dict(jobs[i])
            j["name"] = f"{j['name']}-{c}"
            j["submit_time_s"] = t
            out.write(json.dumps(j, separators=(",", ":")) + "\n")
    print(f"{len(order)} jobs from {len(jobs)} x {a.copies} over {a.days:g} days -> {a.output}")


if __name__ == "__main__":
    main()
