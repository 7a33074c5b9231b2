// Launch-time checks that name the kernel, the argument, what was expected and what came; driver
// behaviour without a GPU.
#include <gtest/gtest.h>

#include "backend/driver/driver.hpp"
#include "dsl/tl.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;

namespace {

void scale(tl::Ptr<tl::f32> x, tl::Scalar<tl::f32> s, tl::Scalar<tl::i32> n) {
  auto i = tl::arange<32>();
  tl::store(x + i, tl::load(x + i, i < n) * s, i < n);
}

// scale after waiting for the kernel before it on the stream (a launch with LaunchConfig::pdl).
void scale_after_wait(tl::Ptr<tl::f32> x, tl::Scalar<tl::f32> s, tl::Scalar<tl::i32> n) {
  tl::gdc_launch_dependents();
  tl::gdc_wait();
  scale(x, s, n);
}

using test::message_of;

}  // namespace

TEST(Runtime, I32ArgumentOutOfRangeIsNamed) {
  Kernel<&scale> k("scale", {.num_warps = 1, .param_names = {"x", "s", "n"}});
  std::vector<float> x(32, 1.0f);
  const std::string m = message_of([&] { k.launch({{1}, Backend::interpreter}, x, 2.0f, std::int64_t{1} << 40); });
  EXPECT_NE(m.find("kernel 'scale', argument 2 (n): expected an i32, got 1099511627776"), std::string::npos) << m;
}

TEST(Runtime, BadGridIsNamed) {
  Kernel<&scale> k("scale", {.num_warps = 1});
  std::vector<float> x(32, 1.0f);
  const std::string m = message_of([&] { k.launch({{0}, Backend::interpreter}, x, 2.0f, 32); });
  EXPECT_NE(m.find("kernel 'scale': grid (0, 1, 1)"), std::string::npos) << m;
}

TEST(Runtime, BadWarpCountIsNamed) {
  const std::string m = message_of([] { Kernel<&scale> k("scale", {.num_warps = 3}); });
  EXPECT_NE(m.find("kernel 'scale': num_warps must be a power of two from 1 to 32, got 3"), std::string::npos) << m;
}

TEST(Runtime, InterpreterRunsScalarsAndMasks) {
  Kernel<&scale> k("scale", {.num_warps = 1});
  std::vector<float> x(32, 1.5f);
  k.launch({{1}, Backend::interpreter}, x, 2.0f, 20);
  EXPECT_EQ(x[19], 3.0f);
  EXPECT_EQ(x[20], 1.5f);
}

TEST(Runtime, OverlappingLaunchNeedsAProgramThatWaits) {
  // A launch that may start before the previous kernel ends, of a program that never waits for it, could
  // read what that kernel has not written yet: refused, naming the kernel and what is missing.
  Kernel<&scale> k("scale", {.num_warps = 1});
  std::vector<float> x(32, 1.5f);
  LaunchConfig overlap({1}, Backend::interpreter);
  overlap.pdl = true;
  const std::string m = message_of([&] { k.launch(overlap, x, 2.0f, 20); });
  EXPECT_NE(m.find("kernel 'scale': a launch with LaunchConfig::pdl may start before the previous kernel ends, and this "
                   "program never calls tl::gdc_wait"),
            std::string::npos)
      << m;
  EXPECT_EQ(x[0], 1.5f);
  // One that waits runs (in the interpreter, launches run one after another: the wait is a no-op).
  Kernel<&scale_after_wait> w("scale_after_wait", {.num_warps = 1});
  w.launch(overlap, x, 2.0f, 20);
  EXPECT_EQ(x[19], 3.0f);
  EXPECT_EQ(x[20], 1.5f);
  const std::string src = w.program().cuda_source(w.program().default_specialization());
  EXPECT_LT(src.find("  tf_gdc_launch_dependents();\n"), src.find("  tf_gdc_wait();\n"));
  EXPECT_NE(src.find("  tf_gdc_wait();\n"), std::string::npos);
  EXPECT_NE(src.find("griddepcontrol.wait"), std::string::npos);
}

TEST(Runtime, NoGpuIsAClearMessageNotACrash) {
  std::string why;
  if (driver::available(&why)) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  const std::string m = message_of([] { DeviceBuffer<float> b(16); });
  EXPECT_NE(m.find("no GPU available"), std::string::npos) << m;
}

TEST(Runtime, GpuLaunchOfHostMemoryIsNamed) {
  std::vector<float> x(4096), y(4096);
  const std::string m = message_of([&] { kernels::softmax(x, y, 1, 4096, {Backend::gpu}); });
  EXPECT_NE(m.find("kernel 'softmax_4096', argument 0 (in): expected device memory (a DeviceBuffer or DeviceView) for a GPU launch, got host memory"),
            std::string::npos) << m;
}
