#!/usr/bin/env bash
# The main job: install, build, and run the simulator on the shipped openb trace
# and cluster (Alibaba GPU trace 2023, FGD protocol, seed 42), comparing the
# baseline policies. Prints a summary; writes out/openb.json and out/openb.html.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
DATA="${BERTH_DATA_DIR:-../shared/data}"
mkdir -p out
./build/release/apps/berth/berth simulate \
  --cluster "$DATA/alibaba-gpu-v2023/openb_node_list_gpu_node.csv" \
  --trace "$DATA/alibaba-gpu-v2023/openb_pod_list_default.csv" \
  --mode fgd --load 1.3 --seed 42 \
  --policy "${BERTH_POLICIES:-random,firstfit,bestfit,dotprod,gpupacking,gpuclustering,fgd,berth-frag}" \
  --json out/openb.json --report out/openb.html
echo "report: out/openb.html"
