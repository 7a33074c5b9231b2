#!/usr/bin/env bash
# A check of bench/ab_gpu.sh that needs no GPU (ctest ab_gpu_report): two stand-in benchmarks write tables
# as tilefuse_bench --table does, two rounds each; the report must set each shape's median x copy under A
# and B side by side with the change and the choices, and give each kernel's worst, 5th percentile and
# median; a side whose run fails makes the script exit non-zero; ARGS_A and ARGS_B reach their side alone.
#   bash bench/test_ab_gpu.sh
set -euo pipefail
# ab_gpu.sh's settings from the environment that runs the tests (run_gpu.sh's STEPS reach ctest) would
# change what it does: the test sets its own.
unset STEPS ROUNDS SWEEP ARGS ARGS_A ARGS_B BENCH_A BENCH_B
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "test_ab_gpu: $*"; cat "$out/log" 2>/dev/null; cat "$out/ab/ab.md" 2>/dev/null; exit 1; }
# A stand-in tilefuse_bench: the table it writes (--table FILE) has two shapes; the x copy of the first
# moves with each run (a counter file), so the medians of the rounds are tested.
fake() {  # $1: name, $2: x copy of 5x855125 bf16 softmax, $3: of 32850x3597 bf16 softmax
  cat > "$out/$1" <<SCRIPT
#!/usr/bin/env bash
while [ \$# -gt 0 ]; do [ "\$1" = --table ] && table=\$2; shift; done
n=\$(cat "$out/$1.count" 2>/dev/null || echo 0); echo \$((n + 1)) > "$out/$1.count"
x=\$(echo "$2 \$n" | awk '{ printf "%.2f", \$1 + 0.1 * \$2 }')
cat > "\$table" <<TABLE
| kernel | impl | shape | dtype | time (us) | GB/s | x copy | note |
|---|---|---|---|---:|---:|---:|---|
| copy | device copy, same bytes | 5x855125 | bf16 | 10.00 | 3000 | 1.00 |  |
| softmax | tilefuse automatic | 5x855125 | bf16 | 12.00 | 2500 | \$x | sweep; chose split; rel err 1e-3 |
| softmax | tilefuse automatic | 32850x3597 | bf16 | 99.00 | 2500 | $3 | sweep; chose one_program; rel err 1e-3 |
| layernorm | tilefuse automatic | 32850x3597 | bf16 | 99.00 | 2500 | $3 | sweep; chose one_program; rel err 1e-3 |
TABLE
SCRIPT
  chmod +x "$out/$1"
}
fake bench_a 0.70 0.59
fake bench_b 0.80 0.75
BENCH_A=$out/bench_a BENCH_B=$out/bench_b ROUNDS=2 bash "$src/bench/ab_gpu.sh" "$out/ab" rev-a rev-b > "$out/log" 2>&1 || fail "exit non-zero"
r="$out/ab/ab.md"
grep -q '^A: rev-a, B: rev-b' "$r" || fail "the sides are not named"
# Rounds 0.70 and 0.80 under A: the median of two is the lower; B's 0.80 and 0.90 likewise.
grep -q '^| softmax | 5x855125 | bf16 | 0.70 | 0.80 | +0.10 | split | split |$' "$r" || fail "no row for 5x855125"
grep -q '^| softmax | 32850x3597 | bf16 | 0.59 | 0.75 | +0.16 | one_program | one_program |$' "$r" || fail "no row for 32850x3597"
grep -q '^| copy' "$r" && fail "a copy row was taken for a kernel"
grep -q '^| softmax | 2 | 0.59 / 0.59 / 0.59 | 0.75 / 0.75 / 0.75 |$' "$r" || fail "no softmax summary"
grep -q '^| layernorm | 1 | 0.59 / 0.59 / 0.59 | 0.75 / 0.75 / 0.75 |$' "$r" || fail "no layernorm summary"
# A side that fails: non-zero exit.
printf '#!/usr/bin/env bash\nexit 3\n' > "$out/broken" && chmod +x "$out/broken"
BENCH_A=$out/bench_a BENCH_B=$out/broken bash "$src/bench/ab_gpu.sh" "$out/ab2" a b > "$out/log" 2>&1 && fail "exit 0 with a failed run"
# One stand-in for both sides, its x copy set by a flag that only B passes (ARGS_B), the flag both pass
# (ARGS) seen by both.
cat > "$out/knob" <<SCRIPT
#!/usr/bin/env bash
x=0.50; both=no
while [ \$# -gt 0 ]; do
  case \$1 in --table) table=\$2 ;; --knob) x=0.90 ;; --both) both=yes ;; esac
  shift
done
[ \$both = yes ] || exit 4
printf '| kernel | impl | shape | dtype | time (us) | GB/s | x copy | note |\n|---|---|---|---|---:|---:|---:|---|\n' > "\$table"
echo "| softmax | tilefuse automatic | 5x855125 | bf16 | 12.00 | 2500 | \$x | sweep; chose split; rel err 1e-3 |" >> "\$table"
SCRIPT
chmod +x "$out/knob"
BENCH_A=$out/knob BENCH_B=$out/knob ARGS=--both ARGS_B=--knob bash "$src/bench/ab_gpu.sh" "$out/ab3" HEAD HEAD > "$out/log" 2>&1 ||
  fail "exit non-zero with per-side flags"
grep -q '^| softmax | 5x855125 | bf16 | 0.50 | 0.90 | +0.40 | split | split |$' "$out/ab3/ab.md" || fail "ARGS_B not passed to B alone"
grep -q '^A: HEAD, B: HEAD --knob\.' "$out/ab3/ab.md" || fail "the sides' own flags are not in their names"
echo "ab_gpu.sh report: ok"
