#!/usr/bin/env bash
# Tuning sweep of the row kernels' knobs on the GPU machine (after run_gpu.sh has built build-gpu):
# the kernel rows of one table per setting of the bench's --row-elements x --resident-threads flags
# (kernels::Tuning), all in OUT_DIR/sweep.md, and (with SWEEP_NCU=1) an ncu profile of the bf16 LayerNorm
# at 8192 columns.
#   bash bench/sweep_rows.sh OUT_DIR [benchmark_filter]
set -uo pipefail
out=${1:?usage: sweep_rows.sh OUT_DIR [filter]}
filter=${2:-'layernorm|rmsnorm|softmax/'}
mkdir -p "$out"
tmp=$(mktemp)
export TILEFUSE_CACHE_DIR=$PWD/build-gpu/kernel-cache
for elements in ${SWEEP_ELEMENTS:-8 16 32}; do
  for resident in ${SWEEP_RESIDENT:-0 1536 2048}; do
    ./build-gpu/bench/tilefuse_bench --row-elements "$elements" --resident-threads "$resident" \
      --benchmark_filter="$filter" --table "$tmp" > /dev/null 2>&1 || echo "sweep e=$elements r=$resident failed"
    { echo "== --row-elements $elements --resident-threads $resident"
      grep -vE "^\| (copy|host)" "$tmp" | grep -E "^\| [a-z]" ; } | tee -a "$out/sweep.md" | awk -F'|' '{print $2,$4,$5,$6,$8}'
  done
done
rm -f "$tmp"
if [ "${SWEEP_NCU:-0}" = 1 ] && command -v ncu > /dev/null; then
  timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis -k regex:layernorm_8192 -c 1 \
    ./build-gpu/bench/tilefuse_bench --benchmark_filter='layernorm/8192' > "$out/ncu-layernorm-bf16-8192.txt" 2>&1 ||
    echo "ncu failed: see ncu-layernorm-bf16-8192.txt"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Warp Cycles Per Issued" \
    "$out/ncu-layernorm-bf16-8192.txt" | head -30
fi
