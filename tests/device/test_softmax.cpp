// Device tier, softmax: every variant on the GPU against the interpreter and float64, on fresh random
// inputs with poisoned outputs, every element checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <utility>

#include "backend/runtime/target.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/gpu.hpp"

namespace {

using namespace tilefuse;
using test::Gpu;
using kernels::RowVariant;

// The one-program softmax (narrow rows several per program unless pack_rows is false, their width
// compiled in unless constant_cols says otherwise) and the five-kernel baseline on the GPU, against the interpreter and
// float64.
template <class H>
void check_softmax(std::int64_t rows, std::int64_t cols, bool pack_rows = true,
                   std::optional<bool> constant_cols = std::nullopt) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("softmax " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed) +
               (constant_cols ? (*constant_cols ? " width compiled in" : " width an argument") : ""));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto host_x = reference::random_vector<H>(n, seed, 0.f, 3.f);
  DeviceBuffer<H> x(host_x), y(n), y2(n);
  kernels::UnfusedScratch<DeviceBuffer<H>> scratch{DeviceBuffer<H>(rows), DeviceBuffer<H>(n), DeviceBuffer<H>(n),
                                                   DeviceBuffer<H>(rows)};
  y.fill_bytes(0xff);  // NaN in every float type: an unwritten element fails the check
  y2.fill_bytes(0xff);
  kernels::RowOptions on_gpu{Backend::gpu}, in_interpreter{Backend::interpreter};
  on_gpu.tuning.pack_rows = in_interpreter.tuning.pack_rows = pack_rows;
  on_gpu.tuning.constant_cols = in_interpreter.tuning.constant_cols = constant_cols;
  kernels::softmax(x, y, rows, cols, on_gpu);
  kernels::softmax_unfused(x, y2, scratch, rows, cols, {Backend::gpu});
  driver::synchronize();
  const auto gpu = y.download();
  const auto gpu_unfused = y2.download();
  std::vector<H> interp(n, reference::from_float<H>(std::nanf("")));
  kernels::softmax(host_x, interp, rows, cols, in_interpreter);
  const auto ref = reference::softmax<H>(host_x, rows, cols);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::relative_error<H>(gpu_unfused, ref), 4 * tol);  // rounds to H between its five steps
  EXPECT_LE(reference::relative_error<H>(interp, ref), tol);
  // Every element: against float64, and GPU against the interpreter (same rounding steps, other order).
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 1e-7, 4 * tol), 1.0);
  std::vector<double> interp_d(n);
  for (std::size_t i = 0; i < n; ++i) interp_d[i] = reference::to_float(interp[i]);
  EXPECT_LE(reference::worst_element<H>(gpu, interp_d, 1e-7, 2 * tol), 1.0);
}

TEST_F(Gpu, SoftmaxF32AllWidths) {
  for (std::int64_t cols : {1, 7, 128, 1000, 1001, 3000, 4096, 16384, 20001, 24576, 28001, 32768}) check_softmax<float>(67, cols);
}

TEST_F(Gpu, SoftmaxF16AllWidths) {
  for (std::int64_t cols : {1, 7, 128, 1000, 1001, 3000, 4096, 16384, 20001, 24576, 28001, 32768}) check_softmax<half>(37, cols);
}

TEST_F(Gpu, SoftmaxBf16AllWidths) {
  for (std::int64_t cols : {1, 7, 128, 1000, 1001, 3000, 4096, 16384, 20001, 24576, 28001, 32768}) check_softmax<bfloat16>(37, cols);
}

TEST_F(Gpu, SoftmaxManyRows) {
  check_softmax<float>(65536, 128);         // 16 rows per program
  check_softmax<float>(65536, 128, false);  // one-warp programs, 8 per block
  check_softmax<float>(4097, 100, false);   // a last block with one program
  check_softmax<bfloat16>(5000, 64);
}

// Narrow rows, several per program as one 2D tile (the last program's rows past the matrix masked off),
// at widths that are whole vectors and widths that are not (read through their aligned windows).
TEST_F(Gpu, SoftmaxNarrowRowsSeveralPerProgram) {
  for (std::int64_t cols : {1, 8, 16, 40, 47, 64, 79, 128, 155, 249}) {
    check_softmax<half>(10007, cols);
    check_softmax<float>(3001, cols);
  }
  check_softmax<bfloat16>(100003, 47);  // 1563 programs of 64 rows
}

