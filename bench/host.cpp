// Host costs of the bench: a cold NVRTC compile, a warm disk-cache load and an in-memory hit of the
// fused softmax's source, and the host time per launch of Kernel::launch next to a raw cuLaunchKernel.
#include <algorithm>
#include <chrono>
#include <filesystem>

#include <unistd.h>

#include "backend/cache/cache.hpp"
#include "backend/codegen/cuda.hpp"
#include "bench/harness.hpp"
#include "kernels/softmax/programs.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::bench {

namespace {

// The fused softmax at 4096 f32 columns, as a launch would compile it.
const Program& sample() {
  return *kernels::softmax_programs(kernels::RowVariant::one_program, ir::DType::f32, 4096, {Backend::interpreter}).at(0);
}

const std::string& sample_source() {
  static const std::string s = sample().cuda_source(sample().default_specialization());
  return s;
}

std::string sample_symbol() { return codegen::kernel_symbol(sample().ir()); }

std::string arch() { return run().gpu_skip.empty() ? driver::device().arch() : "sm_90"; }

void host_row(const char* what, double us, const std::string& note) {
  run().rows.push_back({"host", what, "softmax 4096 f32", "", us, 0, 0, note});
}

void cold_compile(benchmark::State& state) {
  cache::KernelCache memory_only(std::nullopt);
  const auto options = nvrtc::options_for(arch());
  double total = 0;
  int n = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto compiled = nvrtc::compile(sample_source(), sample_symbol(), options);
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    ++n;
    benchmark::DoNotOptimize(compiled.cubin.data());
  }
  host_row("cold NVRTC compile", total / n, "source -> CUBIN, no cache");
}

void warm_disk_load(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / ("tilefuse-bench-cache-" + std::to_string(::getpid()));
  cache::KernelCache c(dir);
  const auto options = nvrtc::options_for(arch());
  c.get(sample_source(), sample_symbol(), options);  // writes the entry
  double total = 0;
  int n = 0;
  for (auto _ : state) {
    c.clear_memory();
    const auto t0 = std::chrono::steady_clock::now();
    auto k = c.get(sample_source(), sample_symbol(), options);
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    ++n;
    benchmark::DoNotOptimize(k.get());
  }
  if (c.counters().compiles != 1 || c.counters().disk_hits == 0) {
    run().failed = true;
    state.SkipWithError("disk cache missed");
  }
  std::filesystem::remove_all(dir);
  host_row("warm disk-cache load", total / n, "hash + read + checksum");
}

void memory_hit(benchmark::State& state) {
  cache::KernelCache c(std::nullopt);
  const auto options = nvrtc::options_for(arch());
  c.get(sample_source(), sample_symbol(), options);
  double total = 0;
  int n = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto k = c.get(sample_source(), sample_symbol(), options);
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    ++n;
    benchmark::DoNotOptimize(k.get());
  }
  host_row("in-memory cache hit", total / n, "hash of the source + map lookup");
}

// Host time per launch, back to back on a 1x128 row, against cuLaunchKernel of the same function.
void launch_overhead(benchmark::State& state) {
  if (!run().gpu_skip.empty()) {
    state.SkipWithError(("no GPU: " + run().gpu_skip).c_str());
    return;
  }
  // The fused softmax's program at a 128-column tile, as the sample launcher makes it (one warp).
  Kernel<&kernels::softmax_program<tl::f32, 128>> k("softmax_128", {.num_warps = 1, .param_names = {"in", "out", "stride", "n_cols"}});
  DeviceBuffer<float> x(128), y(128);
  driver::Stream stream;
  x.fill_bytes(0, stream.handle());
  const LaunchConfig cfg({1}, Backend::gpu, stream.handle());
  k.launch(cfg, x, y, 128, 128);
  stream.synchronize();
  void* fn = k.program().last_function();
  std::uint64_t px = x.device_ptr(), py = y.device_ptr();
  std::int32_t stride = 128, n = 128;
  void* params[] = {&px, &py, &stride, &n};
  const auto raw = driver::raw_launch();
  const int calls = 2000;
  auto per_call = [&](auto&& one) {
    for (int i = 0; i < 100; ++i) one();
    stream.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) one();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
    stream.synchronize();
    return us;
  };
  double ours = 0, bare = 0;
  for (auto _ : state) {
    std::vector<double> a, b;
    for (int rep = 0; rep < 5; ++rep) {
      a.push_back(per_call([&] { k.launch(cfg, x, y, 128, 128); }));
      b.push_back(per_call([&] { raw(fn, 1, 1, 1, 32 * k.program().num_warps(), 1, 1, 0, stream.handle(), params, nullptr); }));
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    ours = a[2];
    bare = b[2];
    state.SetIterationTime(ours * 1e-6);
  }
  state.counters["tilefuse_us"] = ours;
  state.counters["raw_cuLaunchKernel_us"] = bare;
  host_row("launch, tilefuse Kernel::launch", ours, "back to back, 1x128");
  char note[64];
  std::snprintf(note, sizeof note, "tilefuse adds %.2f us", ours - bare);
  host_row("launch, raw cuLaunchKernel", bare, note);
}

}  // namespace

void register_host_costs() {
  const bool smoke = run().smoke;
  benchmark::RegisterBenchmark("host/cold_nvrtc_compile", cold_compile)->Iterations(smoke ? 1 : 5)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("host/warm_disk_cache_load", warm_disk_load)->Iterations(smoke ? 5 : 50)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("host/memory_cache_hit", memory_hit)->Iterations(1000)->Unit(benchmark::kMicrosecond);
  timed(benchmark::RegisterBenchmark("host/launch_overhead", launch_overhead));
}

}  // namespace tilefuse::bench
