// Device tier, the DSL's ops and the epilogue: float and integer ops, cache hints and stages on the GPU
// against the interpreter and float64; launch errors on the GPU; the epilogue's dropout draws.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <tuple>

#include "kernels/epilogue/epilogue.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/gpu.hpp"
#include "tests/common/op_kernels.hpp"
#include "tests/common/programs.hpp"

namespace {

using namespace tilefuse;
using test::Gpu;

template <class H, int BLOCK>
void check_float_ops(int n) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("float ops n=" + std::to_string(n) + " seed " + std::to_string(seed));
  const auto& ops = testkit::float_ops();
  auto host_x = reference::random_vector<H>(n, seed, 0.f, 2.f);
  DeviceBuffer<H> x(host_x), out(ops.size() * n);
  out.fill_bytes(0xff);
  Kernel<&testkit::float_ops_program<tl::dtype_of_host_t<H>, BLOCK>> k("float_ops", {.num_warps = 2});
  k.launch({{1}, Backend::gpu}, x, out, n);
  const auto gpu = out.download();
  std::vector<H> interp(ops.size() * n, reference::from_float<H>(std::nanf("")));
  k.launch({{1}, Backend::interpreter}, host_x, interp, n);
  const double tol = reference::tolerance<H>();
  for (std::size_t k2 = 0; k2 < ops.size(); ++k2) {
    for (int i = 0; i < n; ++i) {
      const double xi = reference::to_float(host_x[i]);
      const double want = ops[k2].ref(xi);
      const double g = reference::to_float(gpu[k2 * n + i]);
      const double c = reference::to_float(interp[k2 * n + i]);
      // cast(i32(x*10)) may land on the other side of an integer when x*10 rounds: allow one step there.
      const double slack = std::string(ops[k2].name).rfind("cast", 0) == 0 ? 1.0 : 0.0;
      ASSERT_NEAR(g, want, slack + 4 * tol * (1 + std::abs(want))) << ops[k2].name << " x=" << xi;
      ASSERT_NEAR(g, c, slack + 2 * tol * (1 + std::abs(want))) << ops[k2].name << " x=" << xi << " (GPU vs interpreter)";
    }
  }
}

TEST_F(Gpu, FloatOpsMatchInterpreterAndFloat64) {
  check_float_ops<float, 256>(250);
  check_float_ops<half, 256>(256);
  check_float_ops<bfloat16, 128>(77);
}

TEST_F(Gpu, IntOpsMatchInterpreterExactly) {
  const int n = 200;
  std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> dist(-30000, 30000);
  std::vector<std::int32_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = dist(gen);
    do b[i] = dist(gen); while (b[i] == 0);
  }
  const std::size_t rows = testkit::int_ops().size();
  DeviceBuffer<std::int32_t> da{std::span<const std::int32_t>(a)}, db{std::span<const std::int32_t>(b)}, out(rows * n);
  DeviceBuffer<std::int64_t> wide(n);
  std::vector<std::int32_t> interp(rows * n, -7);  // the same poison on both sides: unwritten stays -7
  std::vector<std::int64_t> interp_wide(n, -7);
  out.upload(interp);
  wide.upload(interp_wide);
  Kernel<&testkit::int_ops_program<256>> k("int_ops", {.num_warps = 4});
  k.launch({{3}, Backend::gpu}, da, db, out, wide, n);
  k.launch({{3}, Backend::interpreter}, a, b, interp, interp_wide, n);
  const auto gpu = out.download();
  for (std::size_t i = 0; i < gpu.size(); ++i)
    ASSERT_EQ(gpu[i], interp[i]) << testkit::int_ops()[i / n].name << " element " << i % n;
  EXPECT_EQ(wide.download(), interp_wide);
  for (int i = 0; i < n; ++i) EXPECT_EQ(interp_wide[i], std::int64_t{a[i]} * b[i]);
}

// Two stages in turn on the GPU: each read waits for its own stage's group of copies while the other's
// stays in flight (double_buffer_program); a wait for too few groups would read stale blocks.
TEST_F(Gpu, TwoStagesInTurnLandBeforeTheirReads) {
  Kernel<&test::double_buffer_program> k("gpu_double_buffer", KernelOptions{2, {"in", "out", "n"}});
  for (int n : {1, 7, 5000})
    for (int programs : {1, 3, 132, 6000}) {
      SCOPED_TRACE(std::to_string(n) + " blocks, " + std::to_string(programs) + " programs");
      std::vector<float> x(static_cast<std::size_t>(n) * 256);
      std::mt19937 gen(n + programs);
      std::normal_distribution<float> dist;
      for (float& v : x) v = dist(gen);
      DeviceBuffer<float> din(x), dout(x.size());
      dout.fill_bytes(0xff);
      k.launch({{programs}, Backend::gpu}, din, dout, n);
      const auto got = dout.download();
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], 2 * x[i]) << "element " << i;
    }
}

