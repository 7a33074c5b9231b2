// Launch timing and device copies for the tuner (see timing.hpp).
#include "backend/runtime/timing.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "backend/driver/driver.hpp"

namespace tilefuse {

double median_launch_us(Backend backend, void* stream, const std::function<void(int)>& launch, int warmup, int runs) {
  runs = std::max(runs, 1);
  for (int i = 0; i < warmup; ++i) launch(i);
  std::vector<double> us(static_cast<std::size_t>(runs));
  if (backend == Backend::gpu) {
    driver::make_current();
    std::vector<driver::Event> starts(static_cast<std::size_t>(runs)), stops(static_cast<std::size_t>(runs));
    for (int i = 0; i < runs; ++i) {
      starts[i].record(stream);
      launch(i);
      stops[i].record(stream);
    }
    for (int i = 0; i < runs; ++i) {
      stops[i].synchronize();
      us[i] = 1e3 * driver::Event::elapsed_ms(starts[i], stops[i]);
    }
  } else {
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      launch(i);
      us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  std::nth_element(us.begin(), us.begin() + runs / 2, us.end());
  return us[static_cast<std::size_t>(runs / 2)];
}

void copy_device_bytes(std::uint64_t dst, std::uint64_t src, std::size_t bytes, void* stream) {
  driver::copy_device(dst, src, bytes, stream);
}

void copy_to_host_bytes(void* dst, std::uint64_t src, std::size_t bytes) {
  driver::synchronize();
  driver::copy_to_host(dst, src, bytes);
}

}  // namespace tilefuse
