#!/usr/bin/env bash
# A against B on the GPU machine, in one run: two source trees of tilefuse (folders, or revisions of this
# checkout's git history), each built (once, where A and B name the same tree), then the same benchmarks
# run alternately A, B, A, B ... (ROUNDS times each) on the one machine, so that whatever drifts falls on
# both; each side may add flags of its own (ARGS_A, ARGS_B: one tree's knob against its rule).
# OUT_DIR/ab.md sets each shape's x copy under A and under B side by side (the median of the rounds) with
# the change and each side's choice, then each kernel's worst, 5th percentile and median under both. A
# change to code generation is kept only when it wins here (bench/NOTES.md).
#   bash bench/ab_gpu.sh OUT_DIR A B [benchmark_filter]        (default filter: sweep)
# Environment:
#   STEPS   what to run, in this order (default all): build run report; a run split over invocations with
#           the same OUT_DIR writes the same report.
#   ROUNDS  runs of each side (default 1); SWEEP the sweep's shapes (default 60); ARGS more tilefuse_bench
#           flags for both sides (e.g. --pack-rows 1); ARGS_A, ARGS_B flags for one side only (e.g.
#           bash bench/ab_gpu.sh OUT HEAD HEAD with ARGS_B='--resident-threads 768').
#   BENCH_A, BENCH_B  tilefuse_bench programs to run instead of building (bench/test_ab_gpu.sh).
set -uo pipefail
out=${1:?usage: ab_gpu.sh OUT_DIR A B [benchmark_filter]}
side_a=${2:?usage: ab_gpu.sh OUT_DIR A B [benchmark_filter]}
side_b=${3:?usage: ab_gpu.sh OUT_DIR A B [benchmark_filter]}
filter=${4:-sweep}
steps=" ${STEPS:-build run report} "
rounds=${ROUNDS:-1}
mkdir -p "$out"
out=$(cd "$out" && pwd)
status=0

# The source folder of side $1 ($2: a folder, or a revision exported from git into OUT_DIR/src-$1).
source_of() {
  if [ -d "$2" ]; then (cd "$2" && pwd); return; fi
  rm -rf "$out/src-$1" && mkdir -p "$out/src-$1"
  git archive "$2" | tar -x -C "$out/src-$1" || { echo "ab_gpu: $2 is neither a folder nor a git revision" >&2; return 1; }
  echo "$out/src-$1"
}

# Whether both sides name the same tree (then B runs A's build).
same_tree() { [ -z "${BENCH_A:-}${BENCH_B:-}" ] && [ "$side_a" = "$side_b" ]; }

bench_of() {  # the tilefuse_bench of side $1
  local given=BENCH_${1^^}
  if [ -n "${!given:-}" ]; then echo "${!given}"
  elif [ "$1" = b ] && same_tree; then echo "$out/build-a/bench/tilefuse_bench"
  else echo "$out/build-$1/bench/tilefuse_bench"; fi
}

if [[ "$steps" == *" build "* ]]; then
  for x in a b; do
    rev=$side_a; [ $x = b ] && rev=$side_b
    given=BENCH_${x^^}
    [ -n "${!given:-}" ] && continue
    [ $x = b ] && same_tree && continue
    src=$(source_of $x "$rev") || { status=1; continue; }
    echo "== build $x ($rev)"
    { cmake -S "$src" -B "$out/build-$x" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/build-$x.log" 2>&1 &&
      ninja -C "$out/build-$x" tilefuse_bench >> "$out/build-$x.log" 2>&1; } ||
      { echo "ab_gpu: the build of $x failed: see build-$x.log"; status=1; }
  done
fi

if [[ "$steps" == *" run "* ]]; then
  for ((round = 1; round <= rounds; ++round)); do
    for x in a b; do
      echo "== run $x, round $round"
      # Each side compiles into a cache of its own: the two trees' kernels may share names and sources.
      side_args=ARGS_${x^^}
      # shellcheck disable=SC2086
      TILEFUSE_CACHE_DIR="$out/cache-$x" "$(bench_of $x)" --sweep "${SWEEP:-60}" --benchmark_filter="$filter" ${ARGS:-} ${!side_args:-} \
        --table "$out/$x-$round.md" > "$out/$x-$round.log" 2>&1 || { echo "ab_gpu: run $x round $round failed: see $x-$round.log"; status=1; }
    done
  done
