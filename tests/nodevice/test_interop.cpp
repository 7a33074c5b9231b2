// Memory the caller owns, without a GPU: DeviceView's checks, read-only (const) arguments in the
// interpreter, every DLPack rejection, and inspecting the exact kernel a launch would run.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include <cstdlib>

#include "dsl/tl.hpp"
#include "kernels/matmul/matmul.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/text.hpp"
#ifdef TILEFUSE_HAVE_DLPACK
#include "backend/runtime/dlpack.hpp"
#endif

using namespace tilefuse;

namespace {

// out[i] = 2 * in[i] over n elements; `in` is read-only.
void twice(tl::Ptr<const tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * 256 + tl::arange<256>();
  tl::store(out + i, tl::load(in + i, i < n) * 2.0f, i < n);
}

// in[i] *= s over n elements.
void scale_by(tl::Ptr<tl::f32> in, tl::Scalar<tl::f32> s, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * 256 + tl::arange<256>();
  tl::store(in + i, tl::load(in + i, i < n) * s, i < n);
}

using test::message_of;

Kernel<&twice>& twice_kernel() {
  static Kernel<&twice> k("twice", {.num_warps = 2, .param_names = {"in", "out", "n"}});
  return k;
}

}  // namespace

TEST(DeviceView, ChecksItsAddressCountAndStride) {
  EXPECT_NE(message_of([] { DeviceView<float>(std::uint64_t{0}, 4); }).find("null device address"), std::string::npos);
  EXPECT_NE(message_of([] { DeviceView<float>(std::uint64_t{0x1002}, 4); }).find("not aligned to its 4-byte elements"),
            std::string::npos);
  auto* p = reinterpret_cast<float*>(std::uintptr_t{0x10000});
  EXPECT_NE(message_of([&] { DeviceView<float>(p, 8, 8); }).find("elements 8 bytes apart"), std::string::npos);
  const DeviceView<float> v(p, 8, sizeof(float));
  EXPECT_EQ(v.device_ptr(), 0x10000u);
  EXPECT_EQ(v.bytes(), 32u);
  const DeviceView<float> tail = v.subview(6, 2);
  EXPECT_EQ(tail.device_ptr(), 0x10000u + 24);
  EXPECT_NE(message_of([&] { v.subview(6, 3); }).find("subview of elements [6, 9) of a view of 8"), std::string::npos);
  const DeviceView<const float> read_only = v;  // writable views convert to read-only ones, not back
  EXPECT_EQ(read_only.size(), 8u);
  static_assert(!std::is_convertible_v<DeviceView<const float>, DeviceView<float>>);
  EXPECT_EQ(DeviceView<float>().size(), 0u);
}

TEST(ReadOnly, ConstHostMemoryRunsInTheInterpreter) {
  const std::vector<float> in = {1, 2, 3, 4, 5};
  std::vector<float> out(5, -1.0f), out2(5, -1.0f);
  twice_kernel().launch({{1}, Backend::interpreter}, in, out, 5);
  twice_kernel().launch({{1}, Backend::interpreter}, std::span<const float>(in), out2, 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(out[i], 2.0f * in[i]);
    EXPECT_EQ(out2[i], 2.0f * in[i]);
  }
}

TEST(ReadOnly, ReadOnlyParametersAreConstInTheGeneratedSignature) {
  const std::string cuda = twice_kernel().program().cuda_source(twice_kernel().program().default_specialization());
  EXPECT_NE(cuda.find("(const float* a_in, float* a_out, int a_n)"), std::string::npos) << cuda;
}

// ---- inspecting your own kernel ----

