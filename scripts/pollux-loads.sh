#!/usr/bin/env bash
# Replays Pollux's 8 workloads at each job load with the goodput and tiresias
# policies on 16 x 4 GPUs and prints the mean over workloads of the average
# JCT, beside Pollux's published figures (docs/results/pollux.md). A second run
# per workload uses tiresias-pollux with the 30 s restart cost of Pollux's
# simulator (--restore-cost 30s).
# Usage: scripts/pollux-loads.sh [OUT_DIR] [LOAD...]   (loads: 0.5 1.0 1.5 2.0)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${BERTH_DATA_DIR:-../shared/data}/pollux-philly"
OUT="${1:-out/pollux}"; shift || true
LOADS=("$@"); [ ${#LOADS[@]} -eq 0 ] && LOADS=(1.0 0.5 1.5 2.0)
BERTH=build/release/apps/berth/berth
mkdir -p "$OUT"
for load in "${LOADS[@]}"; do
  dir="$DATA/workloads"; [ "$load" != "1.0" ] && dir="$DATA/workloads-$load"
  for n in 1 2 3 4 5 6 7 8; do
    "$BERTH" simulate --cluster 16x4:V100 --trace "$dir/workload-$n.csv" --trace-format pollux --mode replay \
      --policy goodput,tiresias --json "$OUT/load-$load-w$n.json" > /dev/null
    "$BERTH" simulate --cluster 16x4:V100 --trace "$dir/workload-$n.csv" --trace-format pollux --mode replay \
      --policy tiresias-pollux --restore-cost 30s --json "$OUT/load-$load-w$n-tp.json" > /dev/null
  done
  python3 - "$OUT" "$load" "$DATA/results" <<'PY'
import json, sys
out, load, res = sys.argv[1], sys.argv[2], sys.argv[3]
mine = {}
for n in range(1, 9):
    for f in (f"{out}/load-{load}-w{n}.json", f"{out}/load-{load}-w{n}-tp.json"):
        for r in json.load(open(f)):
            mine.setdefault(r["policy"], []).append(r["jct_mean_s"])
pub = {p: json.load(open(f"{res}/results-jobload_{p}-{load}_summary.json"))["mean"] for p in ("pollux", "tiresias", "optimus")}
per = " ".join(f"{x:.0f}" for x in mine["goodput"])
print(f"load {load}: goodput {sum(mine['goodput'])/8:.0f} s, tiresias {sum(mine['tiresias'])/8:.0f} s, "
      f"tiresias-pollux {sum(mine['tiresias-pollux'])/8:.0f} s | "
      f"published Pollux {pub['pollux']:.0f}, Tiresias {pub['tiresias']:.0f}, Optimus {pub['optimus']:.0f} | goodput per workload: {per}")
PY
done
