// The tuner, in the interpreter (timed by the host clock): every candidate of a kernel's space runs and
// is checked against the default; a candidate whose output differs is never accepted, however fast; the
// fastest accepted configuration is kept on disk, survives a restart (the memory forgotten), and a
// damaged record is not read; TuneMode::first_use tunes a shape on its first call and later calls run
// what was kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <tuple>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/rows/rules.hpp"
#include "kernels/softmax/softmax.hpp"
#include "kernels/tune/tuner.hpp"

using namespace tilefuse;
using kernels::RowVariant;

namespace {

// A tuner directory of this test's own (ctest runs tests side by side), emptied first.
struct TuneDir {
  std::filesystem::path dir;
  explicit TuneDir(const std::string& name) : dir(std::filesystem::temp_directory_path() / ("tilefuse-tune-" + name + "-" + std::to_string(std::random_device{}()))) {
    setenv("TILEFUSE_TUNE_DIR", dir.c_str(), 1);
    kernels::forget_tuned_in_memory();
  }
  ~TuneDir() {
    kernels::forget_tuned_in_memory();
    unsetenv("TILEFUSE_TUNE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::vector<std::filesystem::path> records() const {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
      if (f.path().extension() == ".rec") out.push_back(f.path());
    return out;
  }
};

const kernels::RowOptions kInterp{Backend::interpreter};

}  // namespace

TEST(Tune, ConfigurationsReadBackAsWritten) {
  kernels::RowConfig c{RowVariant::looped, {}};
  c.tuning.looped_programs_per_sm = 2;
  c.tuning.peel = false;
  EXPECT_EQ(kernels::describe(c), "looped looped_programs_per_sm=2 peel=0");
  const auto back = kernels::parse_config(kernels::describe(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->variant, RowVariant::looped);
  EXPECT_EQ(back->tuning.looped_programs_per_sm, 2);
  EXPECT_EQ(back->tuning.peel, false);
  EXPECT_FALSE(kernels::parse_config("sideways"));
  EXPECT_FALSE(kernels::parse_config("looped warp_size=3"));
  EXPECT_FALSE(kernels::parse_config("looped row_elements=3"));  // not a power of two: Tuning rejects it
  EXPECT_EQ(kernels::row_tune_key("softmax", 1000, 3000, ir::DType::bf16, Target{"sm_90", true, 132, true, 0, 0}),
            "softmax r1024 c4096 bf16 sm_90");
}

TEST(Tune, SpacesHoldLoopedClustersWhereEachProgramGetsAPiece) {
  // Clusters of 1, 2, 4 and 8 programs a row (Tuning::looped_cluster) where each program gets at least a
  // 4096-column piece.
  auto clusters = [](const std::vector<kernels::RowConfig>& space) {
    std::vector<int> k;
    for (const auto& c : space)
      if (c.variant == RowVariant::looped && c.tuning.looped_cluster) k.push_back(*c.tuning.looped_cluster);
    return k;
  };
  EXPECT_EQ(clusters(kernels::softmax_space(1000, 147408, 4, kInterp)), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(clusters(kernels::layernorm_space(1000, 147408, 4, kInterp)), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(clusters(kernels::softmax_space(1000, 10000, 4, kInterp)), (std::vector<int>{1, 2}));
  // Resident groups of the L2's count where a row holds two pieces.
  auto groups = [](const std::vector<kernels::RowConfig>& space) {
    return std::count_if(space.begin(), space.end(), [](const kernels::RowConfig& c) {
      return c.variant == RowVariant::looped && c.tuning.looped_groups == std::optional<int>(1);
    });
  };
  EXPECT_EQ(groups(kernels::softmax_space(5, 855125, 4, kInterp)), 1);
  EXPECT_EQ(groups(kernels::layernorm_space(5, 855125, 4, kInterp)), 1);
  EXPECT_EQ(groups(kernels::softmax_space(1000, 5000, 4, kInterp)), 0);
  // A GPU without clusters: no clusters past one, and the groups all the same (they need none).
  const Target sm80{"sm_80", true, 108, false, 166912, 40 << 20};
  InspectLaunches a100("sm_80", &sm80);
  const kernels::RowOptions gpu{Backend::gpu};
  for (const auto& space : {kernels::softmax_space(5, 855125, 4, gpu), kernels::layernorm_space(5, 855125, 4, gpu)}) {
    EXPECT_EQ(clusters(space), std::vector<int>{});
    EXPECT_EQ(groups(space), 1);
  }
}

TEST(Tune, ResidentConfigurationsReadBack) {
  // The resident kernel is in no space (behind split everywhere it was timed, bench/NOTES.md), but a
  // configuration of it, as a caller may keep one, reads back.
  kernels::RowConfig c{RowVariant::resident, {}};
  c.tuning.stride_stages = true;
  const auto back = kernels::parse_config(kernels::describe(c));
  ASSERT_TRUE(back.has_value()) << kernels::describe(c);
  EXPECT_EQ(back->variant, RowVariant::resident);
  EXPECT_EQ(back->tuning.stride_stages, std::optional<bool>(true));
  for (const auto& space : {kernels::softmax_space(5, 855125, 4, kInterp), kernels::layernorm_space(5, 855125, 4, kInterp)})
    for (const auto& config : space) EXPECT_NE(config.variant, RowVariant::resident) << kernels::describe(config);
}

TEST(Tune, LayerNormSpaceHoldsTheStagedKernelWhereverItRuns) {
  // The staged warps as candidates at every width the staged kernel takes, as the automatic choice may
  // run it there: one program's stage (32768 columns), a cluster of 8 (262144), none past that.
  auto staged = [](std::int64_t cols) {
    int n = 0;
    for (const auto& c : kernels::layernorm_space(1000, cols, 2, kInterp)) n += c.variant == RowVariant::staged;
    return n;
  };
  EXPECT_EQ(staged(20000), 3);
  EXPECT_EQ(staged(131400), 3);
  EXPECT_EQ(staged(262144), 3);
  EXPECT_EQ(staged(262145), 0);
}

TEST(Tune, LayerNormSpaceAsksRowsSharingWAndBOnlyWhereTheyRun) {
  // The split LayerNorm's second kernel with 2 or 4 rows a program (Tuning::split_combine_rows), as a
  // candidate only where the launch runs that many: split_combine_rows halves a count the plan's groups
  // cannot fill, and the halved candidate would time a kernel already in the space.
  auto shared = [](const std::vector<kernels::RowConfig>& space) {
    std::vector<int> k;
    for (const auto& c : space)
      if (c.variant == RowVariant::split && c.tuning.split_combine_rows) k.push_back(*c.tuning.split_combine_rows);
    return k;
  };
  const Target h100{"sm_90", true, 132, true, 232448, std::int64_t{50} << 20};
  InspectLaunches inspected("sm_90", &h100);
  const kernels::RowOptions gpu{Backend::gpu};
  // Groups of 35 rows through windows (offset classes of 4 or 5 rows a vector apart): 4 halves to 2.
  EXPECT_EQ(shared(kernels::layernorm_space(242, 588615, 2, gpu)), std::vector<int>{2});
  // Groups of 25 whole-vector rows: neighbours, 4 a program with 3 repeats.
  EXPECT_EQ(shared(kernels::layernorm_space(125, 737080, 2, gpu)), (std::vector<int>{2, 4}));
  // 5 f32 rows through windows, 4 apart: no class holds two.
  EXPECT_EQ(shared(kernels::layernorm_space(5, 855125, 4, gpu)), std::vector<int>{});
  // Every candidate runs what it asks.
  for (const auto& [rows, cols, bytes] : {std::tuple{242, 588615, 2}, std::tuple{125, 737080, 2}, std::tuple{5, 855125, 4}, std::tuple{38, 131649, 4}}) {
    const kernels::SplitPlan plan = kernels::split_plan(h100, rows, cols, bytes, kernels::layernorm_launch::kLoopBlock, kernels::kNormMaxSplits);
    for (const auto& c : kernels::layernorm_space(rows, cols, bytes, gpu)) {
      if (c.variant == RowVariant::split && c.tuning.split_combine_rows) {
        EXPECT_EQ(kernels::split_combine_rows(c.tuning, plan.group, rows - (rows - 1) / plan.group * plan.group,
                                              kernels::whole_vectors(cols, bytes) ? 1 : 16 / bytes),
                  *c.tuning.split_combine_rows)
            << rows << "x" << cols;
      }
    }
  }
}

TEST(Tune, NarrowRowSpacesHoldTheWidthAsAnArgument) {
  // Packed narrow rows, whole vectors or not: the rule compiles the width in (Tuning::constant_cols), so the
  // space holds one packed candidate with the width an argument, which reads back as written, and no
  // configuration twice (each would be timed twice); none of either for rows too wide to pack.
  auto argument = [](const std::vector<kernels::RowConfig>& space) {
    int n = 0;
    for (const auto& c : space)
      if (c.tuning.constant_cols == false) {
        ++n;
        EXPECT_EQ(c.variant, RowVariant::one_program);
        const auto back = kernels::parse_config(kernels::describe(c));
        EXPECT_TRUE(back && back->tuning.constant_cols == false) << kernels::describe(c);
      }
    return n;
  };
  auto distinct = [](const std::vector<kernels::RowConfig>& space) {
    std::vector<std::string> seen;
    for (const auto& c : space) {
      const std::string d = kernels::describe(c);
      EXPECT_EQ(std::count(seen.begin(), seen.end(), d), 0) << d;
      seen.push_back(d);
    }
  };
  for (std::int64_t cols : {16, 25, 151, 256}) {
    EXPECT_EQ(argument(kernels::softmax_space(100000, cols, 2, kInterp)), 1) << cols;
    EXPECT_EQ(argument(kernels::layernorm_space(100000, cols, 2, kInterp)), 1) << cols;
    distinct(kernels::softmax_space(100000, cols, 2, kInterp));
    distinct(kernels::layernorm_space(100000, cols, 2, kInterp));
  }
  EXPECT_EQ(argument(kernels::softmax_space(100000, 257, 2, kInterp)), 0);
  EXPECT_EQ(argument(kernels::layernorm_space(100000, 1000, 4, kInterp)), 0);
}

TEST(Tune, ACandidateThatDiffersIsNeverAccepted) {
  TuneDir d("differs");
  std::vector<double> out(64);
  auto write = [&](double v, bool slow) {
    if (slow) std::this_thread::sleep_for(std::chrono::microseconds(300));
    std::fill(out.begin(), out.end(), v);
  };
  kernels::TuneRun run;
  run.key = "test differs";
  run.backend = Backend::interpreter;
  run.warmup = 1;
  run.runs = 5;
  run.poison = [&] { std::fill(out.begin(), out.end(), std::nan("")); };
  run.output = [&] { return out; };
  kernels::RowConfig right{RowVariant::looped, {}}, wrong{RowVariant::split, {}};
  const kernels::TuneCandidate candidates[] = {
      {{}, [&](int) { write(1.0, true); }},         // the default
      {wrong, [&](int) { write(1.001, false); }},   // fastest, off by 1e-3
      {right, [&](int) { write(1.0, false); }},     // fast and right
      {{RowVariant::cluster, {}}, [&](int) { throw std::invalid_argument("does not take this row"); }},
  };
  const auto report = kernels::tune(run, candidates);
  ASSERT_EQ(report.candidates.size(), 4u);
  EXPECT_TRUE(report.candidates[0].accepted);
  EXPECT_FALSE(report.candidates[1].accepted);
  EXPECT_NE(report.candidates[1].why.find("differs from the default"), std::string::npos) << report.candidates[1].why;
  EXPECT_TRUE(report.candidates[2].accepted);
  EXPECT_FALSE(report.candidates[3].accepted);
  EXPECT_EQ(report.candidates[3].why, "does not take this row");
  EXPECT_EQ(report.best.variant, RowVariant::looped);
  EXPECT_EQ(kernels::tuned_config("test differs")->variant, RowVariant::looped);
}

TEST(Tune, SoftmaxTunedConfigurationSurvivesARestart) {
  TuneDir d("softmax");
  const std::int64_t rows = 3, cols = 9001;
  const auto x = reference::random_vector<float>(rows * cols, 5, 0.f, 3.f);
  const auto report = kernels::tune_softmax(x, rows, cols, kInterp);
  const auto space = kernels::softmax_space(rows, cols, 4, kInterp);
  ASSERT_EQ(report.candidates.size(), space.size());
  int accepted = 0;
  for (const auto& c : report.candidates) {
    EXPECT_TRUE(c.accepted || !c.why.empty()) << c.config;
    EXPECT_LE(c.error, 1e-5) << c.config;  // every variant computes the same softmax
    accepted += c.accepted;
  }
  EXPECT_GE(accepted, 5);
  ASSERT_EQ(d.records().size(), 1u);
  const std::string key = kernels::row_tune_key("softmax", rows, cols, ir::DType::f32, target(Backend::interpreter));
  kernels::forget_tuned_in_memory();  // a restart: only the disk remembers
  const auto again = kernels::tuned_config(key);
  ASSERT_TRUE(again);
  EXPECT_EQ(kernels::describe(*again), kernels::describe(report.best));
  // A damaged record is not read back (the checksum fails), and nothing is run from it.
  {
    std::fstream f(d.records()[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('#');
  }
  kernels::forget_tuned_in_memory();
  EXPECT_FALSE(kernels::tuned_config(key));
  EXPECT_EQ(kernels::clear_tuned(), 1u);
}

TEST(Tune, FirstUseTunesOnceThenRunsWhatWasKept) {
  TuneDir d("first-use");
  const std::int64_t rows = 4, cols = 300;
  auto x = reference::random_vector<half>(rows * cols, 6, 0.f, 3.f);
  auto w = reference::random_vector<half>(cols, 7), b = reference::random_vector<half>(cols, 8);
  std::vector<half> y(x.size(), reference::from_float<half>(std::nanf("")));
  kernels::RowStats<std::vector<float>> stats{std::vector<float>(rows), std::vector<float>(rows)};
  kernels::RowOptions cached = kInterp;
  cached.tune = kernels::TuneMode::cached;
  kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, cached);  // nothing tuned yet: the rules
  EXPECT_TRUE(d.records().empty());
  kernels::RowOptions first = kInterp;
  first.tune = kernels::TuneMode::first_use;
  kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, first);
  ASSERT_EQ(d.records().size(), 1u);
  const auto written = std::filesystem::last_write_time(d.records()[0]);
  std::fill(y.begin(), y.end(), reference::from_float<half>(std::nanf("")));
  kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, first);  // kept: not tuned again
  EXPECT_EQ(std::filesystem::last_write_time(d.records()[0]), written);
  const auto ref = reference::layernorm<half>(x, w, b, rows, cols, 1e-5);
  EXPECT_LE(reference::relative_error<half>(y, ref), reference::tolerance<half>());
  // The softmax too, with the tuned configuration read from disk after a restart.
  std::vector<float> sx = reference::random_vector<float>(rows * 5000, 9, 0.f, 3.f), sy(sx.size(), std::nanf(""));
  kernels::softmax_auto(sx, sy, rows, 5000, first);
  kernels::forget_tuned_in_memory();
  std::fill(sy.begin(), sy.end(), std::nanf(""));
  kernels::softmax_auto(sx, sy, rows, 5000, cached);
  EXPECT_LE(reference::relative_error<float>(sy, reference::softmax<float>(sx, rows, 5000)), reference::tolerance<float>());
  EXPECT_EQ(d.records().size(), 2u);
}