// Cluster reductions inside a loop on the GPU (each alternating between two slots), against float64 and
// the interpreter: clusters of 2 to 8 striding over more rows than they are, as many, and fewer.
TEST_F(Gpu, ClusterReductionsInsideLoops) {
  for (int size : {2, 4, 8}) {
    Kernel<&test::cluster_rows_program> k("gpu_cluster_rows", KernelOptions{1, {"in", "out", "rows", "size"}, 0, size});
    const int rows = 1000;
    std::vector<float> in = test::cluster_rows_input(rows, size);
    const auto expect = test::cluster_rows_expected(in, rows, size);
    DeviceBuffer<float> din(in), dout(expect.size());
    for (int clusters : {1, 132, 1000, 1500}) {
      SCOPED_TRACE(std::to_string(clusters) + " clusters of " + std::to_string(size));
      std::vector<float> interp(expect.size(), std::nanf(""));
      k.launch({{clusters * size}, Backend::interpreter}, in, interp, rows, size);
      dout.fill_bytes(0xff);
      k.launch({{clusters * size}, Backend::gpu}, din, dout, rows, size);
      const auto got = dout.download();
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], expect[i], 1e-5 * (1 + std::abs(expect[i]))) << "element " << i;
        ASSERT_NEAR(got[i], interp[i], 1e-5 * (1 + std::abs(expect[i]))) << "element " << i;
      }
    }
  }
}

// The driver's count of the clusters the GPU holds at once (Program::resident_cluster_programs): a whole
// number of clusters, within the SMs' program slots, at least a cluster per SM's worth over the GPCs; and
// a strided launch of exactly that many programs combines every row, each cluster looping over rows.
TEST_F(Gpu, DriverCountsResidentClusters) {
  const int sms = driver::device().sm_count;
  for (int size : {2, 4, 8}) {
    SCOPED_TRACE("clusters of " + std::to_string(size));
    Kernel<&test::cluster_rows_program> k("gpu_resident_clusters", KernelOptions{1, {"in", "out", "rows", "size"}, 0, size});
    const int rows = 3000;
    std::vector<float> in(static_cast<std::size_t>(rows) * size * 32);
    std::mt19937 gen(size + 10);
    std::normal_distribution<float> dist;
    for (float& x : in) x = dist(gen);
    const auto expect = test::cluster_rows_expected(in, rows, size);
    DeviceBuffer<float> din(in), dout(expect.size());
    const std::int64_t held = k.resident_cluster_programs(Backend::gpu, din, dout, rows, size);
    EXPECT_EQ(held % size, 0);
    EXPECT_LE(held, std::int64_t{32} * sms);  // one-warp blocks: at most 32 an SM
    EXPECT_GE(held, sms / 2);                 // tiny blocks: clusters fill most SMs
    EXPECT_EQ(k.resident_cluster_programs(Backend::gpu, din, dout, rows, size), held);  // asked once, kept
    dout.fill_bytes(0xff);
    k.launch({{held}, Backend::gpu}, din, dout, rows, size);
    const auto got = dout.download();
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expect[i], 1e-5 * (1 + std::abs(expect[i]))) << "element " << i;
  }
  Kernel<&test::cluster_rows_program> single("gpu_resident_single", KernelOptions{1, {"in", "out", "rows", "size"}});
  DeviceBuffer<float> din(std::vector<float>(32, 1.0f)), dout(2);
  EXPECT_EQ(single.resident_cluster_programs(Backend::gpu, din, dout, 1, 1), 0);  // not a cluster kernel
}