fi

if [[ "$steps" == *" report "* ]]; then
  # Every tilefuse row of every round's table: side, kernel, shape, dtype, x copy, choice.
  rows() {
    for f in "$out"/a-*.md "$out"/b-*.md; do
      [ -f "$f" ] || continue
      side=$(basename "$f"); side=${side%%-*}
      awk -F'|' -v side="$side" '
        function trim(s) { gsub(/^ +| +$/, "", s); return s }
        trim($3) ~ /^tilefuse/ && trim($8) ~ /^[0-9.]+$/ {
          note = trim($9); choice = "-"
          if (match(note, /chose [a-z_0-9]+/)) choice = substr(note, RSTART + 6, RLENGTH - 6)
          print side, trim($2), trim($4), trim($5), trim($8), choice
        }' "$f"
    done
  }
  rows | sort -k2,2 -k3,3 -k4,4 -k1,1 -k5,5n | awk -v a="$side_a${ARGS_A:+ $ARGS_A}" -v b="$side_b${ARGS_B:+ $ARGS_B}" -v date="$(date -u '+%F %H:%M UTC')" '
    # The median of each side'"'"'s rounds per shape, then the shapes side by side and each kernel'"'"'s summary.
    function flush(   k, m) {
      if (key == "") return
      m = vals[int((n + 1) / 2)]
      if (side == "a") { A[key] = m; CA[key] = ch } else { B[key] = m; CB[key] = ch }
      keys[key] = 1; n = 0
    }
    { k = $2 " " $3 " " $4 " " $1
      if (k != prev) { flush(); prev = k; key = $2 " " $3 " " $4; side = $1; ch = $6 }
      vals[++n] = $5 }
    END {
      flush()
      print "# A against B (" date ")\n"
      print "A: " a ", B: " b ". x copy per shape (the median of each side'"'"'s rounds), the change, and each side'"'"'s choice.\n"
      print "| kernel | shape | dtype | A x copy | B x copy | B - A | A chose | B chose |"
      print "|---|---|---|---:|---:|---:|---|---|"
      for (k in keys) order[++count] = k
      for (i = 1; i <= count; ++i) for (j = i + 1; j <= count; ++j) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
      for (i = 1; i <= count; ++i) {
        k = order[i]; split(k, p, " ")
        av = (k in A) ? A[k] : "-"; bv = (k in B) ? B[k] : "-"
        d = (k in A && k in B) ? sprintf("%+.2f", B[k] - A[k]) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", p[1], p[2], p[3], av, bv, d, ((k in CA) ? CA[k] : "-"), ((k in CB) ? CB[k] : "-")
        if (k in A) va[p[1], ++na[p[1]]] = A[k]
        if (k in B) vb[p[1], ++nb[p[1]]] = B[k]
        kernels[p[1]] = 1
      }
      print "\n| kernel | shapes | A worst / 5th pct / median | B worst / 5th pct / median |"
      print "|---|---:|---|---|"
      for (kk in kernels) printf "| %s | %d | %s | %s |\n", kk, ((na[kk] > nb[kk]) ? na[kk] : nb[kk]), summary(va, kk, na[kk] + 0), summary(vb, kk, nb[kk] + 0)
    }
    function summary(v, kk, m,   s, i, j, t) {
      if (m == 0) return "-"
      for (i = 1; i <= m; ++i) s[i] = v[kk, i]
      for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
      return sprintf("%.2f / %.2f / %.2f", s[1], s[int(0.05 * (m - 1)) + 1], s[int((m + 1) / 2)])
    }' > "$out/ab.md"
  grep -q '^| [a-z]' "$out/ab.md" || { echo "ab_gpu: no tilefuse rows in the tables"; status=1; }
  cat "$out/ab.md"
fi
exit $status
