// Google Benchmark harness: softmax fused vs unfused vs a device copy of the same bytes (CUDA events,
// warm-up, median of many runs, inputs rotated past the L2), and host costs: cold NVRTC compile, warm
// disk-cache load, in-memory hit, per-launch host overhead next to a raw cuLaunchKernel.
//
//   tilefuse_bench [--smoke] [--table results.md] [google benchmark flags]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "backend/cache/cache.hpp"
#include "backend/codegen/cuda.hpp"
#include "bench/measure.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax.hpp"

using namespace tilefuse;

namespace {

struct Row {
  std::string kernel, impl, shape, dtype;
  double us = 0, gbps = 0, x_copy = 0;
  std::string note;
};
std::vector<Row> g_rows;
bool g_smoke = false;
bool g_failed = false;   // a wrong result makes the run fail, not just skip a row
std::string g_gpu_skip;  // why GPU rows are skipped, empty when there is a GPU

// Copy time per byte count, measured once per process and reused by every row of that size.
std::map<std::size_t, double>& copy_us() {
  static std::map<std::size_t, double> m;
  return m;
}

// Median copy time of `bytes` (read) + `bytes` (written), measured once per size in this process.
double copy_time_us(std::size_t bytes, int sets, void* stream, int runs) {
  if (!copy_us().count(bytes)) {
    bench::CopyBaseline copy(bytes, sets);
    copy_us()[bytes] = copy.time(stream, runs).median_us;
  }
  return copy_us()[bytes];
}

// Adds the same-bytes copy row for a shape and returns the shape's name.
std::string add_copy_row(std::int64_t rows, std::int64_t cols, const char* dtype, double copy_us, double moved) {
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  g_rows.push_back({"copy", "device copy, same bytes", shape, dtype, copy_us, moved / copy_us / 1e3, 1.0, ""});
  return shape;
}

// Adds a kernel row: its time, GB/s over `moved` bytes, and its ratio to the copy of the same shape.
void add_row(const char* kernel, const char* impl, const std::string& shape, const char* dtype, double us, double moved,
             double copy_us, const std::string& note) {
  g_rows.push_back({kernel, impl, shape, dtype, us, moved / us / 1e3, copy_us / us, note});
}

// One row-kernel benchmark's inputs: a random rows x cols matrix uploaded to enough buffer sets to overflow
// the L2, output sets beside them, and a stream. `ok` is false (and the row skipped) without a GPU.
template <class H>
struct RowCase {
  std::size_t n, bytes;
  int sets = 0;
  std::vector<H> host;
  std::vector<DeviceBuffer<H>> xs, ys;
  std::unique_ptr<driver::Stream> stream;
  kernels::RowOptions opt;
  bool ok = false;

  RowCase(benchmark::State& state, std::int64_t rows, std::int64_t cols)
      : n(static_cast<std::size_t>(rows * cols)), bytes(n * sizeof(H)) {
    if (!g_gpu_skip.empty()) {
      state.SkipWithError(("no GPU: " + g_gpu_skip).c_str());
      return;
    }
    stream = std::make_unique<driver::Stream>();
    opt = kernels::RowOptions{Backend::gpu, stream->handle()};
    sets = bench::rotation_sets(2 * bytes);
    host = reference::random_vector<H>(n, 7);
    for (int s = 0; s < sets; ++s) {
      xs.emplace_back(host);
      ys.emplace_back(n);
    }
    ys[0].fill_bytes(0xff, stream->handle());  // poisoned, on the kernel's stream: check() sees any unwritten element
    ok = true;
  }
  void* handle() const { return stream->handle(); }

