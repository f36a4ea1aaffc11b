#!/usr/bin/env bash
# Runs the FGD experiment (openb cluster, FGD protocol, load 1.3) for every
# shipped openb trace variant and seeds 42..51 under two policies (default:
# fgd and berth-frag) and prints, per variant, the mean final GPU allocation
# ratio of each, the published FGD mean (column 130 of
# fgd-expected-results/analysis_allo_discrete.csv, policy 06-FGD; "-" for
# variants the paper did not run), the paired difference, the number of seeds
# the candidate wins, and the mean fragmented GPU share (FGD's frag / capacity).
#
# Usage: scripts/eval-frag.sh [-j JOBS] [-s "SEEDS"] [-v "VARIANTS"]
#                             [-b BASELINE] [-c CANDIDATE] [-o OUTDIR]
#   -j  parallel simulator processes (default 1; the machine is shared)
#   -s  seeds (default "42 43 ... 51")
#   -v  variants (default: every openb_pod_list_*.csv shipped)
#   -b  baseline policy (default fgd), -c candidate policy (default berth-frag)
#   -o  keep the per-run JSON files in OUTDIR (default: a temporary folder)
# Needs only bash, awk and the berth binary (BERTH_BIN, default
# build/release/apps/berth/berth); data from BERTH_DATA_DIR (default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=1
SEEDS="42 43 44 45 46 47 48 49 50 51"
VARIANTS=""
BASE=fgd
CAND=berth-frag
OUT=""
while getopts "j:s:v:b:c:o:h" opt; do
  case "$opt" in
    j) JOBS="$OPTARG" ;;
    s) SEEDS="$OPTARG" ;;
    v) VARIANTS="$OPTARG" ;;
    b) BASE="$OPTARG" ;;
    c) CAND="$OPTARG" ;;
    o) OUT="$OPTARG" ;;
    *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done

BIN="${BERTH_BIN:-build/release/apps/berth/berth}"
DATA="${BERTH_DATA_DIR:-../shared/data}"
TRACES="$DATA/alibaba-gpu-v2023"
PUBLISHED="$DATA/fgd-expected-results/analysis_allo_discrete.csv"
[ -x "$BIN" ] || { echo "eval-frag: no berth binary at $BIN (build the 'berth' target)" >&2; exit 1; }
[ -d "$TRACES" ] || { echo "eval-frag: no data at $TRACES (set BERTH_DATA_DIR)" >&2; exit 1; }
if [ -z "$VARIANTS" ]; then
  # default first, then the rest in name order.
  VARIANTS="default"
  for f in "$TRACES"/openb_pod_list_*.csv; do
    v="$(basename "$f" .csv)"; v="${v#openb_pod_list_}"
    [ "$v" = default ] || VARIANTS="$VARIANTS $v"
  done
fi
if [ -z "$OUT" ]; then
  OUT="$(mktemp -d)"
  trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"

# One simulator process per (variant, seed), both policies in it.
run_one() {
  local v="$1" s="$2"
  "$BIN" simulate --cluster "$TRACES/openb_node_list_gpu_node.csv" --trace "$TRACES/openb_pod_list_$v.csv" \
    --mode fgd --load 1.3 --seed "$s" --policy "$BASE,$CAND" --quiet --json "$OUT/$v.$s.json" >/dev/null
}
export -f run_one
export BIN TRACES OUT BASE CAND
for v in $VARIANTS; do for s in $SEEDS; do echo "$v $s"; done; done |
  xargs -P "$JOBS" -n 2 bash -c 'run_one "$0" "$1"'

# variant seed policy alloc frag, one line per run and policy.
results() {
  for v in $VARIANTS; do for s in $SEEDS; do
    awk -v v="$v" -v s="$s" '
      /"fragmented_gpu_share":/ { gsub(/[",]/, "", $2); frag = $2 }
      /"gpu_allocation_ratio":/ { gsub(/[",]/, "", $2); alloc = $2 }
      /"policy":/ { gsub(/[",]/, "", $2); pol = $2 }
      /^  }/ { print v, s, pol, alloc, frag }' "$OUT/$v.$s.json"
  done; done
}

# Published FGD means (column 130 = field 136) for the seeds asked.
published() {
  awk -F, -v seeds="$SEEDS" '
    BEGIN { n = split(seeds, a, " "); for (i = 1; i <= n; ++i) want[a[i]] = 1 }
    $2 == "06-FGD" && ($4 in want) { w = $1; sub(/^openb_pod_list_/, "", w); sum[w] += $136; cnt[w]++ }
    END { for (w in sum) print "P", w, sum[w] / cnt[w] }' "$PUBLISHED"
}

{ published; results; } | awk -v base="$BASE" -v cand="$CAND" -v order="$VARIANTS" '
  $1 == "P" { pub[$2] = $3; next }
  {
    v = $1; s = $2
    if ($3 == base) { ab[v, s] = $4; fb[v] += $5 }
    else if ($3 == cand) { ac[v, s] = $4; fc[v] += $5 }
    seeds[v, s] = 1
  }
  END {
    printf "| variant | published FGD %% | %s %% | %s %% | %s - %s | %s - published | %s wins | frag %s %% | frag %s %% |\n", \
      base, cand, cand, base, cand, cand, base, cand
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    nv = split(order, vs, " ")
    for (i = 1; i <= nv; ++i) {
      v = vs[i]; n = 0; sb = 0; sc = 0; sd = 0; sdd = 0; wins = 0
      for (k in seeds) {
        split(k, kk, SUBSEP); if (kk[1] != v) continue
        d = 100 * (ac[k] - ab[k]); n++; sb += 100 * ab[k]; sc += 100 * ac[k]; sd += d; sdd += d * d
        if (d > 0) wins++
      }
      if (n == 0) continue
      mb = sb / n; mc = sc / n; md = sd / n
      p = (v in pub) ? sprintf("%.2f", pub[v]) : "-"
      dp = (v in pub) ? sprintf("%+.2f", mc - pub[v]) : "-"
      printf "| %s | %s | %.2f | %.2f | %+.2f | %s | %d/%d | %.2f | %.2f |\n", v, p, mb, mc, md, dp, wins, n, \
        100 * fb[v] / n, 100 * fc[v] / n
      tb += mb; tc += mc; tv++
    }
    if (tv > 1) printf "| **mean of %d variants** | | %.2f | %.2f | %+.2f | | | | |\n", tv, tb / tv, tc / tv, (tc - tb) / tv
  }'
