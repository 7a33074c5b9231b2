// Device tier, faults: an allocation beyond the device's memory, and launches the driver rejects (too many
// threads per block, more dynamic shared memory than a block may have), are named errors, and the process
// goes on launching with right results. (A kernel that faults while it runs, an illegal address, is
// different: CUDA then poisons the context for the whole process; TILEFUSE_DEBUG_BOUNDS=1 finds such
// accesses as a BoundsError instead, tested in test_interop.cpp.)
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

TEST_F(FaultsGpu, LaunchesTheDriverRejectsAreNamedAndTheNextLaunchWorks) {
  Kernel<&add_one> k("add_one_rejected", {.num_warps = 4});
  DeviceBuffer<float> x(std::vector<float>(1000, 1.0f));
  k.launch({{8}, Backend::gpu}, x, 1000);
  void* function = k.program().last_function();
  std::uint64_t address = x.device_ptr();
  std::int32_t n = 1000;
  void* params[] = {&address, &n};
  auto rejected = [&](driver::Dim3 block, unsigned shared, const char* what) {
    try {
      driver::launch(function, {8, 1, 1}, block, shared, nullptr, params, "add_one_rejected");
      driver::synchronize();
      ADD_FAILURE() << what << ": the driver took it";
    } catch (const driver::DriverError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("cuLaunchKernel (kernel 'add_one_rejected') failed: CUDA_ERROR_"), std::string::npos) << what << ": " << m;
    }
  };
  rejected({2048, 1, 1}, 0, "2048 threads per block");
  rejected({128, 1, 1}, 1u << 20, "1 MB of dynamic shared memory");
  k.launch({{8}, Backend::gpu}, x, 1000);
  for (float v : x.download()) ASSERT_EQ(v, 3.0f);  // the rejected launches wrote nothing
}

}  // namespace