TEST(Inspect, ShowsTheSpecializationALaunchCompiles) {
  // A launch over 1000 elements: n is divisible by 8, not 16; the default specialization assumes 16.
  auto* base = reinterpret_cast<float*>(std::uintptr_t{0x200000});
  const DeviceView<const float> in(base, 1000);
  const DeviceView<float> out(base + 1024, 1000);
  Program& p = twice_kernel().program();
  const Inspection i = twice_kernel().inspect({{4}, Backend::gpu}, in, out, 1000);
  EXPECT_EQ(i.key, "in:align16 out:align16 n:div8");
  const Arg args[] = {Arg::device_memory_of(ir::DType::f32, in.device_ptr(), 1000),
                      Arg::device_memory_of(ir::DType::f32, out.device_ptr(), 1000), Arg::of_i32(1000)};
  const Specialization spec = p.specialize({{4}, Backend::gpu}, args);
  EXPECT_EQ(i.spec, spec);
  EXPECT_EQ(i.key, p.describe(spec));
  EXPECT_TRUE(i.cuda == p.cuda_source(spec));
  EXPECT_NE(p.describe(p.default_specialization()), i.key);  // cuda_source's default assumes n divisible by 16
  EXPECT_NE(i.ptx.find(".entry"), std::string::npos);
  EXPECT_GT(i.compiled.registers, 0);
  EXPECT_EQ(i.compiled.spill_bytes, 0);
  EXPECT_EQ(i.cache_key.size(), 32u);
  EXPECT_NE(i.text().find("specialization: in:align16 out:align16 n:div8"), std::string::npos);
  EXPECT_EQ(i.grid.x, 4);
  EXPECT_EQ(i.grid_text(), "4 programs");
  EXPECT_NE(i.text().find("grid: 4 programs\n"), std::string::npos);
  // An output at an address aligned to 4 bytes only: another key, and the reason names the argument.
  const DeviceView<float> shifted(base + 1025, 1000);
  const Inspection j = twice_kernel().inspect({{4}, Backend::gpu}, in, shifted, 1000);
  EXPECT_EQ(j.key, "in:align16 out:align4 n:div8");
  EXPECT_TRUE(j.cuda != i.cuda);  // the stores lose their 16-byte runs
}

TEST(Inspect, ConstantParamsCompileTheirLaunchValueIn) {
  // KernelOptions::constant_params: n's value is compiled into the kernel, one specialization per value.
  static Kernel<&twice> k("twice_n", {.num_warps = 2, .param_names = {"in", "out", "n"}, .constant_params = {"n"}});
  auto* base = reinterpret_cast<float*>(std::uintptr_t{0x200000});
  const DeviceView<const float> in(base, 1000);
  const DeviceView<float> out(base + 1024, 1000);
  const Inspection i = k.inspect({{4}, Backend::gpu}, in, out, 1000);
  EXPECT_EQ(i.key, "in:align16 out:align16 n=1000");
  EXPECT_NE(i.cuda.find("int const v2 = 1000 /* compiled in */;"), std::string::npos) << i.cuda;
  EXPECT_EQ(i.cuda.find("= a_n;"), std::string::npos);
  EXPECT_NE(i.cuda.find("int a_n)"), std::string::npos);  // the launch still passes it
  EXPECT_EQ(i.compiled.spill_bytes, 0);
  const Inspection j = k.inspect({{4}, Backend::gpu}, in, out, 999);
  EXPECT_EQ(j.key, "in:align16 out:align16 n=999");
  EXPECT_NE(j.cache_key, i.cache_key);
  EXPECT_NE(j.spec, i.spec);
  EXPECT_EQ(k.inspect({{4}, Backend::gpu}, in, out, 1000).cuda, i.cuda);
  // The most negative i32 is a literal NVRTC takes (no element is in the mask).
  const Inspection lowest = k.inspect({{4}, Backend::gpu}, in, out, std::numeric_limits<std::int32_t>::min());
  EXPECT_NE(lowest.cuda.find("(-2147483647 - 1) /* compiled in */"), std::string::npos);
  EXPECT_GT(lowest.compiled.registers, 0);
  // The interpreter reads the argument as always.
  const std::vector<float> host_in = {1, 2, 3, 4, 5};
  std::vector<float> host_out(5, -1.0f);
  k.launch({{1}, Backend::interpreter}, host_in, host_out, 3);
  EXPECT_EQ(host_out, (std::vector<float>{2, 4, 6, -1, -1}));
}

TEST(Inspect, ConstantParamsNameIntegerScalars) {
  for (const char* name : {"m", "in", "s"}) {
    const std::string m = message_of([&] {
      Kernel<&scale_by> k("scale_by", {.param_names = {"in", "s", "n"}, .constant_params = {name}});
    });
    EXPECT_NE(m.find(std::string("kernel 'scale_by': constant_params names '") + name +
                     "', expected one of its integer scalar parameters (n)"),
              std::string::npos)
        << m;
  }
}

