// Faults without a GPU: an NVRTC failure (a named error, nothing cached, the next compile works, also when
// many threads wait on the failing one), a cache writer killed mid-write (readers never see a partial
// entry; the next process compiles and the leftovers are cleared), and a CUDA driver that is missing, too
// old, incomplete or without a device (fake driver libraries through TILEFUSE_CUDA_DRIVER, each in a child
// process, since the driver is opened once per process): a named DeviceUnavailable, and the interpreter
// runs on.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "backend/cache/cache.hpp"

using namespace tilefuse;
namespace fs = std::filesystem;

namespace {

const char* kGood = "extern \"C\" __global__ void good(float* p) { p[threadIdx.x] += 1.0f; }\n";
const char* kBad = "extern \"C\" __global__ void bad(float* p) { p[threadIdx.x] = undefined_name; }\n";

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("tilefuse-faults-" + std::to_string(std::random_device{}()));
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(Faults, CompileErrorIsNamedNotCachedAndTheNextCompileWorks) {
  TempDir dir;
  cache::KernelCache c(dir.path);
  const auto options = nvrtc::options_for("sm_90");
  std::vector<std::thread> threads;
  std::atomic<int> named{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      try {
        c.get(kBad, "bad", options);
      } catch (const nvrtc::CompileError& e) {
        if (std::string(e.what()).find("kernel 'bad'") != std::string::npos && e.log().find("undefined_name") != std::string::npos) ++named;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(named.load(), 8);          // every waiting thread gets the error
  EXPECT_TRUE(c.disk_entries().empty());  // nothing cached
  EXPECT_THROW(c.get(kBad, "bad", options), nvrtc::CompileError);  // and it is tried again, not remembered
  EXPECT_FALSE(c.get(kGood, "good", options)->cubin.empty());
}

TEST(Faults, WriterKilledMidWriteLeavesNoPartialEntry) {
  TempDir dir;
  const auto options = nvrtc::options_for("sm_90");
  // Children compile and write entries of distinct sources, killed at staggered moments (some before,
  // some during, some after their writes); the last is killed only once an entry exists (a slow machine,
  // or a sanitizer build, may take longer than all the others' time to write one).
  fs::create_directories(dir.path);
  auto has_entry = [&] {
    for (const auto& f : fs::directory_iterator(dir.path))
      if (f.path().extension() == ".tfk") return true;
    return false;
  };
  for (int k = 0; k < 12; ++k) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      cache::KernelCache c(dir.path);
      for (int i = 0;; ++i)
        c.get("extern \"C\" __global__ void w(float* p) { p[threadIdx.x] *= " + std::to_string(k * 1000 + i) + ".0f; }\n", "w", options);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + 37 * k));
    for (int waited = 0; k == 11 && !has_entry() && waited < 600; ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
  }
  cache::KernelCache c(dir.path);
  std::size_t entries = 0;
  for (const auto& e : c.disk_entries()) {
    EXPECT_TRUE(e.valid) << e.path;  // a killed writer never leaves a partial .tfk: it renames whole files only
    ++entries;
  }
  EXPECT_GT(entries, 0u);
  EXPECT_EQ(c.counters().corrupt, 0u);
  c.clear();  // removes the entries and any temporary file a killed writer left
  for (const auto& f : fs::directory_iterator(dir.path)) ADD_FAILURE() << "left behind: " << f.path();
}

namespace {

// Runs tilefuse_driver_probe with TILEFUSE_CUDA_DRIVER=`library` (a fresh process: the driver is opened
// once per process): "" when the driver is unavailable for a reason containing `expected`, device() and
// allocations say so, and the interpreter runs; otherwise what the probe printed.
std::string driver_fault(const std::string& library, const std::string& expected) {
  int out[2];
  if (pipe(out) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    setenv("TILEFUSE_CUDA_DRIVER", library.c_str(), 1);
    execl(TILEFUSE_DRIVER_PROBE, TILEFUSE_DRIVER_PROBE, expected.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string got;
  char buffer[512];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) got.append(buffer, static_cast<std::size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) got += " (the probe exited with status " + std::to_string(status) + ")";
  return got;
}

}  // namespace

TEST(Faults, MissingDriverLibraryIsNamed) {
  EXPECT_EQ(driver_fault("/nonexistent/libcuda.so.1", "no CUDA driver: dlopen(\"/nonexistent/libcuda.so.1\") failed"), "");
}

TEST(Faults, DriverTooOldIsNamedWithBothVersions) {
  EXPECT_EQ(driver_fault(TILEFUSE_FAKE_DRIVER_OLD, "the CUDA driver is too old: it supports CUDA 12.4 (cuDriverGetVersion gives 12040)"), "");
  EXPECT_EQ(driver_fault(TILEFUSE_FAKE_DRIVER_OLD, "update the NVIDIA driver"), "");
}

TEST(Faults, DriverWithoutEntryPointsIsNamed) {
  EXPECT_EQ(driver_fault(TILEFUSE_FAKE_DRIVER_PARTIAL, "has no symbol cuInit (not a CUDA driver, or one too old)"), "");
}

TEST(Faults, DriverWithoutDeviceIsNamed) {
  EXPECT_EQ(driver_fault(TILEFUSE_FAKE_DRIVER_NODEVICE, "cuInit failed with CUDA_ERROR_NO_DEVICE"), "");
}
