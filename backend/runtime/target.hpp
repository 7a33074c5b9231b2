// What a launch runs on, as kernels that choose among variants need to know it: the GPU's facts (through
// the driver layer), or a description of the CPU interpreter. Kernels ask here, never the driver.
#pragma once

#include <cstdint>
#include <string>

#include "backend/runtime/args.hpp"

namespace tilefuse {

/// The machine a launch runs on.
struct Target {
  std::string arch;               ///< "sm_90" for the GPU; "interpreter" for the CPU
  bool gpu = false;               ///< a GPU (else the interpreter)
  int sm_count = 0;               ///< the GPU's multiprocessors (0 for the interpreter)
  bool clusters = false;          ///< thread-block clusters run (sm_90 and later; the interpreter runs them too)
  int max_shared_per_block = 0;   ///< bytes of shared memory one block may opt in to (0: no limit)
  std::int64_t l2_bytes = 0;      ///< the GPU's L2 cache (0 for the interpreter)
  std::int64_t memory_bandwidth = 0;  ///< peak DRAM bytes per second (0: unknown, and the interpreter)
};

/// Whether GPU architecture `arch` ("sm_90") has the warpgroup MMA (wgmma) that generated dots may use.
inline bool has_warpgroup_mma(const std::string& arch) { return arch == "sm_90"; }

/// The target of a launch on `backend` (Backend::automatic resolved as launches resolve it). Throws
/// driver::DeviceUnavailable for a GPU launch without a GPU.
Target target(Backend backend);

}  // namespace tilefuse