TEST(Inspect, CapturesWhatALibraryCallWouldLaunch) {
  // softmax_auto on 4 rows of 1000 halves, as the GPU would run it, with no GPU and no memory touched.
  auto* base = reinterpret_cast<half*>(std::uintptr_t{0x400000});
  DeviceView<half> x(base, 4000), y(base + 4096, 4000);
  std::vector<Inspection> launches;
  {
    InspectLaunches capture;
    kernels::softmax_auto(x, y, 4, 1000, kernels::RowOptions{Backend::gpu});
    launches = capture.launches();
  }
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_NE(launches[0].key.find(":div8"), std::string::npos) << launches[0].key;
  EXPECT_NE(launches[0].cuda.find("__global__"), std::string::npos);
  EXPECT_EQ(InspectLaunches::active(), nullptr);
}

// ---- DLPack ----

#ifdef TILEFUSE_HAVE_DLPACK
namespace {

struct Tensor {
  std::vector<std::int64_t> shape, strides;
  DLTensor t{};
  Tensor(void* data, DLDeviceType device, DLDataType dtype, std::vector<std::int64_t> s, std::vector<std::int64_t> st = {})
      : shape(std::move(s)), strides(std::move(st)) {
    t.data = data;
    t.device = {device, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
  }
};

DLPackError::Reason reason_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DLPackError& e) {
    return e.reason();
  }
  ADD_FAILURE() << "no DLPackError";
  return DLPackError::Reason::null_tensor;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};

}  // namespace

TEST(DLPack, ViewsCudaTensorsWithoutCopying) {
  void* data = reinterpret_cast<void*>(std::uintptr_t{0x7f0000000000});
  Tensor a(data, kDLCUDA, kF32, {4, 1, 8});
  a.t.byte_offset = 64;
  const DeviceView<float> v = dlpack_view<float>(a.t);
  EXPECT_EQ(v.device_ptr(), 0x7f0000000000u + 64);
  EXPECT_EQ(v.size(), 32u);
  // Explicit compact strides, and any stride on a dimension of extent 1, are contiguous.
  Tensor b(data, kDLCUDAManaged, {kDLBfloat, 16, 1}, {4, 1, 8}, {8, 1000, 1});
  EXPECT_EQ(dlpack_view<const bfloat16>(b.t).size(), 32u);
  DLManagedTensor managed{a.t, nullptr, nullptr};
  EXPECT_EQ(dlpack_view<float>(&managed).size(), 32u);
}

TEST(DLPack, EveryRejectionIsNamed) {
  void* data = reinterpret_cast<void*>(std::uintptr_t{0x7f0000000000});
  using R = DLPackError::Reason;
  EXPECT_EQ(reason_of([] { dlpack_view<float>(static_cast<const DLManagedTensor*>(nullptr)); }), R::null_tensor);
  Tensor cpu(data, kDLCPU, kF32, {8});
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(cpu.t); }), R::device);
  Tensor other_gpu(data, kDLCUDA, kF32, {8});
  other_gpu.t.device.device_id = 1;
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(other_gpu.t); }), R::device);
  Tensor gpu(data, kDLCUDA, kF32, {8});
  EXPECT_EQ(reason_of([&] { dlpack_span<float>(gpu.t); }), R::device);
  EXPECT_EQ(reason_of([&] { dlpack_view<half>(gpu.t); }), R::dtype);
  EXPECT_EQ(reason_of([&] { dlpack_view<std::int32_t>(gpu.t); }), R::dtype);
  Tensor lanes(data, kDLCUDA, {kDLFloat, 32, 4}, {8});
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(lanes.t); }), R::dtype);
  Tensor negative(data, kDLCUDA, kF32, {4, -1});
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(negative.t); }), R::shape);
  Tensor transposed(data, kDLCUDA, kF32, {4, 8}, {1, 4});
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(transposed.t); }), R::not_contiguous);
  Tensor sliced(data, kDLCUDA, kF32, {4, 8}, {16, 1});
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(sliced.t); }), R::not_contiguous);
  Tensor null_data(nullptr, kDLCUDA, kF32, {8});
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(null_data.t); }), R::null_data);
  Tensor offset(data, kDLCUDA, kF32, {8});
  offset.t.byte_offset = 2;
  EXPECT_EQ(reason_of([&] { dlpack_view<float>(offset.t); }), R::byte_offset);
  const std::string m = message_of([&] { dlpack_view<half>(gpu.t); });
  EXPECT_NE(m.find("expected elements of float16, got float32"), std::string::npos) << m;
}

