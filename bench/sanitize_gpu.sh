#!/usr/bin/env bash
# compute-sanitizer over the device tier and every GPU example, on the GPU machine: memcheck (out-of-bounds
# and misaligned accesses, leaks of device memory), racecheck (shared-memory hazards) and synccheck
# (barriers misused). The device tier runs in gtest shards side by side, each under the tool; a run is
# clean when every process reports zero errors and zero hazards and every test and example passes.
# Writes OUT_DIR/sanitizers.md (the table) and one log per process.
#   bash bench/sanitize_gpu.sh BUILD_DIR OUT_DIR [memcheck|racecheck|synccheck]...
# SANITIZE_LIMIT=S ends any one process after S seconds (default: no limit); a process so ended counts as
# failed and as cut in the table, so that a step that must fit a time budget still writes its row. Below
# the table, one line per failed process: its failed tests and the tool's first report (what, where).
# The tests that inject failing CUDA calls (an allocation beyond memory, rejected launches) make API
# errors on purpose, so API errors are not reported by the tool (--report-api-errors no): every other
# failing call throws and fails its test anyway.
set -uo pipefail
build=${1:?usage: sanitize_gpu.sh BUILD_DIR OUT_DIR [tool]...}
out=${2:?usage: sanitize_gpu.sh BUILD_DIR OUT_DIR [tool]...}
shift 2
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(memcheck racecheck synccheck)
shards=${SANITIZE_SHARDS:-16}
limit=${SANITIZE_LIMIT:-0}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
mkdir -p "$out"
export TILEFUSE_CACHE_DIR=${TILEFUSE_CACHE_DIR:-$PWD/$build/kernel-cache}
export TILEFUSE_TUNE_DIR=${TILEFUSE_TUNE_DIR:-$PWD/$build/tune-sanitize}  # the tune example keeps its choice here
# The examples at the sizes the test suite runs them (bench-sized runs add time, not coverage); attention
# smaller still: racecheck keeps host memory for every shared-memory access it tracks, and at batch 2,
# 4 heads, sequence 1000 one attention process reached 129 GB on the 128 GiB H200 machine even alone (the
# machine's kernel log, 2026-12-03). At the sizes below: 26 GB in 97 s and 9 GB in 26 s, 0 hazards; a
# sequence that is not a whole number of blocks and several key blocks keep every path of the kernels.
examples=(
  "quickstart"
  "softmax --rows 512 --cols 3000 --runs 3"
  "softmax --rows 512 --cols 1000 --dtype bf16 --runs 3"
  "device_memory --rows 500 --cols 3000"
  "fused_epilogue --rows 256 --cols 1000 --runs 3"
  "attention --batch 1 --heads 2 --seq 520 --runs 1"
  "attention --batch 1 --heads 2 --seq 333 --dim 64 --causal 1 --dtype f16 --runs 1"
  "matmul --m 1000 --n 1000 --k 1000 --runs 2"
  "tune --kernel softmax --rows 64 --cols 3001 --dtype bf16"
)
[ -x "$build/torch_tensors" ] && examples+=("torch_tensors")
summary="$out/sanitizers.md"
{
  echo "| tool | device-tier tests passed | examples passed | errors reported | wall | processes cut at the limit |"
  echo "|---|---:|---:|---:|---:|---:|"
} > "$summary"
details="$out/.details"
: > "$details"
# One line for the log $1 of a failed process: its name, the tests it failed, the tool's first report and
# where it was (the kernel and offset), or how the process ended; processes run side by side append
# one short line each.
detail() {
  local what where tests ended
  what=$(grep -m1 -E '^========= (Invalid|Barrier error|Error: Race|Race reported|Internal Sanitizer Error|[A-Z][a-z]+ (hazard|error) detected)' "$1" | sed 's/^========= //')
  where=$(grep -m1 -E '^=========     at ' "$1" | sed 's/^=========     at //')
  tests=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$1" | sed -E 's/^\[  FAILED  \] ([^ ]+).*/\1/' | sort -u | paste -sd ' ')
  ended=$(grep -m1 -E '^sanitize_gpu.sh: ' "$1" | sed 's/^sanitize_gpu.sh: //')
  echo "- $(basename "$1"): ${tests:+failed $tests; }${what:-no report}${where:+ at $where}${ended:+ ($ended)}" >> "$details"
}
# Runs "$@" under $tool (with its $extra options) into log $1. A process exits 99 when the tool reported
# something, else with the test binary's or example's status; a status other than 0 is written at the end
# of its log (a process killed from outside prints nothing), and one ended by SANITIZE_LIMIT says so.
run_logged() {
  local log=$1; shift
  local limiter=()
  [ "$limit" -gt 0 ] && limiter=(timeout -k 10 "$limit")
  "${limiter[@]}" "$cs" --tool "$tool" "${extra[@]}" --report-api-errors no --error-exitcode 99 "$@" > "$log" 2>&1
  local rc=$?
  if [ "$limit" -gt 0 ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then
    echo "sanitize_gpu.sh: cut at the limit of $limit s" >> "$log"
  elif [ $rc -ne 0 ]; then
    echo "sanitize_gpu.sh: exit status $rc" >> "$log"
  fi
  [ $rc -eq 0 ] || detail "$log"
  return $rc
}
# Example $1 of the list under $tool.
run_example() {
  local cmd
  read -r -a cmd <<< "${examples[$1]}"
  run_logged "$out/$tool-example-$1.log" "$build/${cmd[0]}" "${cmd[@]:1}"
}
status=0
for tool in "${tools[@]}"; do
  start=$(date +%s)
  extra=()
  [ "$tool" = racecheck ] && extra=(--racecheck-report all)
  # The shards first, then the examples: all of them at once under racecheck ran the 128 GiB H200 machine
  # out of host memory, and the kernel killed the attention examples before they printed anything.
  failed_procs=0 ex_ok=0 pids=()
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i run_logged "$out/$tool-device-$i.log" \
      "$build/tests/tilefuse_tests_device" --gtest_brief=1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed_procs=$((failed_procs + 1)); done
  # The attention examples one after another, beside the rest: under racecheck they hold tens of GB of
  # host memory each (above), so two at once need not fit.
  pids=() heavy=()
  for ((e = 0; e < ${#examples[@]}; ++e)); do
    [[ "${examples[$e]}" == "attention "* ]] && { heavy+=("$e"); continue; }
    run_example "$e" &
    pids+=($!)
  done
  for e in "${heavy[@]}"; do run_example "$e" && ex_ok=$((ex_ok + 1)) || failed_procs=$((failed_procs + 1)); done
  for p in "${pids[@]}"; do wait "$p" && ex_ok=$((ex_ok + 1)) || failed_procs=$((failed_procs + 1)); done
  passed=$(cat "$out/$tool"-device-*.log | grep -oE '^\[  PASSED  \] [0-9]+' | awk '{s += $4} END {print s + 0}')
  tests_failed=$(cat "$out/$tool"-device-*.log | grep -cE '^\[  FAILED  \]')
  errors=$(cat "$out/$tool"-*.log | grep -oE "ERROR SUMMARY: [0-9]+ error" | awk '{s += $3} END {print s + 0}')
  hazards=$(cat "$out/$tool"-*.log | grep -oE "RACECHECK SUMMARY: [0-9]+ hazard" | awk '{s += $3} END {print s + 0}')
  total=$((errors + hazards))
  cut=$(cat "$out/$tool"-*.log | grep -c '^sanitize_gpu.sh: cut at the limit')
  echo "| $tool | $passed ($tests_failed failed) | $ex_ok of ${#examples[@]} | $total | $(( $(date +%s) - start )) s | $cut |" >> "$summary"
  [ "$failed_procs" -eq 0 ] && [ "$total" -eq 0 ] && [ "$tests_failed" -eq 0 ] && [ "$ex_ok" -eq ${#examples[@]} ] || status=1
done
if [ -s "$details" ]; then
  { echo; echo "Failed processes:"; echo; sort "$details"; } >> "$summary"
fi
rm -f "$details"
cat "$summary"
exit $status