  // Checks set 0's output against `ref` after one launch: a fast wrong kernel is worth nothing.
  bool check(benchmark::State& state, const std::vector<double>& ref, double* err) {
    stream->synchronize();
    *err = reference::relative_error<H>(ys[0].download(), ref);
    if (*err <= reference::tolerance<H>()) return true;
    g_failed = true;
    state.SkipWithError(("wrong result, rel err " + std::to_string(*err)).c_str());
    return false;
  }
};

// The `splits` value that selects the staged kernels (rows staged through shared memory, read once).
constexpr std::int64_t kStaged = -1000;

// Rows wider than one program: the staged softmax (splits == kStaged), the looped (online) one (splits == 0) or the split-row one over `splits`
// programs per row and two kernels; both read each row twice and write it once.
template <class H>
void softmax_wide_rows(benchmark::State& state, std::int64_t rows, std::int64_t cols, const char* dtype,
                       std::int64_t splits) {
  RowCase<H> rc(state, rows, cols);
  if (!rc.ok) return;
  const int runs = g_smoke ? 10 : 100;
  kernels::SplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(rows * std::max<std::int64_t>(splits, 1)),
                                                     DeviceBuffer<float>(rows * std::max<std::int64_t>(splits, 1))};
  auto run = [&](int s) {
    if (splits > 0) kernels::softmax_split(rc.xs[s], rc.ys[s], scratch, rows, cols, splits, rc.opt);
    else if (splits == kStaged) kernels::softmax_staged(rc.xs[s], rc.ys[s], rows, cols, rc.opt);
    else if (splits < 0) kernels::softmax_cluster(rc.xs[s], rc.ys[s], rows, cols, rc.opt);
    else kernels::softmax_looped(rc.xs[s], rc.ys[s], rows, cols, rc.opt);
  };
  run(0);
  double err = 0;
  if (!rc.check(state, reference::softmax<H>(rc.host, rows, cols), &err)) return;
  const std::size_t bytes = rc.bytes;
  const double c = copy_time_us(bytes, rc.sets, rc.handle(), runs);
  bench::Timing t;
  for (auto _ : state) {
    t = bench::time_launches(run, rc.sets, rc.handle(), 10, runs);
    state.SetIterationTime(t.median_us * 1e-6);
  }
  const double moved = 2.0 * bytes;  // the minimum: each element read once, written once
  state.counters["us"] = t.median_us;
  state.counters["x_copy"] = c / t.median_us;
  const std::string shape = add_copy_row(rows, cols, dtype, c, moved);
  char note[96], impl[64];
  std::snprintf(note, sizeof note, "%srel err %.1e", splits < 0 ? "reads the row once; " : "reads the row twice (1.5x the bytes); ", err);
  if (splits > 0) std::snprintf(impl, sizeof impl, "tilefuse split-row (%lld per row, 2 kernels)", static_cast<long long>(splits));
  else if (splits == kStaged) std::snprintf(impl, sizeof impl, "tilefuse staged (shared memory, cp.async)");
  else if (splits < 0) std::snprintf(impl, sizeof impl, "tilefuse cluster (row over 8 programs, DSMEM)");
  else std::snprintf(impl, sizeof impl, "tilefuse looped (online)");
  add_row("softmax", impl, shape, dtype, t.median_us, moved, c, note);
}

template <class H>
void softmax_rows(benchmark::State& state, std::int64_t rows, std::int64_t cols, const char* dtype) {
  RowCase<H> rc(state, rows, cols);
  if (!rc.ok) return;
  const std::size_t n = rc.n, bytes = rc.bytes;
  const int runs = g_smoke ? 20 : 200;
  kernels::UnfusedScratch<DeviceBuffer<H>> scratch{DeviceBuffer<H>(rows), DeviceBuffer<H>(n), DeviceBuffer<H>(n),
                                                   DeviceBuffer<H>(rows)};
  kernels::softmax(rc.xs[0], rc.ys[0], rows, cols, rc.opt);
  double err = 0;
  if (!rc.check(state, reference::softmax<H>(rc.host, rows, cols), &err)) return;
  copy_time_us(bytes, rc.sets, rc.handle(), runs);
  bench::Timing fused, unfused;
  for (auto _ : state) {
    fused = bench::time_launches([&](int s) { kernels::softmax(rc.xs[s], rc.ys[s], rows, cols, rc.opt); }, rc.sets,
                                 rc.handle(), 20, runs);
    unfused = bench::time_launches(
        [&](int s) { kernels::softmax_unfused(rc.xs[s], rc.ys[s], scratch, rows, cols, rc.opt); }, rc.sets, rc.handle(),
        5, std::max(10, runs / 4));
    state.SetIterationTime(fused.median_us * 1e-6);
  }
  const double moved = 2.0 * bytes, c = copy_us()[bytes];
  state.counters["fused_us"] = fused.median_us;
  state.counters["unfused_us"] = unfused.median_us;
  state.counters["copy_us"] = c;
  state.counters["fused_GBps"] = moved / fused.median_us / 1e3;
  state.counters["x_copy"] = c / fused.median_us;
  state.counters["speedup_vs_unfused"] = unfused.median_us / fused.median_us;
  const std::string shape = add_copy_row(rows, cols, dtype, c, moved);
  char note[64];
  std::snprintf(note, sizeof note, "rel err %.1e vs float64", err);
  add_row("softmax", "tilefuse fused", shape, dtype, fused.median_us, moved, c, note);
  std::snprintf(note, sizeof note, "fused is %.2fx faster", unfused.median_us / fused.median_us);
  add_row("softmax", "tilefuse unfused (5 kernels)", shape, dtype, unfused.median_us, 4 * moved, c, note);
}

