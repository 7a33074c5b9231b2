#!/usr/bin/env bash
# A check of bench/sanitize_gpu.sh that needs no GPU (ctest sanitize_gpu_schedule): the script runs over a
# build folder of stand-ins (a device-tier binary and examples that only print) under a stand-in
# compute-sanitizer. It must pass a clean run, never run two attention examples at once (under racecheck
# one holds up to 81 GB of host memory), count an example killed from outside as failed, with its exit
# status in its log, since such a process prints nothing else, end a process that outlives SANITIZE_LIMIT
# and still write the tool's row, and name each failed process's tests and first report under the table.
#   bash bench/test_sanitize_gpu.sh
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "test_sanitize_gpu: $*"; cat "$dir/log" 2>/dev/null; exit 1; }
mkdir -p "$dir/bin" "$dir/build/tests"
# The stand-in tool: skips its options (each takes a value), runs the program, reports nothing found, but
# for shard $REPORT_SHARD of the device tier, where it reports a barrier error in a kernel (as synccheck
# does) after the shard's first test failed.
cat > "$dir/bin/compute-sanitizer" <<'TOOL'
#!/usr/bin/env bash
tool=$2
while [[ $1 == --* ]]; do shift 2; done
if [ "${GTEST_SHARD_INDEX:-x}" = "${REPORT_SHARD:-y}" ]; then
  echo "========= Barrier error detected. Divergent thread(s) in warp."
  echo "=========     at tilefuse_k+0x5f40"
  echo "[  FAILED  ] Gpu.First (3 ms)"
  echo "[  PASSED  ] 1 test."
  echo "========= ERROR SUMMARY: 1 error"
  exit 99
fi
"$@"; rc=$?
[ "$tool" = racecheck ] && echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" ||
  echo "========= ERROR SUMMARY: 0 errors"
exit $rc
TOOL
# The stand-in device tier: its gtest shard passes two tests; shard $HANG_SHARD never ends.
cat > "$dir/build/tests/tilefuse_tests_device" <<'TIER'
#!/usr/bin/env bash
[ "$GTEST_SHARD_INDEX" = "${HANG_SHARD:-x}" ] && sleep 60
echo "[  PASSED  ] 2 tests."
TIER
# The stand-in examples: an attention example fails as the killed one did when another runs beside it;
# the example named by $KILL kills itself.
cat > "$dir/build/example" <<'EXAMPLE'
#!/usr/bin/env bash
name=$(basename "$0")
[ "$name" = "${KILL:-}" ] && kill -9 $$
if [ "$name" = attention ]; then
  mkdir "$LOCKS/attention" 2>/dev/null || exit 137
  sleep 0.3
  rmdir "$LOCKS/attention"
fi
echo "$name ok"
EXAMPLE
chmod +x "$dir/bin/compute-sanitizer" "$dir/build/tests/tilefuse_tests_device" "$dir/build/example"
for e in quickstart softmax device_memory fused_epilogue attention matmul tune; do ln -s example "$dir/build/$e"; done
export PATH=$dir/bin:$PATH LOCKS=$dir SANITIZE_SHARDS=2 TILEFUSE_CACHE_DIR=$dir/cache TILEFUSE_TUNE_DIR=$dir/tune
cd "$src"
bash bench/sanitize_gpu.sh "$dir/build" "$dir/clean" memcheck racecheck > "$dir/log" 2>&1 || fail "a clean run exits non-zero"
grep -q '^| memcheck | 4 (0 failed) | 9 of 9 | 0 |' "$dir/clean/sanitizers.md" || fail "memcheck's row is not 4 tests, 9 of 9"
grep -q '^| racecheck | 4 (0 failed) | 9 of 9 | 0 |' "$dir/clean/sanitizers.md" || fail "racecheck's row is not 4 tests, 9 of 9"
KILL=matmul bash bench/sanitize_gpu.sh "$dir/build" "$dir/killed" memcheck > "$dir/log" 2>&1 && fail "exit 0 with a killed example"
grep -q '^| memcheck | 4 (0 failed) | 8 of 9 | 0 |' "$dir/killed/sanitizers.md" || fail "the killed example is not counted"
grep -qx 'sanitize_gpu.sh: exit status 137' "$dir"/killed/memcheck-example-*.log || fail "no exit status in the killed example's log"
HANG_SHARD=0 REPORT_SHARD=1 SANITIZE_LIMIT=2 bash bench/sanitize_gpu.sh "$dir/build" "$dir/limited" synccheck > "$dir/log" 2>&1 &&
  fail "exit 0 with a shard cut and a report"
grep -q '^| synccheck | 1 (1 failed) | 9 of 9 | 1 | [0-9]* s | 1 |' "$dir/limited/sanitizers.md" ||
  fail "the cut shard or the report is not in synccheck's row"
grep -qx -- '- synccheck-device-0.log: no report (cut at the limit of 2 s)' "$dir/limited/sanitizers.md" ||
  fail "the cut shard is not named under the table"
grep -qx -- '- synccheck-device-1.log: failed Gpu.First; Barrier error detected. Divergent thread(s) in warp. at tilefuse_k+0x5f40 (exit status 99)' \
  "$dir/limited/sanitizers.md" || fail "the failed shard's test and report are not named under the table"
echo "sanitize_gpu.sh schedule: ok"