// Cluster reductions over resident groups of any size on the GPU (a cooperative launch, the barrier and
// values in global memory), against the interpreter; launched twice, so the barrier words left by one
// launch serve the next; groups striding over rows with reductions inside the loop, against float64; and
// a grid larger than the GPU holds at once is an error, not a hang.
TEST_F(Gpu, ResidentGroupsCombineOnTheGpu) {
  Kernel<&test::group_total_program> k("group_total", test::resident_group_options());
  for (const auto& [programs, group] : {std::pair{24, 3}, {1000, 250}, {1320, 1320}, {4, 1}}) {
    SCOPED_TRACE(std::to_string(programs) + " programs in groups of " + std::to_string(group));
    std::vector<float> in(programs * 32);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 32 + (i / 32) * 100) / 64;
    DeviceBuffer<float> din(in), dout(programs * 2);
    std::vector<float> expect(programs * 2);
    LaunchConfig interp({programs}, Backend::interpreter), gpu({programs}, Backend::gpu);
    interp.group = gpu.group = group;
    k.launch(interp, in, expect);
    for (int run = 0; run < 2; ++run) {
      dout.fill_bytes(0xff);
      k.launch(gpu, din, dout);
      const auto got = dout.download();
      for (int i = 0; i < programs * 2; ++i) ASSERT_NEAR(got[i], expect[i], 1e-5 * std::abs(expect[i])) << "element " << i;
    }
  }
  // Groups striding over rows, two reductions a row inside the loop (a round each): every row of every
  // group, many rounds past the first, and twice, so the next launch starts on the other counts.
  KernelOptions looped{1, {"in", "out", "rows", "size"}};
  looped.resident_groups = true;
  Kernel<&test::cluster_rows_program> rows_k("cluster_rows_groups", looped);
  for (const auto& [groups, size, rows] : {std::tuple{3, 5, 301}, {66, 12, 1000}, {1, 1320, 9}}) {
    SCOPED_TRACE(std::to_string(groups) + " groups of " + std::to_string(size) + " over " + std::to_string(rows) + " rows");
    std::vector<float> in(static_cast<std::size_t>(rows) * size * 32);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 7919) % 1000) / 250 - 2;
    const auto expect = test::cluster_rows_expected(in, rows, size);
    DeviceBuffer<float> din(in), dout(expect.size());
    LaunchConfig gpu({groups * size}, Backend::gpu);
    gpu.group = size;
    for (int run = 0; run < 2; ++run) {
      dout.fill_bytes(0xff);
      rows_k.launch(gpu, din, dout, rows, size);
      const auto got = dout.download();
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expect[i], 1e-4 * (1 + std::abs(expect[i]))) << "element " << i;
    }
  }
  DeviceBuffer<float> din(100000 * 32), dout(100000 * 2);
  LaunchConfig too_many({100000}, Backend::gpu);
  too_many.group = 100;
  try {
    k.launch(too_many, din, dout);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'group_total' combines over resident groups, so all its programs must run at once: "
                                         "expected a grid of at most"),
              std::string::npos) << e.what();
  }
}