TEST(DLPack, CpuTensorsRunInTheInterpreter) {
  std::vector<float> storage = {9, 1, 2, 3, 4};  // the tensor starts one element in (byte_offset 4)
  std::vector<float> result(4, 0.0f);
  Tensor in(storage.data(), kDLCPU, kF32, {2, 2});
  in.t.byte_offset = sizeof(float);
  Tensor out(result.data(), kDLCPU, kF32, {4});
  twice_kernel().launch({{1}, Backend::interpreter}, dlpack_span<const float>(in.t), dlpack_span<float>(out.t), 4);
  EXPECT_EQ(result, (std::vector<float>{2, 4, 6, 8}));
}
#else
TEST(DLPack, NeedsTheHeader) { GTEST_SKIP() << "dlpack/dlpack.h not found (Debian/Ubuntu: libdlpack-dev)"; }
#endif

// ---- the GPU debug mode's bounds checks, as generated code (the device tier runs them) ----

namespace {

// Sets TILEFUSE_DEBUG_BOUNDS for one scope.
struct DebugBounds {
  DebugBounds() { setenv("TILEFUSE_DEBUG_BOUNDS", "1", 1); }
  ~DebugBounds() { unsetenv("TILEFUSE_DEBUG_BOUNDS"); }
};

// Every kernel a library call launches, inspected (and NVRTC-compiled) with bounds checks.
template <class Call>
std::vector<Inspection> checked_launches(Call call) {
  DebugBounds on;
  InspectLaunches capture;
  call();
  return capture.launches();
}

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(DebugBounds, EveryGlobalAccessOfEveryKindIsChecked) {
  auto* base = reinterpret_cast<float*>(std::uintptr_t{0x400000});
  const DeviceView<const float> in(base, 1000);
  const DeviceView<float> out(base + 1024, 1000);
  {
    DebugBounds on;
    const Inspection i = twice_kernel().inspect({{4}, Backend::gpu}, in, out, 1000);
    EXPECT_NE(i.key.find("bounds_checks"), std::string::npos);
    EXPECT_EQ(count_of(i.cuda, "tf_bounds(v"), 2u) << i.cuda;  // the load and the store
    EXPECT_NE(i.cuda.find("TfCounts tf_counts, TfFault* tf_fault)"), std::string::npos);
    EXPECT_EQ(i.compiled.spill_bytes, 0);
  }
  EXPECT_EQ(twice_kernel().inspect({{4}, Backend::gpu}, in, out, 1000).cuda.find("tf_bounds"), std::string::npos);
  // The sample kernels' paths: vector runs of halves, stage copies (cp.async), split-row partials,
  // 2D loads and stores, and the cp.async copies that feed tensor cores.
  auto* h = reinterpret_cast<bfloat16*>(std::uintptr_t{0x10000000});
  DeviceView<bfloat16> x(h, 64 * 100000), y(h + 64 * 100000, 64 * 100000);
  const auto staged = checked_launches([&] { kernels::softmax_staged(x, y, 64, 100000, kernels::RowOptions{Backend::gpu}); });
  ASSERT_FALSE(staged.empty());
  for (const auto& l : staged) EXPECT_GT(count_of(l.cuda, "tf_bounds("), 0u) << l.kernel;
  DeviceView<bfloat16> a(h, 1000 * 1000), b(h + 1024 * 1024, 1000 * 1000), bias(h + 2048 * 1024, 1000), c(h + 3072 * 1024, 1000 * 1000);
  const auto mm = checked_launches([&] { kernels::matmul(a, b, bias, c, 1000, 1000, 1000, kernels::MatmulEpilogue::gelu, {Backend::gpu}); });
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_GE(count_of(mm[0].cuda, "tf_bounds("), 4u);  // A and B copies, the bias load, the C store
  EXPECT_NE(mm[0].cuda.find("tf_cp16(tf_sbase"), std::string::npos);
}
