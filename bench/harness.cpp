// The bench harness's shared state and rows (see harness.hpp).
#include "bench/harness.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

namespace tilefuse::bench {

Run& run() {
  static Run r;
  return r;
}

double copy_time_us(std::size_t bytes, int sets, void* stream, int runs) {
  static std::map<std::size_t, double> measured;
  if (!measured.count(bytes)) {
    CopyBaseline copy(bytes, sets);
    measured[bytes] = copy.time(stream, runs).median_us;
  }
  return measured[bytes];
}

double norm_moved(std::int64_t rows, std::int64_t cols, std::size_t element_bytes, int column_operands, int stats) {
  const double row_bytes = static_cast<double>(cols) * static_cast<double>(element_bytes);
  return 2.0 * static_cast<double>(rows) * row_bytes + column_operands * row_bytes + 4.0 * stats * static_cast<double>(rows);
}

std::string add_copy_row(std::int64_t rows, std::int64_t cols, const char* dtype, double copy_us, double moved) {
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  run().rows.push_back({"copy", "device copy, same bytes", shape, dtype, copy_us, moved / copy_us / 1e3, 1.0, ""});
  return shape;
}

void add_row(const char* kernel, const std::string& impl, const std::string& shape, const char* dtype, double us, double moved,
             double copy_us, const std::string& note) {
  run().rows.push_back({kernel, impl, shape, dtype, us, moved / us / 1e3, copy_us / us, note});
}

void timed(benchmark::internal::Benchmark* b) { b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond); }

std::string shape_name(std::int64_t rows, std::int64_t cols, const char* dtype) {
  return std::to_string(rows) + "x" + std::to_string(cols) + "/" + dtype;
}

void add_fused_rows(benchmark::State& state, const char* kernel, const std::string& fused_impl, const std::string& unfused_impl,
                    std::int64_t rows, std::int64_t cols, const char* dtype, const std::pair<Timing, Timing>& times, double copy_us,
                    double moved, double unfused_factor, double err) {
  const auto& [fused, unfused] = times;
  state.counters["fused_us"] = fused.median_us;
  state.counters["unfused_us"] = unfused.median_us;
  state.counters["x_copy"] = copy_us / fused.median_us;
  const std::string shape = add_copy_row(rows, cols, dtype, copy_us, moved);
  char note[64];
  std::snprintf(note, sizeof note, "rel err %.1e vs float64", err);
  add_row(kernel, fused_impl, shape, dtype, fused.median_us, moved, copy_us, note);
  std::snprintf(note, sizeof note, "fused is %.2fx faster", unfused.median_us / fused.median_us);
  add_row(kernel, unfused_impl, shape, dtype, unfused.median_us, unfused_factor * moved, copy_us, note);
}

std::string case_name(const kernels::VariantInfo& v, const VariantCase& k) {
  std::string name = v.entry;
  if (k.splits > 0) name += std::to_string(k.splits);
  name += '/';  // (appending piecewise: GCC 12 warns falsely about "/" + std::string)
  name += shape_name(k.rows, k.cols, k.dtype);
  return name;
}

std::string case_impl(const kernels::VariantInfo& v, const VariantCase& k) {
  std::string impl = std::string("tilefuse ") + kernels::variant_name(k.variant);
  if (k.splits > 0) impl += " (" + std::to_string(k.splits) + (k.variant == kernels::RowVariant::split ? " per row, 2 kernels)" : " programs)");
  return impl + ": " + v.summary;
}

void parallel_blocks(std::int64_t count, const std::function<void(std::int64_t, std::int64_t)>& f) {
  const std::int64_t threads = std::clamp<std::int64_t>(std::thread::hardware_concurrency(), 1, std::max<std::int64_t>(count, 1));
  std::vector<std::thread> pool;
  for (std::int64_t t = 1; t < threads; ++t) pool.emplace_back([&, t] { f(count * t / threads, count * (t + 1) / threads); });
  f(0, count / threads);
  for (auto& th : pool) th.join();
}

}  // namespace tilefuse::bench