TEST_F(Gpu, HostMemoryOnGpuIsAClearError) {
  std::vector<float> x(16), y(16);
  try {
    kernels::softmax(x, y, 1, 16, {Backend::gpu});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument 0 (in)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
}

TEST_F(Gpu, InterpreterRunsOnDeviceBuffers) {
  const std::int64_t rows = 5, cols = 300;
  auto host = reference::random_vector<float>(rows * cols, fresh_seed());
  DeviceBuffer<float> x(host), y(rows * cols);
  y.fill_bytes(0xff);
  kernels::softmax(x, y, rows, cols, {Backend::interpreter});
  EXPECT_LE(reference::relative_error<float>(y.download(), reference::softmax<float>(host, rows, cols)), 1e-5);
}

// Loads and stores with cache hints (streaming vector runs, L2-only scalars and masked elements) write
// what the interpreter and float64 do, at a ragged row length (element by element) and a whole one.
TEST_F(Gpu, CacheHintedAccessesMatchTheInterpreter) {
  Kernel<&testkit::hinted_copy_program<1024>> k("hinted_copy", KernelOptions{4, {"x", "h", "y", "h_out", "sums", "n"}});
  for (int n : {1000, 1024}) {
    const int rows = 67, block = 1024;
    const auto seed = std::random_device{}();
    SCOPED_TRACE("n " + std::to_string(n) + " seed " + std::to_string(seed));
    auto hx = reference::random_vector<float>(rows * n, seed);
    auto hh = reference::random_vector<bfloat16>(rows * block, seed + 1);
    DeviceBuffer<float> x(hx), y(rows * n), sums(rows);
    DeviceBuffer<bfloat16> h(hh), h_out(rows * block);
    y.fill_bytes(0xff);
    sums.fill_bytes(0xff);
    h_out.fill_bytes(0xff);
    k.launch({{rows}, Backend::gpu}, x, h, y, h_out, sums, n);
    std::vector<float> iy(hx.size(), std::nanf("")), isums(rows, std::nanf(""));
    std::vector<bfloat16> ih(hh.size());
    k.launch({{rows}, Backend::interpreter}, hx, hh, iy, ih, isums, n);
    std::vector<double> y_ref, sums_ref;
    testkit::hinted_copy_reference(hx, hh, rows, n, block, y_ref, sums_ref);
    const auto gy = y.download(), gsums = sums.download();
    const auto gh = h_out.download();
    EXPECT_LE(reference::worst_element<float>(gy, y_ref, 1e-6, 1e-6), 1.0);
    EXPECT_LE(reference::worst_element<float>(gsums, sums_ref, 1e-4, 1e-5), 1.0);
    for (std::size_t i = 0; i < gy.size(); ++i) ASSERT_EQ(gy[i], iy[i]) << "y[" << i << "]";
    for (std::size_t i = 0; i < gh.size(); ++i) ASSERT_EQ(reference::to_float(gh[i]), reference::to_float(hh[i])) << "h_out[" << i << "]";
  }
}

TEST_F(Gpu, StageSemanticsMatchTheInterpreter) {
  // Copies, stores and loads, inside and across the stage's bounds, owned and read across threads.
  Kernel<&testkit::stage_program> k("stage", KernelOptions{2, {"x", "y", "z", "n", "at"}});
  const auto hx = reference::random_vector<float>(256, 17);
  DeviceBuffer<float> x(hx), y(256), z(128);
  for (int n : {0, 100, 256})
    for (int at : {0, 64, 256, 384, 448, 512, -64, 3}) {
      SCOPED_TRACE("n " + std::to_string(n) + " at " + std::to_string(at));
      y.fill_bytes(0xff);
      z.fill_bytes(0xff);
      k.launch({{1}, Backend::gpu}, x, y, z, n, at);
      std::vector<double> ry, rz;
      testkit::stage_reference(hx, n, at, ry, rz);
      const auto gy = y.download(), gz = z.download();
      for (int i = 0; i < 256; ++i) ASSERT_EQ(gy[i], static_cast<float>(ry[i])) << "y[" << i << "]";
      for (int j = 0; j < 128; ++j) ASSERT_EQ(gz[j], static_cast<float>(rz[j])) << "z[" << j << "]";
    }
}

// x's elements below n copied into a stage under `index < n` and the stage stored whole to y: y is x below
// n and 0 from n. One warp holds 256 elements as runs of 16 bytes (4 floats, 8 halves), so n from 0 to 40
// ends the mask at every lane of a run: a run partly in the mask reads exactly its lanes in it
// (tf_copy_async_prefix), asynchronously where they fill 4-byte words.
template <class T>
void prefix_copy_program(tl::Ptr<T> x, tl::Ptr<T> y, tl::Scalar<tl::i32> n) {
  auto idx = tl::arange<256>();
  tl::Stage<T, 256> stage;
  stage.copy(0, x + idx, idx < n);
  tl::store(y + idx, stage.template load<256>(0));
}

template <class H>
void check_prefix_copies() {
  Kernel<&prefix_copy_program<tl::dtype_of_host_t<H>>> k("prefix_copy", KernelOptions{1, {"x", "y", "n"}});
  for (int n = 0; n <= 40; ++n) {
    SCOPED_TRACE("n " + std::to_string(n) + ", " + std::to_string(sizeof(H)) + "-byte elements");
    // x holds n elements (one for n = 0): a read past the mask's end reads past the allocation, which
    // compute-sanitizer's memcheck names (bench/sanitize_gpu.sh runs this tier under it).
    const auto hx = reference::random_vector<H>(std::max(n, 1), 40 + n);
    DeviceBuffer<H> x(hx), y(256);
    y.fill_bytes(0xff);
    k.launch({{1}, Backend::gpu}, x, y, n);
    const auto gy = y.download();
    const H zero = reference::from_float<H>(0.f);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(std::memcmp(&gy[i], i < n ? &hx[i] : &zero, sizeof(H)), 0) << "y[" << i << "] = " << reference::to_float(gy[i]);
  }
}

TEST_F(Gpu, PrefixCopiesReadExactlyTheirMask) {
  check_prefix_copies<float>();
  check_prefix_copies<half>();
}

TEST_F(Gpu, StageCopiesInProgramsWith2DTilesMatchTheReference) {
  // Runs partly in the mask go element by element; runs partly outside the stage are dropped.
  Kernel<&testkit::stage_copy_2d_program> k("stage_copy_2d", KernelOptions{2, {"x", "y", "w", "n", "at"}});
  const auto hx = reference::random_vector<float>(256, 27);
  DeviceBuffer<float> x(hx), y(512), w(256);
  for (int n : {0, 99, 100, 256})
    for (int at : {0, 64, 256, 384, 448, 512, -64, 3, 510}) {
      SCOPED_TRACE("n " + std::to_string(n) + " at " + std::to_string(at));
      y.fill_bytes(0xff);
      w.fill_bytes(0xff);
      k.launch({{1}, Backend::gpu}, x, y, w, n, at);
      const auto ref = testkit::stage_copy_2d_reference(hx, n, at);
      const auto gy = y.download(), gw = w.download();
      for (int i = 0; i < 512; ++i) ASSERT_EQ(gy[i], static_cast<float>(ref[i])) << "y[" << i << "]";
      for (int i = 0; i < 256; ++i) ASSERT_EQ(gw[i], hx[i]) << "w[" << i << "]";
    }
}

TEST_F(Gpu, StageGatherAndScatterMatchTheInterpreter) {
  // Offsets per lane, past the stage's ends, masked; in a 1D program and in one with 2D tiles.
  Kernel<&testkit::gather_1d_program> g("gather_1d", KernelOptions{4, {"x", "y", "n", "at"}});
  const auto hx = reference::random_vector<float>(256, 18);
  DeviceBuffer<float> x(hx), y(256);
  for (int at : {0, 7, -9, 300})
    for (int n : {0, 100, 256}) {
      y.fill_bytes(0xff);
      g.launch({{1}, Backend::gpu}, x, y, n, at);
      const auto ref = testkit::gather_1d_reference(hx, n, at);
      const auto gy = y.download();
      for (int i = 0; i < 256; ++i) ASSERT_EQ(gy[i], static_cast<float>(ref[i])) << "at " << at << " n " << n << " y[" << i << "]";
    }
  Kernel<&testkit::gather_2d_program<16, 32>> t("gather_2d", KernelOptions{4, {"x", "y", "z", "at"}});
  const auto hx2 = reference::random_vector<float>(512, 19);
  DeviceBuffer<float> x2(hx2), y2(512), z2(512);
  for (int at : {0, 5, -3}) {
    y2.fill_bytes(0xff);
    z2.fill_bytes(0xff);
    t.launch({{1}, Backend::gpu}, x2, y2, z2, at);
    std::vector<double> ry, rz;
    testkit::gather_2d_reference(hx2, 16, 32, at, ry, rz);
    const auto gy = y2.download(), gz = z2.download();
    for (int i = 0; i < 512; ++i) ASSERT_EQ(gy[i], static_cast<float>(ry[i])) << "at " << at << " y[" << i << "]";
    for (int i = 0; i < 512; ++i) ASSERT_EQ(gz[i], static_cast<float>(rz[i])) << "at " << at << " z[" << i << "]";
  }
}

// Half tiles moved unchanged (a load only stored; a load only scattered to a stage, gathered back and
// only stored): held as their storage words, so every bit pattern comes back as it went, NaN payloads,
// signed zeros, infinities and subnormals included, and `other` where the mask is off.
template <class T, int R, int C>
void words_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Ptr<T> out2, tl::Scalar<tl::i32> n) {
  auto at = tl::arange<R>()(tl::all, tl::none) * C + tl::arange<C>()(tl::none, tl::all);
  auto mask = at < n;
  tl::store(out + at, tl::load(in + at, mask, 1.5));
  tl::Stage<T, R * C> stage;
  stage.scatter(at, tl::load(in + at, mask, -2.5));
  tl::store(out2 + at, stage.gather(at));
}

