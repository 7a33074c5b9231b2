#!/usr/bin/env bash
# A check of bench/run_gpu.sh that needs no GPU (ctest run_gpu_report): its report step over tables kept in
# bench/results, as a run split over invocations leaves them in OUT_DIR. The report must set each tilefuse
# row beside the peers of its shape, list the steps with their start times, name a step an earlier
# invocation failed (and exit non-zero), and drop that failure once the step runs again.
#   bash bench/test_run_gpu.sh BUILD_DIR   (the build folder that holds bench/tilefuse_plot)
set -euo pipefail
# run_gpu.sh's settings from the environment that runs the tests (its own STEPS reach ctest) would change
# what it does: the test sets its own (BUILD on every call).
unset STEPS SANITIZE SWEEP SWEEP_PEERS PEAK_TFLOPS TREE BENCH_ARGS
build=$(cd "${1:?usage: test_run_gpu.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "test_run_gpu: $*"; cat "$out/log"; exit 1; }
cp "$src/bench/results/2026-11-30-h200-938c3e7-bench.md" "$out/bench_table.md"
cp "$src/bench/results/2026-11-30-h200-938c3e7-peers-matrix.txt" "$out/peers_matrix.txt"
printf 'name, driver_version, clocks.sm [MHz], clocks.mem [MHz]\nNVIDIA H200, 580.159.04, 1980 MHz, 3201 MHz\n' > "$out/device.txt"
echo "100% tests passed, 0 tests failed out of 1" > "$out/ctest.log"
echo sweep > "$out/failed_steps"  # as an earlier invocation's failed sweep leaves it
cd "$src"
BUILD=$build STEPS=report bash bench/run_gpu.sh "$out" > "$out/log" 2>&1 && fail "exit 0 with a failed step"
report="$out/$(date -u +%F)-h200.md"
[ -f "$report" ] || fail "no report $report"
grep -q '^\*\*Failed steps:\*\* sweep$' "$report" || fail "the report does not name the failed sweep"
grep -q '^- report: ' "$report" || fail "the report does not list its steps"
grep -q '^- 100% tests passed' "$report" || fail "the report does not give the tests"
grep -q 'B8 H16 N2048 D64 | bf16 | tilefuse fused (online softmax) | 454.37 |' "$report" || fail "no row beside its peers"
# The sweep run again (SWEEP=0: nothing to time) clears its failure.
BUILD=$build STEPS="sweep report" SWEEP=0 bash bench/run_gpu.sh "$out" > "$out/log" 2>&1 || fail "exit non-zero once the sweep ran again"
grep -q 'Failed steps' "$report" && fail "the cleared failure is still reported"
echo "run_gpu.sh report: ok"