// LayerNorm (kind "layernorm") or RMSNorm ("rmsnorm") over rows x cols, against a copy of x's bytes; for
// LayerNorm, `splits` picks the kernel: -1 one program per row, 0 looped, above 0 split-row, below -1 a
// cluster of -splits programs.
template <class H>
void norm_rows(benchmark::State& state, const char* kind, std::int64_t rows, std::int64_t cols, const char* dtype,
               std::int64_t splits) {
  RowCase<H> rc(state, rows, cols);
  if (!rc.ok) return;
  const bool layer = std::string(kind) == "layernorm";
  const std::size_t bytes = rc.bytes;
  const int runs = g_smoke ? 20 : 200;
  const auto hw = reference::random_vector<H>(cols, 8), hb = reference::random_vector<H>(cols, 9);
  DeviceBuffer<H> w(hw), b(hb);
  kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(rows), DeviceBuffer<float>(rows)};
  kernels::NormSplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(rows * std::max<std::int64_t>(splits, 1)),
                                                         DeviceBuffer<float>(rows * std::max<std::int64_t>(splits, 1))};
  auto run = [&](int s) {
    if (!layer) kernels::rmsnorm(rc.xs[s], w, rc.ys[s], rows, cols, 1e-6f, rc.opt);
    else if (splits > 0) kernels::layernorm_split(rc.xs[s], w, b, rc.ys[s], stats, scratch, rows, cols, splits, 1e-5f, rc.opt);
    else if (splits == kStaged) kernels::layernorm_staged(rc.xs[s], w, b, rc.ys[s], stats, rows, cols, 1e-5f, rc.opt);
    else if (splits < -1) kernels::layernorm_cluster(rc.xs[s], w, b, rc.ys[s], stats, rows, cols, 1e-5f, rc.opt, -splits);
    else if (splits == 0) kernels::layernorm_looped(rc.xs[s], w, b, rc.ys[s], stats, rows, cols, 1e-5f, rc.opt);
    else kernels::layernorm(rc.xs[s], w, b, rc.ys[s], stats, rows, cols, 1e-5f, rc.opt);
  };
  run(0);
  double err = 0;
  if (!rc.check(state, layer ? reference::layernorm<H>(rc.host, hw, hb, rows, cols, 1e-5)
                             : reference::rmsnorm<H>(rc.host, hw, rows, cols, 1e-6),
                &err))
    return;
  const double c = copy_time_us(bytes, rc.sets, rc.handle(), runs);
  bench::Timing t;
  for (auto _ : state) {
    t = bench::time_launches(run, rc.sets, rc.handle(), 20, runs);
    state.SetIterationTime(t.median_us * 1e-6);
  }
  const double moved = 2.0 * bytes;  // x read, y written (w, b and the row statistics are under 0.1%)
  state.counters["us"] = t.median_us;
  state.counters["GBps"] = moved / t.median_us / 1e3;
  state.counters["x_copy"] = c / t.median_us;
  const std::string shape = add_copy_row(rows, cols, dtype, c, moved);
  char note[96], impl[64];
  std::snprintf(note, sizeof note, "%srel err %.1e vs float64", splits >= 0 && layer ? "reads the row twice (1.5x the bytes); " : "", err);
  if (!layer) std::snprintf(impl, sizeof impl, "tilefuse, one program per row");
  else if (splits == kStaged) std::snprintf(impl, sizeof impl, "tilefuse staged (shared memory), two-pass, read once");
  else if (splits < -1) std::snprintf(impl, sizeof impl, "tilefuse cluster of %lld, two-pass, read once", static_cast<long long>(-splits));
  else if (splits > 0) std::snprintf(impl, sizeof impl, "tilefuse split-row (%lld per row, 2 kernels)", static_cast<long long>(splits));
  else if (splits == 0) std::snprintf(impl, sizeof impl, "tilefuse looped, one program per row");
  else std::snprintf(impl, sizeof impl, "tilefuse two-pass, one program per row");
  add_row(kind, impl, shape, dtype, t.median_us, moved, c, note);
}