// The packed kernels both ways Tuning::constant_cols holds them: the width compiled in (one kernel per
// width, the tile's columns past it folded away; the rule) and the width an argument (one kernel for
// every width); staged, row by row and whole-vector rows, and the last program's rows past the matrix.
TEST_F(Gpu, SoftmaxNarrowRowsWithTheirWidthCompiledIn) {
  for (const bool constant : {true, false}) {
    for (std::int64_t cols : {1, 8, 16, 25, 47, 64, 65, 79, 151, 155, 249, 256}) {
      check_softmax<bfloat16>(10007, cols, true, constant);
      check_softmax<half>(3001, cols, true, constant);
    }
    for (std::int64_t cols : {5, 33, 100, 127}) check_softmax<float>(3001, cols, true, constant);
  }
}

// Narrow rows that are not whole vectors through a stage, gathered as whole rows per thread (up to 32
// halves), a row over two threads (up to 64 halves) or as much of a row as the threads allow (f32), the
// last program's rows past the matrix (copied in and written out as whole vectors but for the run's ends
// and what is left before the matrix's end).
TEST_F(Gpu, SoftmaxStagedRowsWholeInAThread) {
  for (std::int64_t cols : {1, 3, 17, 25, 31, 33, 47, 63}) {
    check_softmax<half>(100003, cols);
    check_softmax<bfloat16>(4001, cols);
  }
  for (std::int64_t cols : {5, 19, 53, 127}) check_softmax<float>(30001, cols);
}

TEST_F(Gpu, SoftmaxInPlace) {
  const std::int64_t rows = 33, cols = 777;
  auto host = reference::random_vector<float>(rows * cols, fresh_seed());
  DeviceBuffer<float> x(host);
  kernels::softmax(x, x, rows, cols, {Backend::gpu});
  const auto ref = reference::softmax<float>(host, rows, cols);
  EXPECT_LE(reference::relative_error<float>(x.download(), ref), 1e-5);
}

// `variant` of the softmax (automatic: softmax_auto's choice) on the GPU and in the interpreter, against
// float64 and against each other.
template <class H>
void check_variant(std::int64_t rows, std::int64_t cols, RowVariant variant, const kernels::Tuning& tuning = {}) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("softmax ") + kernels::variant_name(variant) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
               " seed " + std::to_string(seed) + (tuning.stride_stages.value_or(false) ? " strided" : "") +
               (tuning.looped_cluster ? " looped_cluster " + std::to_string(*tuning.looped_cluster) : ""));
  const kernels::RowOptions gpu_opt{Backend::gpu, nullptr, tuning}, interp_opt{Backend::interpreter, nullptr, tuning};
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed, 0.f, 3.f);
  DeviceBuffer<H> x(hx), y(n);
  y.fill_bytes(0xff);
  kernels::softmax_auto(x, y, rows, cols, gpu_opt, variant);
  const auto gpu = y.download();
  const auto ref = reference::softmax<H>(hx, rows, cols);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 1e-7, 4 * tol), 1.0);
  std::vector<H> interp(n, reference::from_float<H>(std::nanf("")));
  kernels::softmax_auto(hx, interp, rows, cols, interp_opt, variant);
  std::vector<double> interp_d(n);
  for (std::size_t i = 0; i < n; ++i) interp_d[i] = reference::to_float(interp[i]);
  EXPECT_LE(reference::worst_element<H>(gpu, interp_d, 1e-7, 2 * tol), 1.0);
}

template <class H>
void check_softmax_split(std::int64_t rows, std::int64_t cols, std::int64_t splits) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("softmax_split " + std::to_string(rows) + "x" + std::to_string(cols) + " splits " +
               std::to_string(splits) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed, 0.f, 3.f);
  DeviceBuffer<H> x(hx), y(n);
  kernels::SplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(rows * splits), DeviceBuffer<float>(rows * splits)};
  y.fill_bytes(0xff);
  kernels::softmax_split(x, y, scratch, rows, cols, splits, {Backend::gpu});
  const auto gpu = y.download();
  const auto ref = reference::softmax<H>(hx, rows, cols);
  EXPECT_LE(reference::relative_error<H>(gpu, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 1e-7, 4 * reference::tolerance<H>()), 1.0);
}

