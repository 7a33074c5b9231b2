#!/usr/bin/env bash
# Everything the GPU machine runs in one go: build, all test tiers, compute-sanitizer over the device tier
# and the examples, the examples, the benchmark table, the shape sweep and the plots, (when given) an
# outside peers script, the row peers (bench/peers_rows.py, whose Triton kernels are then timed again from
# their CUBINs inside tilefuse_bench) and the matrix peers (bench/peers_matrix.py),
# so that every ratio comes from one run on one machine; then OUT_DIR/<date>-<gpu>.md, the run's report
# (tests, sanitizers, each kernel's table against the peers, the sweep, the plots, every row).
#   bash bench/run_gpu.sh OUT_DIR [peers.py]
# Environment:
#   STEPS     the steps to run, in this order (default all): build test sanitize examples bench sweep peers
#             report. A run split over several invocations with the same OUT_DIR and BUILD (each step
#             keeps its results there) writes the same report as one invocation; every step but build
#             needs build's binaries.
#   BUILD     the build folder (default build-gpu).
#   SANITIZE=0 skips the sanitize step; SWEEP=N the sweep's shapes (default 60; 0 skips it);
#   SWEEP_PEERS=0 times the row peers on the bench table's shapes only, not on the sweep's;
#   PEAK_TFLOPS the roofline's tensor-core ceiling (default 989, the H200's dense f16/bf16 rate);
#   TREE the commit the report names (default: git rev-parse of the checkout, for copies without .git);
#   BENCH_ARGS more arguments for every tilefuse_bench run (tuning flags: the report names them).
set -uo pipefail
out=${1:?usage: run_gpu.sh OUT_DIR [peers.py]}
peers=${2:-}
build=${BUILD:-build-gpu}
[[ "$build" == /* ]] || build=$PWD/$build
steps=" ${STEPS:-build test sanitize examples bench sweep peers report} "
mkdir -p "$out"
export TILEFUSE_CACHE_DIR=$build/kernel-cache
status=0
current=
# Whether step $1 runs; when it does, notes when it started in OUT/steps.txt (the report lists them) and
# clears an earlier invocation's failure of it from OUT/failed_steps.
step() {
  [[ "$steps" == *" $1 "* ]] || return 1
  current=$1
  echo "$1: $(date -u '+%F %H:%M:%S UTC')" >> "$out/steps.txt"
  [ -f "$out/failed_steps" ] && sed -i "/^$1\$/d" "$out/failed_steps"
  return 0
}
# Marks the current step failed (the report names it) and the exit status non-zero.
failed() {
  status=1
  grep -qx "$current" "$out/failed_steps" 2>/dev/null || echo "$current" >> "$out/failed_steps"
}
[ -f "$out/device.txt" ] || { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; date -u; } > "$out/device.txt" 2>&1
cat "$out/device.txt"
if step build; then
  # LibTorch (for examples/torch_tensors) from the Python package when there is one; the DLPack header
  # from $DLPACK_INCLUDE_DIR when the system has none (Debian/Ubuntu: libdlpack-dev).
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${torch_prefix:+-DCMAKE_PREFIX_PATH=$torch_prefix} \
    ${DLPACK_INCLUDE_DIR:+-DTILEFUSE_DLPACK_INCLUDE_DIR=$DLPACK_INCLUDE_DIR} > "$out/build.log" 2>&1 &&
    cmake --build "$build" -j 16 >> "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; failed; exit 1; }
  echo "== build ok"
fi
if step test; then
  ctest --test-dir "$build" --output-on-failure -j 4 -E "bench_smoke|example_softmax" > "$out/ctest.log" 2>&1 || failed
  grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | tail -25
  ctest --test-dir "$build" --output-on-failure -R "bench_smoke|example_softmax" >> "$out/ctest.log" 2>&1 || failed
  grep -E "^[0-9]+% tests" "$out/ctest.log"
fi
# compute-sanitizer (memcheck, racecheck, synccheck) over the device tier and the examples: bench/sanitize_gpu.sh
# (racecheck of the attention tests takes minutes).
if step sanitize && [ "${SANITIZE:-1}" != 0 ]; then
  bash bench/sanitize_gpu.sh "$build" "$out/sanitizers" > "$out/sanitizers.log" 2>&1 || failed
  cat "$out/sanitizers/sanitizers.md"
fi
if step examples; then
  "$build/softmax" 2>&1 | tee "$out/example_softmax.txt" || failed
  "$build/softmax" --dtype bf16 --rows 16384 2>&1 | tee -a "$out/example_softmax.txt" || failed
  "$build/fused_epilogue" 2>&1 | tee -a "$out/example_softmax.txt" || failed
  "$build/attention" --batch 4 --heads 32 --seq 4096 2>&1 | tee "$out/example_matrix.txt" || failed
  "$build/matmul" 2>&1 | tee -a "$out/example_matrix.txt" || failed
fi
if step bench; then
  "$build/bench/tilefuse_bench" ${BENCH_ARGS:-} --table "$out/bench_table.md" > "$out/bench.log" 2>&1 || { failed; tail -20 "$out/bench.log"; }
  cat "$out/bench_table.md"
  # The roofline of this run's table: the copy rows' bandwidth and the tensor-core peak.
  "$build/bench/tilefuse_plot" roofline "$out/bench_table.md" "$out/roofline.png" --peak-tflops "${PEAK_TFLOPS:-989}" || failed
fi
# The shape sweep (bench/sweep.cpp): SWEEP generated shapes through the automatic choice.
if step sweep && [ "${SWEEP:-60}" != 0 ]; then
  "$build/bench/tilefuse_bench" ${BENCH_ARGS:-} --sweep "${SWEEP:-60}" --benchmark_filter=sweep --table "$out/sweep_table.md" > "$out/sweep.log" 2>&1 ||
    { failed; tail -20 "$out/sweep.log"; }
  grep "^sweep " "$out/sweep.log"
  "$build/bench/tilefuse_plot" sweep "$out/sweep_table.md" "$out/sweep.png" || failed
fi
if step peers; then
  if [ -n "$peers" ]; then
    PYTHONUNBUFFERED=1 OUT=$out timeout 300 python3 "$peers" > "$out/peers.txt" 2>&1 || echo "peers failed: see peers.txt"
    grep -vi warn "$out/peers.txt" | head -60
  fi
  # The project's own row-kernel peers (torch, torch.compile, Triton one program per row) on the shapes of
  # this run's tables.
  sweep_shapes=$([ "${SWEEP_PEERS:-1}" != 0 ] && [ -f "$out/sweep_table.md" ] && echo "$out/sweep_table.md")
  rm -rf "$out/cubins"
  PYTHONUNBUFFERED=1 OUT=$out CUBINS=$out/cubins timeout 900 python3 bench/peers_rows.py "$out/bench_table.md" $sweep_shapes \
    > "$out/peers_rows.txt" 2>&1 || echo "row peers failed: see peers_rows.txt"
  grep -vi warn "$out/peers_rows.txt" | head -40
  # The Triton row kernels just timed, loaded from their CUBINs into tilefuse_bench and timed beside ours on
  # the same buffers with the same bursts (bench/peer_cubins.hpp): the kernels alone, without the two
  # processes' launch paths and allocations.
  if [ -f "$out/cubins/manifest.txt" ]; then
    "$build/bench/tilefuse_bench" ${BENCH_ARGS:-} --benchmark_filter='^(softmax|layernorm)/' --peer-cubins "$out/cubins/manifest.txt" \
      --table "$out/same_harness.md" > "$out/same_harness.log" 2>&1 || { failed; tail -20 "$out/same_harness.log"; }
    grep -E "tilefuse fused|tilefuse one_program|CUBIN" "$out/same_harness.md"
  fi
  PYTHONUNBUFFERED=1 OUT=$out timeout 300 python3 bench/peers_matrix.py > "$out/peers_matrix.txt" 2>&1 || echo "matrix peers failed: see peers_matrix.txt"
  grep -vi warn "$out/peers_matrix.txt" | head -40
fi
step report || exit $status
# Each tilefuse row beside the peers of its shape, and the speedup over the best (tilefuse_plot compare).
peer_files=$(for f in peers_rows.txt peers_matrix.txt; do [ -f "$out/$f" ] && echo "$out/$f"; done)
"$build/bench/tilefuse_plot" compare "$out/bench_table.md" $peer_files > "$out/compare.md" || failed
if [ -f "$out/sweep_table.md" ] && [ -f "$out/peers_rows.txt" ]; then
  "$build/bench/tilefuse_plot" compare "$out/sweep_table.md" "$out/peers_rows.txt" > "$out/compare_sweep.md" || failed
fi
# The run's report: OUT/<date>-<gpu>.md (for bench/results/), with the plots beside it.
gpu=$(sed -n 2p "$out/device.txt" | cut -d, -f1 | tr 'A-Z' 'a-z' | sed 's/^nvidia //; s/[^a-z0-9]\+/-/g; s/-$//')
report="$out/$(date -u +%F)-${gpu:-gpu}.md"
{
  echo "# tilefuse on $(head -2 "$out/device.txt" | tail -1), $(date -u '+%F %H:%M UTC'), tree ${TREE:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}${BENCH_ARGS:+, tilefuse_bench $BENCH_ARGS}"
  echo
  echo "Every figure below comes from this one run (bench/run_gpu.sh): medians of CUDA-event-timed runs, inputs"
  echo "rotated past the L2, the device copy of the same bytes timed in the same process; peers in the same run."
  echo "Steps, as they started:"
  echo
  sed 's/^/- /' "$out/steps.txt"
  if [ -s "$out/failed_steps" ]; then
    echo
    echo "**Failed steps:** $(paste -sd, "$out/failed_steps" | sed 's/,/, /g')"
  fi
  echo
  echo "## Tests"
  echo
  grep -E "^[0-9]+% tests" "$out/ctest.log" | sed 's/^/- /'
  [ -f "$out/sanitizers/sanitizers.md" ] && { echo; echo "compute-sanitizer over the device tier and the examples:"; echo; cat "$out/sanitizers/sanitizers.md"; }
  echo
  echo "## Against the peers"
  echo
  cat "$out/compare.md"
  if [ -f "$out/same_harness.md" ]; then
    echo "### The Triton row kernels in tilefuse's harness"
    echo
    echo "Each Triton kernel above, loaded from its CUBIN and timed by tilefuse_bench beside ours on the same buffers:"
    echo
    sed -n '/^| kernel/,/^|---/p' "$out/same_harness.md" | head -2
    grep -E "tilefuse fused|tilefuse one_program|CUBIN" "$out/same_harness.md"
    echo
  fi
  if [ -f "$out/sweep_table.md" ]; then
    echo "## The shape sweep"
    echo
    grep "^sweep " "$out/sweep.log" | sed 's/^/- /'
    echo
    echo "![x copy over the sweep](sweep.png)"
    echo
    [ -f "$out/compare_sweep.md" ] && cat "$out/compare_sweep.md"
  fi
  echo "## Roofline"
  echo
  echo "![roofline](roofline.png)"
  echo
  echo "## Every row"
  echo
  cat "$out/bench_table.md"
} > "$report"
echo "== report: $report"
[ -s "$out/failed_steps" ] && { echo "failed steps: $(paste -sd' ' "$out/failed_steps")"; status=1; }
exit $status
