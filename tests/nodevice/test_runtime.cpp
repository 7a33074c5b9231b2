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
