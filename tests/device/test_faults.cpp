// Device tier, faults: an allocation beyond the device's memory is a named error, and the process goes on
// launching.
#include <gtest/gtest.h>

#include "backend/driver/driver.hpp"
#include "dsl/tl.hpp"
#include "tests/common/gpu.hpp"

namespace {

using namespace tilefuse;
using FaultsGpu = test::Gpu;

void add_one(tl::Ptr<tl::f32> x, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * 128 + tl::arange<128>();
  tl::store(x + i, tl::load(x + i, i < n, 0.0f) + 1.0f, i < n);
}

TEST_F(FaultsGpu, AllocationBeyondDeviceMemoryIsNamedAndTheProcessGoesOn) {
  const std::size_t too_much = driver::device().total_memory * 2;
  try {
    DeviceBuffer<float> huge(too_much / sizeof(float));
    ADD_FAILURE() << "allocated " << too_much << " bytes";
  } catch (const driver::DriverError& e) {
    EXPECT_NE(std::string(e.what()).find("cuMemAlloc"), std::string::npos) << e.what();
  }
  Kernel<&add_one> k("add_one_after_oom", {.num_warps = 4});
  DeviceBuffer<float> x(std::vector<float>(1000, 1.0f));
  k.launch({{8}, Backend::gpu}, x, 1000);
  for (float v : x.download()) ASSERT_EQ(v, 2.0f);
}

}  // namespace