// ---- host costs ----

const std::string& sample_source() {
  static const std::string s = [] {
    auto& p = kernels::softmax_kernel<tl::f32, 4096>().program();
    return p.cuda_source(p.default_specialization());
  }();
  return s;
}

std::string sample_symbol() { return codegen::kernel_symbol(kernels::softmax_kernel<tl::f32, 4096>().program().ir()); }

std::string arch() { return g_gpu_skip.empty() ? driver::device().arch() : "sm_90"; }

void host_row(const char* what, double us, const std::string& note) {
  g_rows.push_back({"host", what, "softmax 4096 f32", "", us, 0, 0, note});
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
    g_failed = true;
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
  if (!g_gpu_skip.empty()) {
    state.SkipWithError(("no GPU: " + g_gpu_skip).c_str());
    return;
  }
  auto& k = kernels::softmax_kernel<tl::f32, 128>();
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

void write_table(const std::string& path) {
  std::ostringstream os;
  std::string device = g_gpu_skip.empty() ? driver::device().name + " (" + driver::device().arch() + ", " +
                                                std::to_string(driver::device().sm_count) + " SMs)"
                                          : "no GPU (" + g_gpu_skip + ")";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  os << "Device: " << device << "; date " << date << "; NVRTC " << nvrtc::version()
     << ". Medians of CUDA-event-timed runs, inputs rotated past the L2; GB/s counts bytes read + written "
        "(the unfused row counts its own 4x bytes); x copy = device-copy time of the same bytes / this time.\n\n";
  os << "| kernel | impl | shape | dtype | time (us) | GB/s | x copy | note |\n|---|---|---|---|---:|---:|---:|---|\n";
  char buf[512];
  for (const auto& r : g_rows) {
    std::snprintf(buf, sizeof buf, "| %s | %s | %s | %s | %.2f | %s | %s | %s |\n", r.kernel.c_str(), r.impl.c_str(),
                  r.shape.c_str(), r.dtype.c_str(), r.us, r.gbps > 0 ? std::to_string(static_cast<int>(r.gbps)).c_str() : "",
                  r.x_copy > 0 ? (std::to_string(r.x_copy).substr(0, 4)).c_str() : "", r.note.c_str());
    os << buf;
  }
  std::fputs(os.str().c_str(), stdout);
  if (!path.empty()) std::ofstream(path) << os.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string table;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--smoke") g_smoke = true;
    else if (a == "--table" && i + 1 < argc) table = argv[++i];
    else rest.push_back(argv[i]);
  }
  if (!driver::available(&g_gpu_skip) && g_gpu_skip.empty()) g_gpu_skip = "unknown";
  int rc = static_cast<int>(rest.size());
  benchmark::Initialize(&rc, rest.data());

  struct Shape { std::int64_t rows, cols; const char* dtype; };
  std::vector<Shape> shapes = {{4096, 4096, "f32"}, {8192, 8192, "f32"},   {32768, 1024, "f32"},
                               {65536, 128, "f32"}, {4096, 3000, "f32"}, {16384, 4096, "bf16"}};
  if (g_smoke) shapes = {{256, 1000, "f32"}, {128, 4096, "bf16"}};
  for (const auto& s : shapes) {
    const std::string name = std::string("softmax/") + std::to_string(s.rows) + "x" + std::to_string(s.cols) + "/" + s.dtype;
    auto* b = std::string(s.dtype) == "bf16"
                  ? benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { softmax_rows<bfloat16>(st, s.rows, s.cols, s.dtype); })
                  : benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { softmax_rows<float>(st, s.rows, s.cols, s.dtype); });
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
  }
  struct Wide { std::int64_t rows, cols; const char* dtype; std::int64_t splits; };  // splits 0: looped, -1: cluster
  std::vector<Wide> wide = {{4096, 32768, "f32", 0},  {2048, 131072, "bf16", 0}, {1024, 262144, "f32", 0},
                            {2048, 131072, "bf16", 4}, {1024, 262144, "f32", 8},  {64, 1048576, "f32", 32},
                            {2048, 131072, "bf16", -1}, {2048, 131072, "f32", -1}, {4096, 32768, "f32", -1},
                            {2048, 131072, "bf16", kStaged}, {4096, 32768, "f32", kStaged}, {1024, 262144, "f32", kStaged},
                            {2048, 131072, "f32", kStaged}, {2048, 131072, "f32", 0},   {1024, 262144, "bf16", kStaged},
                            {1024, 262144, "bf16", 0}};
  if (g_smoke) wide = {{16, 40000, "f32", 0}, {4, 40000, "f32", 3}, {4, 40000, "f32", -1}, {4, 40000, "f32", kStaged}};
  for (const auto& s : wide) {
    const std::string name = std::string(s.splits > 0 ? "softmax_split" + std::to_string(s.splits) + "/"
                                         : s.splits == kStaged ? "softmax_staged/"
                                         : s.splits < 0 ? "softmax_cluster/" : "softmax_looped/") +
                             std::to_string(s.rows) + "x" + std::to_string(s.cols) + "/" + s.dtype;
    auto* b = std::string(s.dtype) == "bf16"
                  ? benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { softmax_wide_rows<bfloat16>(st, s.rows, s.cols, s.dtype, s.splits); })
                  : benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { softmax_wide_rows<float>(st, s.rows, s.cols, s.dtype, s.splits); });
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
  }
  // splits: -1 one program per row, 0 looped, above 0 split-row, below -1 a cluster of -splits programs
  struct Norm { const char* kind; std::int64_t rows, cols; const char* dtype; std::int64_t splits = -1; };
  std::vector<Norm> norms = {{"layernorm", 4096, 4096, "f32"},  {"layernorm", 8192, 8192, "bf16"},
                             {"layernorm", 32768, 1024, "f16"}, {"layernorm", 4096, 12288, "bf16"},
                             {"layernorm", 16384, 768, "f32"},  {"rmsnorm", 32768, 4096, "bf16"},
                             {"layernorm", 4096, 12288, "bf16", 0}, {"layernorm", 4096, 12288, "bf16", 3},
                             {"layernorm", 256, 131072, "bf16", 0}, {"layernorm", 256, 131072, "bf16", 8},
                             {"layernorm", 4096, 12288, "bf16", -3}, {"layernorm", 256, 131072, "bf16", -8},
                             {"layernorm", 4096, 12288, "bf16", kStaged}, {"layernorm", 8192, 8192, "bf16", kStaged},
                             {"layernorm", 4096, 4096, "f32", kStaged}, {"layernorm", 4096, 32768, "bf16", kStaged},
                             {"layernorm", 4096, 32768, "bf16", 0}};
  if (g_smoke) norms = {{"layernorm", 256, 1000, "f32"}, {"rmsnorm", 128, 4096, "bf16"}, {"layernorm", 8, 20000, "f32", 0},
                        {"layernorm", 8, 20000, "f32", 3}, {"layernorm", 8, 20000, "f32", -2}, {"layernorm", 8, 20000, "f32", kStaged}};
  for (const auto& m : norms) {
    const std::string variant = m.splits == -1 ? "" : m.splits == kStaged ? "_staged"
                              : m.splits < -1 ? "_cluster" + std::to_string(-m.splits)
                              : m.splits == 0 ? "_looped" : "_split" + std::to_string(m.splits);
    const std::string name = std::string(m.kind) + variant + "/" + std::to_string(m.rows) + "x" + std::to_string(m.cols) + "/" + m.dtype;
    const std::string dt = m.dtype;
    benchmark::internal::Benchmark* b =
        dt == "f32"  ? benchmark::RegisterBenchmark(name.c_str(), [m](benchmark::State& st) { norm_rows<float>(st, m.kind, m.rows, m.cols, m.dtype, m.splits); })
        : dt == "f16" ? benchmark::RegisterBenchmark(name.c_str(), [m](benchmark::State& st) { norm_rows<half>(st, m.kind, m.rows, m.cols, m.dtype, m.splits); })
                      : benchmark::RegisterBenchmark(name.c_str(), [m](benchmark::State& st) { norm_rows<bfloat16>(st, m.kind, m.rows, m.cols, m.dtype, m.splits); });
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("host/cold_nvrtc_compile", cold_compile)->Iterations(g_smoke ? 1 : 5)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("host/warm_disk_cache_load", warm_disk_load)->Iterations(g_smoke ? 5 : 50)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("host/memory_cache_hit", memory_hit)->Iterations(1000)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("host/launch_overhead", launch_overhead)->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  write_table(table);
  if (g_failed) std::fprintf(stderr, "tilefuse_bench: a kernel gave a wrong result or the cache missed (see above)\n");
  return g_failed ? 1 : 0;
}
