// Device tier, concurrency: 16 threads at once trace, compile and launch the same kernel (one shared
// Program) and kernels of their own on the GPU, each on its own stream with its own buffers; every result
// is right and each specialization is compiled once. And resident-group launches from threads sharing a
// stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "backend/cache/cache.hpp"
#include "backend/driver/driver.hpp"
#include "dsl/tl.hpp"
#include "tests/common/gpu.hpp"
#include "tests/common/programs.hpp"

namespace {

using namespace tilefuse;
using ConcurrencyGpu = test::Gpu;

void axpb(tl::Ptr<const tl::f32> x, tl::Ptr<tl::f32> y, tl::Scalar<tl::f32> a, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * 512 + tl::arange<512>();
  tl::store(y + i, tl::load(x + i, i < n, 0.0f) * a + 1.0f, i < n);
}

TEST_F(ConcurrencyGpu, SixteenThreadsLaunchAtOnce) {
  const std::string tag = std::to_string(std::random_device{}());
  Kernel<&axpb> shared("gpu_concurrent_shared_" + tag, {.num_warps = 4});
  const auto before = cache::KernelCache::global().counters();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      try {
        Kernel<&axpb> own("gpu_concurrent_own_" + tag, {.num_warps = 4});
        driver::Stream stream;
        const int n = 100008 + 16 * t;  // 8 x an odd number: the same specialization in every thread
        std::vector<float> host(n);
        for (int i = 0; i < n; ++i) host[i] = float((i * 7 + t) % 101) - 50.0f;
        const DeviceBuffer<float> x(host);
        DeviceBuffer<float> y(n), z(n);
        for (int rep = 0; rep < 20; ++rep) {
          shared.launch({{(n + 511) / 512}, Backend::gpu, stream.handle()}, x, y, float(t), n);
          own.launch({{(n + 511) / 512}, Backend::gpu, stream.handle()}, x, z, 2.0f, n);
        }
        stream.synchronize();
        const auto yh = y.download(), zh = z.download();
        for (int i = 0; i < n; ++i)
          if (yh[i] != std::fma(host[i], float(t), 1.0f) && yh[i] != host[i] * float(t) + 1.0f) ++wrong;
        for (int i = 0; i < n; ++i)
          if (zh[i] != host[i] * 2.0f + 1.0f) ++wrong;
      } catch (const std::exception& e) {
        ++wrong;
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  // Two kernels (the shared one and the threads' own, equal sources), one specialization each.
  EXPECT_EQ(cache::KernelCache::global().counters().compiles - before.compiles, 2u);
  EXPECT_EQ(shared.program().specializations().size(), 1u);
}

// Resident groups from several host threads on one stream: each launch takes the workspace's next array
// of arrival counts in the order the launches reach the stream, so every reduction waits for its whole
// group and every result is right.
TEST_F(ConcurrencyGpu, ResidentGroupsFromThreadsSharingAStream) {
  Kernel<&test::group_total_program> k("gpu_concurrent_groups", test::resident_group_options());
  driver::Stream stream;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      try {
        const int programs = 96 + 24 * t, group = 24;
        std::vector<float> host(programs * 32);
        for (std::size_t i = 0; i < host.size(); ++i) host[i] = float((i * 5 + t) % 64);
        DeviceBuffer<float> in(host);
        DeviceBuffer<float> out(programs * 2);
        LaunchConfig config({programs}, Backend::gpu, stream.handle());
        config.group = group;
        for (int rep = 0; rep < 20; ++rep) k.launch(config, in, out);
        stream.synchronize();
        const auto got = out.download();
        for (int p = 0; p < programs; ++p) {
          double sum = 0, top = 0;
          for (int q = p / group * group; q < (p / group + 1) * group; ++q)
            for (int i = 0; i < 32; ++i) {
              sum += host[q * 32 + i];
              top = std::max<double>(top, host[q * 32 + i]);
            }
          if (got[2 * p] != float(sum) || got[2 * p + 1] != float(top)) ++wrong;
        }
      } catch (const std::exception& e) {
        ++wrong;
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
