// Concurrency without a GPU: 16 threads at once trace, specialize, compile (through the shared in-memory
// and disk cache) and run in the interpreter the same and different kernels; every specialization is
// compiled exactly once and every result is right. The ThreadSanitizer build of this tier (CI) checks
// the same runs for data races.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "backend/cache/cache.hpp"
#include "dsl/tl.hpp"

using namespace tilefuse;

namespace {

// y = x * s + program, over n elements.
template <int BLOCK>
void scale_shift(tl::Ptr<const tl::f32> x, tl::Ptr<tl::f32> y, tl::Scalar<tl::f32> s, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * BLOCK + tl::arange<BLOCK>();
  tl::store(y + i, tl::load(x + i, i < n, 0.0f) * s + tl::cast<tl::f32>(tl::program_id(0)), i < n);
}

}  // namespace

TEST(Concurrency, SixteenThreadsTraceCompileAndRunOncePerSpecialization) {
  // A name no earlier run used, so that the disk cache cannot already hold these kernels.
  const std::string tag = std::to_string(std::random_device{}()) + std::to_string(std::random_device{}());
  Kernel<&scale_shift<256>> shared("concurrent_shared_" + tag, {.num_warps = 2, .param_names = {"x", "y", "s", "n"}});
  const auto before = cache::KernelCache::global().counters();
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      try {
        // Each thread also traces its own kernel (same program, so the same source: one compile for all).
        Kernel<&scale_shift<256>> own("concurrent_own_" + tag, {.num_warps = 2, .param_names = {"x", "y", "s", "n"}});
        const int n = 1000 + t;  // the keys differ by the power of two dividing n
        std::vector<float> x(n), y(n, -1.0f);
        for (int i = 0; i < n; ++i) x[i] = float(i % 17) - 8.0f;
        const std::vector<Arg> fake = {Arg::device_memory_of(ir::DType::f32, std::uint64_t{1} << 40, n),
                                       Arg::device_memory_of(ir::DType::f32, std::uint64_t{1} << 41, n), Arg::of_f32(2.0f),
                                       Arg::of_i32(n)};
        const LaunchConfig gpu{Grid{(n + 255) / 256}, Backend::gpu};
        shared.program().compile(shared.program().specialize(gpu, fake), "sm_90");
        own.program().compile(own.program().specialize(gpu, fake), "sm_90");
        Kernel<&scale_shift<256>>& k = t % 2 ? shared : own;
        k.launch({{(n + 255) / 256}, Backend::interpreter}, x, y, 2.0f, n);
        for (int i = 0; i < n; ++i)
          if (y[i] != x[i] * 2.0f + float(i / 256)) ++wrong;
      } catch (const std::exception& e) {
        ++errors;
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  // Distinct sources: two kernel names x the divisibilities of n in 1000..1015 (1, 2, 4, 8) = 8.
  std::set<std::string> sources;
  for (int t = 0; t < 16; ++t) {
    const int n = 1000 + t;
    const std::vector<Arg> fake = {Arg::device_memory_of(ir::DType::f32, std::uint64_t{1} << 40, n),
                                   Arg::device_memory_of(ir::DType::f32, std::uint64_t{1} << 41, n), Arg::of_f32(2.0f), Arg::of_i32(n)};
    sources.insert(shared.program().cuda_source(shared.program().specialize(LaunchConfig{Grid{4}, Backend::gpu}, fake)));
  }
  const auto after = cache::KernelCache::global().counters();
  EXPECT_EQ(after.compiles - before.compiles, 2 * sources.size());
}
