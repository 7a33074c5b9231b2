// Device tier, the differential fuzzer's regressions: generated programs that once disagreed between the
// interpreter and the GPU (a NaN cast to i64, NaN constants merged by CSE, a ptxas fusion that dropped
// negations, the sign of a zero from a maximum), run again on both; a fresh batch of 200 from a random
// seed, every family; and precise division agreeing with the interpreter.
#include <gtest/gtest.h>

#include "tests/common/gpu.hpp"
#include "tests/fuzz/fuzz.hpp"

namespace {

using namespace tilefuse;
using test::Gpu;
using FuzzGpu = Gpu;

void agree(std::uint64_t seed, fuzz::Family family) {
  const fuzz::Case c = fuzz::generate(seed, family);
  Program p(c.fn, c.options);
  const fuzz::Outcome o = fuzz::check_on_gpu(c, p);
  EXPECT_NE(o.verdict, fuzz::Verdict::failed) << o.difference << "\n" << ir::print(c.fn);
}

TEST_F(FuzzGpu, Regressions) {
  // 2, 10, 23, 1518: f32/bf16 NaN cast to i64 (the GPU gives the most negative value, the interpreter gave 0);
  // 1000087, 1000242: a NaN constant merged with another constant of its dtype by CSE.
  for (std::uint64_t seed : {2u, 10u, 23u, 1518u, 1000087u, 1000242u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    agree(seed, fuzz::Family::rows);
  }
  // 20532: an i32 column maximum of a negated tile; ptxas fused the max chain into VIMNMX3 and dropped the
  // negations (fixed by the prelude's tf_imax and tf_ineg).
  agree(20532, fuzz::Family::tiles);
  // 61472: an i32 cast of a quotient by the maximum of +0 and -0; the interpreter's fmax gave -0 where the
  // GPU gives +0 (-inf against +inf, then INT_MIN against INT_MAX). The interpreter now orders -0 below
  // +0 as the GPU does, so the two agree outright.
  const fuzz::Case c = fuzz::generate(61472);
  Program p(c.fn, c.options);
  const fuzz::Outcome o = fuzz::check_on_gpu(c, p);
  EXPECT_EQ(o.verdict, fuzz::Verdict::agree) << o.difference;
}

TEST_F(FuzzGpu, FreshPrograms) {
  const std::uint64_t first = fresh_seed() % 1000000000;
  SCOPED_TRACE("seeds from " + std::to_string(first));
  // Every family (fuzz::Family): 1D rows, stages, clusters and 2D tiles with dot. A difference is
  // explained only by signed overflow or by div.full.f32 (the program agrees with precise division).
  int families[4] = {};
  for (std::uint64_t s = first; s < first + 200; ++s) {
    const fuzz::Case c = fuzz::generate(s);
    ++families[static_cast<int>(c.family)];
    Program p(c.fn, c.options);
    const fuzz::Outcome o = fuzz::check_on_gpu(c, p);
    EXPECT_NE(o.verdict, fuzz::Verdict::failed) << o.difference << "\n" << ir::print(c.fn);
  }
  for (int f = 0; f < 4; ++f) EXPECT_GT(families[f], 0) << fuzz::family_name(static_cast<fuzz::Family>(f));
}

// Division that truncates to an integer (found by the 10,000-program run of 2026-11-30): x / x is 1 with
// correctly rounded division and can be 0.99999994 (so 0 after the cast) with div.full.f32. These differ
// by default and agree with precise_division: check_on_gpu calls them explained by division.
TEST_F(FuzzGpu, DivisionBeforeATruncatingCastIsExplainedByPreciseDivision) {
  for (std::uint64_t seed : {4330u, 5301u, 9859u}) {
    const fuzz::Case c = fuzz::generate(seed, fuzz::Family::rows);
    Program p(c.fn, c.options);
    const fuzz::Outcome o = fuzz::check_on_gpu(c, p);
    EXPECT_EQ(o.verdict, fuzz::Verdict::division) << "seed " << seed << ": " << o.difference;
  }
}

// A float within its bound that a truncating cast turns into another integer (found by the 10,000-program
// run of 2026-12-01): erf(x) near -1 truncates to -1 on the GPU and to 0 in the interpreter (31095, 31374),
// an exp of about 3.27e6 to 3269015 and 3269017 (32593). The interpreter with its casts nudged brackets each GPU value.
TEST_F(FuzzGpu, TruncatingCastsOfApproximateMathAreExplained) {
  for (std::uint64_t seed : {31095u, 31374u, 32593u}) {
    const fuzz::Case c = fuzz::generate(seed);
    Program p(c.fn, c.options);
    const fuzz::Outcome o = fuzz::check_on_gpu(c, p);
    EXPECT_EQ(o.verdict, fuzz::Verdict::casts) << "seed " << seed << ": " << o.difference;
  }
}

}  // namespace
