// tilefuse_driver_probe: what a process sees of the CUDA driver, for the fault tests, which run it with
// TILEFUSE_CUDA_DRIVER set to a missing or fake driver library (the driver is opened once per process, so
// each case needs a fresh one). Checks that the driver is unavailable for a reason containing argv[1],
// that device() and a device allocation throw DeviceUnavailable with that reason, and that an interpreter
// launch still runs. Prints what went wrong, if anything; exit status 0 when nothing did.
#include <cstdio>
#include <string>
#include <vector>

#include "backend/driver/driver.hpp"
#include "backend/runtime/buffer.hpp"
#include "dsl/tl.hpp"

using namespace tilefuse;

namespace {

void add_one(tl::Ptr<tl::f32> x, tl::Scalar<tl::i32> n) {
  const auto offsets = tl::arange<128>();
  tl::store(x + offsets, tl::load(x + offsets, offsets < n) + 1.0f, offsets < n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tilefuse_driver_probe EXPECTED_REASON_TEXT\n");
    return 2;
  }
  const std::string expected = argv[1];
  std::string problem, why;
  if (driver::available(&why)) problem = "the driver is available";
  else if (why.find(expected) == std::string::npos) problem = "the reason lacks '" + expected + "'";
  try {
    driver::device();
    problem += "; device() did not throw";
  } catch (const driver::DeviceUnavailable& e) {
    if (std::string(e.what()).find(why) == std::string::npos) problem += "; device() says '" + std::string(e.what()) + "'";
  }
  try {
    DeviceBuffer<float> b(16);
    problem += "; an allocation worked";
  } catch (const driver::DeviceUnavailable&) {
  }
  try {
    Kernel<&add_one> k("add_one");
    std::vector<float> x(100, 1.0f);
    k.launch({1, Backend::interpreter}, x, 100);
    if (x[0] != 2.0f || x[99] != 2.0f) problem += "; the interpreter gave a wrong result";
  } catch (const std::exception& e) {
    problem += std::string("; the interpreter failed: ") + e.what();
  }
  if (problem.empty()) return 0;
  std::printf("%s (reason: %s)\n", problem.c_str(), why.c_str());
  return 1;
}
