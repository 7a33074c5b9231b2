// The bench harness's shared state and rows (see harness.hpp).
#include "bench/harness.hpp"

#include <map>

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

}  // namespace tilefuse::bench