TEST_F(Gpu, SplitRowSoftmax) {
  check_softmax_split<float>(7, 20001, 3);
  check_softmax_split<float>(5, 9000, 8);
  check_softmax_split<bfloat16>(16, 131072, 16);
  check_softmax_split<float>(4, 262144, 64);
}

TEST_F(Gpu, ClusterSoftmaxReadsOnce) {
  // Rows over clusters of 2 to 8 programs exchanging max and sum through distributed shared memory.
  for (std::int64_t cols : {100, 16385, 50001, 70000, 131072}) check_variant<float>(6, cols, RowVariant::cluster);
  check_variant<bfloat16>(64, 131072, RowVariant::cluster);
  check_variant<half>(9, 40000, RowVariant::cluster);
}

TEST_F(Gpu, SoftmaxAutomaticChoiceAtTheLimits) {
  // These few rows: the one-program kernel below 8192 columns, split over the GPU from 8192 on (with more
  // rows: one program up to 32768 columns, the staged softmax up to 131072 f32 and 262144 bf16, the looped
  // softmax past them). Both sides of each limit.
  for (std::int64_t cols : {1000, 16384, 16385, 32768, 32769, 70000}) {
    check_variant<float>(5, cols, RowVariant::automatic);
    check_variant<bfloat16>(3, cols, RowVariant::automatic);
  }
  check_variant<float>(3, 131072, RowVariant::automatic);
  check_variant<float>(3, 131073, RowVariant::automatic);
  check_variant<bfloat16>(2, 262144, RowVariant::automatic);
  // Past 8 stages of 64 KB, on a GPU with clusters, the staged launch's own plan where its launch runs two
  // waves (on up to 132 SMs): 8 stages of 112 KB, 8 of 96 KB through windows, 16 of 64 KB.
  const Target gpu = tilefuse::target(Backend::gpu);
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{70, 229376}, {121, 177013}, {50, 229400}}) {
    if (gpu.clusters && gpu.sm_count <= 132) {
      EXPECT_EQ(kernels::softmax_choice(rows, cols, 4, {Backend::gpu}), RowVariant::staged) << rows << "x" << cols;
    }
    check_variant<float>(rows, cols, RowVariant::automatic);
  }
}

// Every entry of the variant table that needs no scratch, at a width past one program where it allows.
TEST_F(Gpu, EverySoftmaxVariantOfTheTable) {
  for (const auto& v : kernels::softmax_variants()) {
    if (v.needs_scratch) continue;
    const std::int64_t widest = v.max_cols;
    check_variant<float>(3, widest == 0 ? 40000 : std::min<std::int64_t>(widest, 40000), v.variant);
  }
}

TEST_F(Gpu, StagedSoftmaxReadsOnce) {
  // One program per row up to 32 KB of stage, clusters of programs above (2048x131072 bf16: 8 of 16384).
  for (std::int64_t cols : {1, 100, 2049, 8192, 8193, 20001, 32768}) check_variant<float>(6, cols, RowVariant::staged);
  check_variant<bfloat16>(64, 131072, RowVariant::staged);
  check_variant<half>(9, 40000, RowVariant::staged);
  check_variant<float>(3, 262144, RowVariant::staged);
}

// Clusters of 9 and 16 programs a row (Tuning::staged_cluster: Hopper's non-portable cluster sizes, stages
// up to 40960 columns): the sweep's widest half rows (588615: 72 KB stages), rows through windows, f32
// stages of 144 KB (one program an SM), small chunks.
TEST_F(Gpu, StagedClustersOfSixteenSoftmax) {
  kernels::Tuning t;
  t.staged_cluster = 16;
  check_variant<half>(5, 588615, RowVariant::staged, t);
  check_variant<bfloat16>(41, 100003, RowVariant::staged, t);
  check_variant<float>(5, 20001, RowVariant::staged, t);
  t.staged_cluster = 9;
  check_variant<float>(7, 300001, RowVariant::staged, t);
  check_variant<half>(3, 131072, RowVariant::staged, t);
}