template <class H>
void check_words() {
  constexpr int R = 16, C = 64;
  std::vector<H> x(R * C);
  std::mt19937 gen(std::random_device{}());
  std::vector<std::uint16_t> bits(R * C);
  for (auto& b : bits) b = static_cast<std::uint16_t>(gen());
  const std::uint16_t specials[] = {0x8000, 0x0000, 0x0001, 0x7c00, 0xfc00, 0x7e01, 0x7f81, 0xffff, 0x7fff, 0x03ff};
  for (std::size_t i = 0; i < std::size(specials); ++i) bits[i * 7] = specials[i];
  std::memcpy(x.data(), bits.data(), bits.size() * 2);
  DeviceBuffer<H> din(x), out(R * C), out2(R * C);
  Kernel<&words_program<tl::dtype_of_host_t<H>, R, C>> k("words", KernelOptions{4, {"in", "out", "out2", "n"}});
  const int n = R * C - 77;
  out.fill_bytes(0xff);
  out2.fill_bytes(0xff);
  k.launch({{1}, Backend::gpu}, din, out, out2, n);
  EXPECT_NE(k.program().cuda_source(k.program().default_specialization()).find("storage words, stored as read"), std::string::npos);
  const auto g = out.download(), g2 = out2.download();
  std::vector<std::uint16_t> gb(R * C), gb2(R * C);
  std::memcpy(gb.data(), g.data(), gb.size() * 2);
  std::memcpy(gb2.data(), g2.data(), gb2.size() * 2);
  const std::uint16_t other = std::bit_cast<std::uint16_t>(reference::from_float<H>(1.5f)), other2 = std::bit_cast<std::uint16_t>(reference::from_float<H>(-2.5f));
  for (int i = 0; i < R * C; ++i) {
    ASSERT_EQ(gb[i], i < n ? bits[i] : other) << "out[" << i << "]";
    ASSERT_EQ(gb2[i], i < n ? bits[i] : other2) << "out2[" << i << "]";
  }
}

