// GPU timing as the project measures: CUDA events around each launch, warm-up first, the median of many
// runs, inputs rotated through enough buffer sets to overflow the L2, and a device-to-device copy of the
// same bytes timed the same way in the same process as the denominator of every ratio.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/driver/driver.hpp"

namespace tilefuse::bench {

/// Median and spread of a set of timed runs.
struct Timing {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  int runs = 0;
};

/// Buffer sets to rotate through so that their total is at least three times the L2 (at most 64 sets).
inline int rotation_sets(std::size_t bytes_per_set) {
  const std::size_t l2 = static_cast<std::size_t>(driver::device().l2_bytes);
  const std::size_t want = 3 * l2;
  std::size_t sets = (want + bytes_per_set - 1) / std::max<std::size_t>(bytes_per_set, 1);
  return static_cast<int>(std::clamp<std::size_t>(sets, 2, 64));
}

/// Launches timed between one pair of events for the memory-bound benchmarks (rows, epilogues, the
/// sweep): 20 by default, so that a run's time is that of a burst of 20 launches back to back, divided by
/// 20, with no event between two launches (an event pair around every launch adds about a microsecond to
/// kernels of 20-70 us, and the peers' Python loop cannot keep a short kernel's queue full with one around
/// every call; bench/NOTES.md, "Bursts"). tilefuse_bench --burst N sets it (1: events around each
/// launch); BURST=N does the same for the peer scripts.
inline int& burst_launches() {
  static int n = 20;
  return n;
}

/// Times launch(set) on `stream` in bursts of `burst` launches between a pair of events (0:
/// burst_launches(); 1: events around each launch), rotating set over [0, sets). `runs` counts launches
/// one by one: with bursts, runs / burst bursts (at least 5) time about as many launches.
template <class Launch>
Timing time_launches(Launch&& launch, int sets, void* stream, int warmup = 20, int runs = 200, int burst = 0) {
  for (int i = 0; i < warmup; ++i) launch(i % sets);
  driver::synchronize();
  burst = std::max(1, burst > 0 ? burst : burst_launches());
  if (burst > 1) runs = std::max(5, runs / burst);
  std::vector<driver::Event> starts(runs), stops(runs);
  for (int i = 0, set = 0; i < runs; ++i) {
    starts[i].record(stream);
    for (int k = 0; k < burst; ++k) launch(set++ % sets);
    stops[i].record(stream);
  }
  stops.back().synchronize();
  std::vector<double> us(runs);
  for (int i = 0; i < runs; ++i) us[i] = 1000.0 * driver::Event::elapsed_ms(starts[i], stops[i]) / burst;
  std::sort(us.begin(), us.end());
  return Timing{us[runs / 2], us.front(), us.back(), runs};
}

/// Device-to-device copies of `bytes` (so 2 x bytes of traffic), rotated over `sets` source/destination pairs.
class CopyBaseline {
 public:
  CopyBaseline(std::size_t bytes, int sets) : bytes_(bytes) {
    for (int i = 0; i < sets; ++i) {
      src_.push_back(driver::allocate(bytes));
      dst_.push_back(driver::allocate(bytes));
      driver::fill_bytes(src_.back(), 0x3c, bytes);  // any bytes: a copy's speed does not depend on them
    }
  }
  ~CopyBaseline() {
    for (auto p : src_) driver::release(p);
    for (auto p : dst_) driver::release(p);
  }
  CopyBaseline(const CopyBaseline&) = delete;
  CopyBaseline& operator=(const CopyBaseline&) = delete;
  /// Median time of one copy.
  Timing time(void* stream, int runs = 200) {
    return time_launches([&](int s) { driver::copy_device(dst_[s], src_[s], bytes_, stream); },
                         static_cast<int>(src_.size()), stream, 20, runs);
  }

 private:
  std::size_t bytes_;
  std::vector<std::uint64_t> src_, dst_;
};

}  // namespace tilefuse::bench