// Programs (clusters) striding over rows through two stages in turn (Tuning::stride_stages): more rows
// than the GPU holds programs, odd and even counts per program, rows through windows, clusters of 2 to 8.
TEST_F(Gpu, StridedStagedSoftmaxReadsOnce) {
  kernels::Tuning t;
  t.stride_stages = true;
  check_variant<float>(3001, 2049, RowVariant::staged, t);
  check_variant<float>(7, 20001, RowVariant::staged, t);
  check_variant<bfloat16>(201, 57481, RowVariant::staged, t);
  check_variant<half>(64, 131072, RowVariant::staged, t);
  check_variant<half>(2000, 1027, RowVariant::staged, t);
}

// Rows shared by clusters of 2 to 8 programs (Tuning::looped_cluster), the clusters striding over more
// rows than the L2 lets into flight at once: against float64 and the interpreter, through windows, few rows.
TEST_F(Gpu, LoopedClusterSoftmax) {
  for (int k : {2, 3, 8}) {
    kernels::Tuning t;
    t.looped_cluster = k;
    check_variant<float>(600, 9000, RowVariant::looped, t);
    if (k == 2) check_variant<bfloat16>(300, 100001, RowVariant::looped, t);  // the L2 lets 240 rows into flight
    check_variant<half>(3, 588615, RowVariant::looped, t);
    check_variant<float>(5, 7, RowVariant::looped, t);
  }
}

// Rows shared by resident groups of programs (Tuning::looped_groups: 1, the L2's count, or 3 and 40), the
// groups striding over rows in one cooperative launch: few wide rows, through windows, more rows than
// groups, a group larger than the row's pieces.
TEST_F(Gpu, LoopedGroupsSoftmax) {
  for (int k : {1, 3, 40}) {
    kernels::Tuning t;
    t.looped_groups = k;
    check_variant<float>(5, 855125, RowVariant::looped, t);
    check_variant<half>(40, 588615, RowVariant::looped, t);
    check_variant<bfloat16>(700, 40001, RowVariant::looped, t);
    check_variant<float>(5, 7, RowVariant::looped, t);
  }
}

// Rows over resident groups, read once: each row staged over a group of programs all resident at once,
// one cooperative launch per wave of rows (H200: 5x855125 f32 takes 105 programs a row in one wave,
// 700x40001 f16 waves of 264 rows).
TEST_F(Gpu, ResidentSoftmaxReadsOnce) {
  check_variant<float>(5, 855125, RowVariant::resident);
  check_variant<bfloat16>(9, 1222495, RowVariant::resident);
  check_variant<half>(700, 40001, RowVariant::resident);
  check_variant<float>(3, 100, RowVariant::resident);
}

// The same with Tuning::stride_stages: one cooperative launch whose groups stride over the rows through
// two stages in turn, each group reduction inside the loop a round of its own (several rows a group, rows
// ending on either stage, more groups than rows).
TEST_F(Gpu, ResidentStridedSoftmax) {
  kernels::Tuning t;
  t.stride_stages = true;
  check_variant<float>(5, 855125, RowVariant::resident, t);
  check_variant<half>(242, 588615, RowVariant::resident, t);
  check_variant<bfloat16>(700, 40001, RowVariant::resident, t);
  check_variant<float>(3, 100, RowVariant::resident, t);
}

// A row wider than the GPU's stages hold at once is an error that names the kernel that takes it.
TEST_F(Gpu, ResidentSoftmaxRefusesRowsTheGpuCannotHold) {
  const std::int64_t cols = 8'000'000;
  DeviceBuffer<float> x(cols), y(cols);
  try {
    kernels::softmax_resident(x, y, 1, cols, {Backend::gpu});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tilefuse softmax_resident: cols = 8000000 take 977 programs per row, and a resident launch "
                                         "holds at most"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(kernels::softmax_split takes rows of any width)"), std::string::npos) << e.what();
  }
}