TEST_F(Gpu, HalfTilesMovedUnchangedKeepEveryBit) {
  check_words<half>();
  check_words<bfloat16>();
}

template <class H>
void check_epilogue(std::int64_t rows, std::int64_t cols, float p) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("epilogue " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed), hr = reference::random_vector<H>(n, seed + 1);
  auto hb = reference::random_vector<H>(cols, seed + 2);
  DeviceBuffer<H> x(hx), r(hr), b(hb), y(n), y2(n), t1(n), t2(n);
  y.fill_bytes(0xff);
  y2.fill_bytes(0xff);
  const kernels::DropoutParams d{p, static_cast<std::int64_t>(seed), 777};
  kernels::epilogue(x, b, r, y, rows, cols, d, {Backend::gpu});
  kernels::epilogue_unfused(x, b, r, y2, t1, t2, rows, cols, d, {Backend::gpu});
  const auto gpu = y.download();
  const auto ref = reference::epilogue<H>(hx, hb, hr, rows, cols, p, d.seed, d.offset);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 4 * tol, 4 * tol), 1.0);
  EXPECT_LE(reference::relative_error<H>(y2.download(), ref), 4 * tol);
}

TEST_F(Gpu, EpilogueDropsTheSameElementsAsTheInterpreter) {
  // x = 1, bias = 0, residual = 0: a kept element is gelu(1) / (1 - p) > 0, a dropped one is exactly 0.
  const std::int64_t rows = 300, cols = 1000;
  const std::size_t n = rows * cols;
  std::vector<float> hx(n, 1.f), hr(n, 0.f), hb(cols, 0.f), interp(n, -1.f);
  DeviceBuffer<float> x(hx), r(hr), b(hb), y(n);
  y.fill_bytes(0xff);
  const kernels::DropoutParams d{0.3f, static_cast<std::int64_t>(fresh_seed() >> 1), 5};
  kernels::epilogue(x, b, r, y, rows, cols, d, {Backend::gpu});
  kernels::epilogue(hx, hb, hr, interp, rows, cols, d, {Backend::interpreter});
  const auto gpu = y.download();
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(gpu[i] == 0.f, interp[i] == 0.f) << "element " << i;
    dropped += gpu[i] == 0.f;
  }
  EXPECT_NEAR(static_cast<double>(dropped) / n, 0.3, 0.01);
}

TEST_F(Gpu, EpilogueMatchesInterpreterAndFloat64) {
  for (std::int64_t cols : {1, 7, 768, 1000, 4096, 16384}) check_epilogue<float>(33, cols, 0.1f);
  check_epilogue<bfloat16>(64, 4096, 0.2f);
  check_epilogue<half>(64, 3000, 0.5f);
}

}  // namespace
