// The CUDA Driver API, reached through dlopen("libcuda.so.1") so that binaries start (and GPU tests skip)
// on machines with no driver. Exposes opaque handles only: nothing outside driver.cpp sees <cuda.h>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tilefuse::driver {

/// A failed driver call: names the call, the kernel (when there is one) and the CUDA error.
class DriverError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// No usable GPU: no driver library (libcuda.so.1, or TILEFUSE_CUDA_DRIVER), a driver too old for the CUDA
/// tilefuse was built with, no device, or a driver that refuses to start; what() says which.
class DeviceUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Whether a GPU can be used; when not, `reason` (if given) receives why.
bool available(std::string* reason = nullptr);

/// Facts about device 0 that code generation and benchmarks need.
struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int l2_bytes = 0;
  std::size_t total_memory = 0;
  int driver_version = 0;
  int max_shared_per_block = 0;  ///< bytes of shared memory one thread block may opt in to
  /// Peak DRAM bytes per second: the memory clock (two transfers a cycle) times the bus width; 0 where the
  /// driver does not report them.
  std::int64_t memory_bandwidth = 0;
  /// "sm_90" for compute capability 9.0.
  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};

/// Device 0, initializing the driver and making its primary context current on this thread.
/// Throws DeviceUnavailable when there is none.
const DeviceInfo& device();

/// Makes the primary context current on the calling thread (cheap after the first call on a thread).
void make_current();

/// Allocates device memory (bytes); throws DriverError when out of memory.
std::uint64_t allocate(std::size_t bytes);
/// Frees device memory from allocate(); never throws.
void release(std::uint64_t address) noexcept;
/// Host to device copy, synchronous.
void copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes);
/// Device to host copy, synchronous.
void copy_to_host(void* dst, std::uint64_t src, std::size_t bytes);
/// Device to device copy, asynchronous on `stream`.
void copy_device(std::uint64_t dst, std::uint64_t src, std::size_t bytes, void* stream = nullptr);
/// Sets `bytes` bytes to `value`, asynchronous on `stream`.
void fill_bytes(std::uint64_t dst, std::uint8_t value, std::size_t bytes, void* stream = nullptr);
/// Waits for all work on the device; errors from earlier launches surface here.
void synchronize();

/// A loaded CUBIN (one per compiled kernel in the primary context); unloads on destruction.
class Module {
 public:
  /// Loads `cubin`; `kernel` names the kernel in error messages.
  Module(const std::vector<char>& cubin, const std::string& kernel);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  /// The CUfunction named `name` in this module.
  void* function(const std::string& name) const;

 private:
  void* module_ = nullptr;
  std::string kernel_;
};

/// Launch geometry.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// Launches `function`; `params` points to one pointer per kernel parameter. Errors name `kernel`.
void launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream, void** params,
            const char* kernel);

/// Launches `function` as launch() does, with programmatic stream serialization allowed (programmatic
/// dependent launch, sm_90 and later): it may start before the stream's previous kernel ends, its programs
/// waiting at griddepcontrol.wait. Where the driver lacks cuLaunchKernelEx or the GPU is older than sm_90,
/// an ordinary launch (which waits for the previous kernel). Errors name `kernel`.
void launch_overlapping(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream, void** params,
                        const char* kernel);

/// Launches `function` cooperatively: every block of the grid is resident at once (the driver refuses a
/// larger grid), so that blocks may wait for one another. Errors name `kernel`.
void launch_cooperative(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream, void** params,
                        const char* kernel);
/// Blocks of `block_threads` threads and `shared_bytes` of dynamic shared memory that one SM holds at once
/// of `function`. Errors name `kernel`.
int resident_blocks_per_sm(void* function, int block_threads, unsigned shared_bytes, const char* kernel);
/// Clusters of `cluster` blocks (the size `function` compiles in) of `block` threads and `shared_bytes` of
/// dynamic shared memory that the GPU holds at once: the driver's count, which knows how clusters fit the
/// GPCs (cuOccupancyMaxActiveClusters). 0 where the driver lacks it or the GPU is older than sm_90.
/// Errors name `kernel`.
int resident_clusters(void* function, int cluster, Dim3 block, unsigned shared_bytes, const char* kernel);

/// Lets `function` take `bytes` of dynamic shared memory per block (above the default 48 KB too) and asks
/// for `carveout` percent of the SM's L1/shared array as shared memory (-1: the driver's choice). Errors
/// name `kernel`.
void reserve_dynamic_shared(void* function, int bytes, int carveout, const char* kernel);
/// Lets `function`, which compiles in a cluster of more than 8 blocks, launch and be asked about such
/// clusters (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED). Errors name `kernel`.
void allow_non_portable_clusters(void* function, const char* kernel);
/// The 16-bit element types a tensor map reads.
enum class TensorElement : std::uint8_t { f16, bf16 };
/// Writes into `map` (128 bytes, 64-byte aligned: a CUtensorMap) the tensor map of a row-major matrix of
/// `rows` x `cols` 16-bit elements at device address `address` (16-byte aligned, rows of cols elements,
/// cols * 2 a multiple of 16), read in boxes of box_rows x box_cols with 128-byte swizzle, zeros outside
/// the matrix. Throws naming `kernel` if the driver cannot.
void encode_tensor_map_2d(void* map, TensorElement element, std::uint64_t address, std::uint64_t cols, std::uint64_t rows, std::uint32_t box_cols,
                          std::uint32_t box_rows, const char* kernel);

/// The raw cuLaunchKernel entry point, for benchmarks that compare against a launch with no wrapper.
using RawLaunch = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                          void**);
/// The driver's cuLaunchKernel.
RawLaunch raw_launch();

/// A CUDA stream; destroys it on destruction.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// The CUstream as an opaque handle.
  void* handle() const { return stream_; }
  /// Waits for the stream's work.
  void synchronize() const;

 private:
  void* stream_ = nullptr;
};

/// A CUDA event for timing.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Records the event on `stream`.
  void record(void* stream = nullptr);
  /// Waits until the event has happened.
  void synchronize() const;
  /// Milliseconds between two recorded events.
  static float elapsed_ms(const Event& start, const Event& stop);

 private:
  void* event_ = nullptr;
};

}  // namespace tilefuse::driver