// Rows whose width is not a whole number of 16-byte vectors, read through their aligned windows: every
// row starts at another offset into its vector (odd widths of halves, 1 and 3 mod 4 of floats).
TEST_F(Gpu, SoftmaxRowsOfEveryAlignment) {
  for (std::int64_t cols : {3, 9, 33, 47, 155, 257, 1001, 3261, 16377, 16383}) {
    check_variant<half>(41, cols, RowVariant::one_program);
    check_variant<float>(23, cols, RowVariant::one_program);
  }
  for (std::int64_t cols : {5, 4099, 30001}) {
    check_variant<bfloat16>(9, cols, RowVariant::looped);
    check_variant<float>(5, cols, RowVariant::looped);
  }
  check_softmax_split<half>(5, 40001, 7);
  check_softmax_split<float>(3, 9, 2);
  // Staged: each piece copied from the vector boundary before it (16-byte copies for whole runs).
  check_variant<half>(9, 44547, RowVariant::staged);
  check_variant<bfloat16>(64, 129309, RowVariant::staged);
  check_variant<float>(6, 20001, RowVariant::staged);
}

// Few wide rows, as softmax_auto takes them: split over the GPU with the library's workspace, in groups
// of rows that fit 80% of the L2 (13 rows of 2^20 f32: groups of 7 and 6 on an H200).
TEST_F(Gpu, SoftmaxFewWideRowsSplitAutomatically) {
  check_variant<float>(5, 300001, RowVariant::automatic);
  check_variant<float>(13, 1 << 20, RowVariant::automatic);
  check_variant<bfloat16>(3, 1 << 20, RowVariant::automatic);
  check_variant<half>(100, 20001, RowVariant::automatic);
}

TEST_F(Gpu, LoopedSoftmaxWideRows) {
  for (std::int64_t cols : {1, 7, 4096, 5000, 16385, 40000}) check_variant<float>(9, cols, RowVariant::looped);
  check_variant<bfloat16>(4, 131072, RowVariant::looped);
  check_variant<half>(4, 70001, RowVariant::looped);
}

}  // namespace

namespace {

// The tuner on the GPU: every candidate timed with events and checked against the default; the kept
// configuration read back from disk after the memory is forgotten (a restart), and run by softmax_auto
// under TuneMode::cached against float64.
TEST_F(Gpu, TunerKeepsAConfigurationThatMatchesTheDefault) {
  const auto dir = std::filesystem::temp_directory_path() / ("tilefuse-tune-gpu-" + std::to_string(std::random_device{}()));
  setenv("TILEFUSE_TUNE_DIR", dir.c_str(), 1);
  kernels::forget_tuned_in_memory();
  const std::int64_t rows = 2048, cols = 3001;
  const auto hx = reference::random_vector<bfloat16>(static_cast<std::size_t>(rows * cols), 21, 0.f, 3.f);
  DeviceBuffer<bfloat16> x(hx), y(hx.size());
  const auto report = kernels::tune_softmax(x, rows, cols, {Backend::gpu});
  int accepted = 0;
  for (const auto& c : report.candidates) {
    SCOPED_TRACE(c.config + ": " + c.why);
    if (c.accepted) {
      ++accepted;
      EXPECT_LE(c.error, 1e-2);
      EXPECT_GT(c.us, 0.0);
    }
  }
  EXPECT_GE(accepted, 5);
  EXPECT_LE(report.best_us, report.default_us);
  kernels::forget_tuned_in_memory();
  const auto kept = kernels::tuned_config(kernels::row_tune_key("softmax", rows, cols, ir::DType::bf16, target(Backend::gpu)));
  ASSERT_TRUE(kept);
  EXPECT_EQ(kernels::describe(*kept), kernels::describe(report.best));
  kernels::RowOptions cached{Backend::gpu};
  cached.tune = kernels::TuneMode::cached;
  y.fill_bytes(0xff);
  kernels::softmax_auto(x, y, rows, cols, cached);
  const auto ref = reference::softmax<bfloat16>(hx, rows, cols);
  EXPECT_LE(reference::relative_error<bfloat16>(y.download(), ref), reference::tolerance<bfloat16>());
  kernels::clear_tuned();
  unsetenv("TILEFUSE_TUNE_DIR");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
