// Device tier, faults: an allocation beyond the device's memory, launches the driver rejects (too many
// threads per block, more dynamic shared memory than a block may have) and stages larger than a block's
// shared memory are named errors, and the process goes on launching with right results. (A kernel that
// faults while it runs, an illegal address, is different: CUDA then poisons the context for the whole
// process; TILEFUSE_DEBUG_BOUNDS=1 finds such accesses as a BoundsError instead, tested in
// test_interop.cpp.)
#include <gtest/gtest.h>

#include "backend/cache/cache.hpp"
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

// A stage of 256 KB: more shared memory than a thread block of any sm_80+ GPU may have.
void oversized_stage(tl::Ptr<tl::f32> x) {
  tl::Stage<tl::f32, 65536> stage;
  auto i = tl::arange<128>();
  stage.scatter(i, tl::load(x + i));
  tl::store(x + i, stage.gather(i) + 1.0f);
}

TEST_F(FaultsGpu, StagesBeyondABlocksSharedMemoryAreNamedBeforeTheyCompile) {
  Kernel<&oversized_stage> k("oversized_stage", {.num_warps = 4});
  DeviceBuffer<float> x(std::vector<float>(128, 1.0f));
  const cache::Counters before = cache::KernelCache::global().counters();
  try {
    k.launch({{1}, Backend::gpu}, x);
    ADD_FAILURE() << "a 256 KB stage launched";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kernel 'oversized_stage': its stages take "), std::string::npos) << m;
    EXPECT_NE(m.find("bytes of shared memory per thread block, more than the "), std::string::npos) << m;
    EXPECT_NE(m.find("use smaller stages"), std::string::npos) << m;
  }
  const cache::Counters after = cache::KernelCache::global().counters();
  EXPECT_EQ(after.compiles, before.compiles) << "compiled before the check";
  EXPECT_EQ(after.memory_hits + after.disk_hits, before.memory_hits + before.disk_hits) << "fetched before the check";
  Kernel<&add_one> next("add_one_after_stage", {.num_warps = 4});
  next.launch({{8}, Backend::gpu}, x, 128);
  for (float v : x.download()) ASSERT_EQ(v, 2.0f);
}

}  // namespace
