// The launch target from the driver's device facts, or the interpreter's (see target.hpp).
#include "backend/runtime/target.hpp"

#include "backend/driver/driver.hpp"
#include "backend/runtime/program.hpp"

namespace tilefuse {

Target target(Backend backend) {
  if (resolve_backend(backend) != Backend::gpu) return Target{"interpreter", false, 0, true, 0};
  if (const InspectLaunches* capture = InspectLaunches::active()) return capture->target();  // what inspection assumes
  const driver::DeviceInfo& d = driver::device();
  return Target{d.arch(), true, d.sm_count, d.cc_major >= 9, d.max_shared_per_block, d.l2_bytes, d.memory_bandwidth};
}

}  // namespace tilefuse
