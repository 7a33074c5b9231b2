// The CUDA Driver API through dlopen("libcuda.so.1") (see driver.hpp): entry points resolved once, the
// primary context of device 0, memory, modules, launches, streams and events, every failure named.
#include "backend/driver/driver.hpp"

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>

#include "backend/knobs/knobs.hpp"

namespace tilefuse::driver {

namespace {

// Entry points resolved from libcuda.so.1. decltype of the header's declarations gives the exact types
// without referencing (and so linking) the symbols themselves.
struct Api {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDeviceTotalMem) device_total_mem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemcpyDtoDAsync) memcpy_dtod_async = nullptr;
  decltype(&::cuMemsetD8Async) memset_d8_async = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuLaunchCooperativeKernel) launch_cooperative_kernel = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy_max_active_blocks = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;  // optional: null before CUDA 12
  decltype(&::cuLaunchKernelEx) launch_kernel_ex = nullptr;                 // optional: null before CUDA 12
  decltype(&::cuOccupancyMaxActiveClusters) occupancy_max_active_clusters = nullptr;  // optional: null before CUDA 12
};

struct State {
  Api api;
  bool ok = false;
  std::string reason;
  DeviceInfo info;
  CUcontext context = nullptr;
};

std::string error_text(const Api& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.get_error_name) api.get_error_name(r, &name);
  if (api.get_error_string) api.get_error_string(r, &text);
  return std::string(name ? name : "CUDA_ERROR_" + std::to_string(static_cast<int>(r))) + " (" +
         (text ? text : "no description") + ")";
}

template <class F>
bool resolve(void* lib, const char* symbol, F& out, std::string& reason) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!out) reason = "the CUDA driver library " + knobs::cuda_driver() + " has no symbol " + symbol + " (not a CUDA driver, or one too old)";
  return out != nullptr;
}

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The CUBINs tilefuse loads come from the NVRTC of the toolkit it was built with (CUDA_VERSION of its
// cuda.h); a driver runs them from the same major release on (CUDA's minor-version compatibility).
bool driver_new_enough(void* lib, Api& a, std::string& why) {
  if (!resolve(lib, "cuDriverGetVersion", a.driver_get_version, why)) return false;
  int version = 0;
  if (a.driver_get_version(&version) != CUDA_SUCCESS) {
    why = "cuDriverGetVersion of the CUDA driver library " + knobs::cuda_driver() + " failed";
    return false;
  }
  constexpr int kNeeded = CUDA_VERSION / 1000 * 1000;
  if (version < kNeeded) {
    why = "the CUDA driver is too old: it supports CUDA " + cuda_version_text(version) + " (cuDriverGetVersion gives " +
          std::to_string(version) + "), and tilefuse, built with CUDA " + cuda_version_text(CUDA_VERSION) +
          ", needs a driver for CUDA " + cuda_version_text(kNeeded) + " or newer; update the NVIDIA driver";
    return false;
  }
  return true;
}

// Resolves every entry point from `lib` but cuDriverGetVersion (driver_new_enough resolved it first); on
// failure `why` says which symbol is missing.
bool resolve_api(void* lib, Api& a, std::string& why) {
  // Versioned names: the _v2 entry points are the ones the header's macros select.
  return resolve(lib, "cuInit", a.init, why) && resolve(lib, "cuGetErrorName", a.get_error_name, why) &&
      resolve(lib, "cuGetErrorString", a.get_error_string, why) &&
      resolve(lib, "cuDeviceGet", a.device_get, why) &&
      resolve(lib, "cuDeviceGetCount", a.device_get_count, why) &&
      resolve(lib, "cuDeviceGetName", a.device_get_name, why) &&
      resolve(lib, "cuDeviceGetAttribute", a.device_get_attribute, why) &&
      resolve(lib, "cuDeviceTotalMem_v2", a.device_total_mem, why) &&
      resolve(lib, "cuDevicePrimaryCtxRetain", a.primary_ctx_retain, why) &&
      resolve(lib, "cuCtxSetCurrent", a.ctx_set_current, why) &&
      resolve(lib, "cuCtxSynchronize", a.ctx_synchronize, why) && resolve(lib, "cuMemAlloc_v2", a.mem_alloc, why) &&
      resolve(lib, "cuMemFree_v2", a.mem_free, why) && resolve(lib, "cuMemcpyHtoD_v2", a.memcpy_htod, why) &&
      resolve(lib, "cuMemcpyDtoH_v2", a.memcpy_dtoh, why) &&
      resolve(lib, "cuMemcpyDtoDAsync_v2", a.memcpy_dtod_async, why) &&
      resolve(lib, "cuMemsetD8Async", a.memset_d8_async, why) &&
      resolve(lib, "cuModuleLoadData", a.module_load_data, why) &&
      resolve(lib, "cuModuleUnload", a.module_unload, why) &&
      resolve(lib, "cuModuleGetFunction", a.module_get_function, why) &&
      resolve(lib, "cuLaunchKernel", a.launch_kernel, why) &&
      resolve(lib, "cuLaunchCooperativeKernel", a.launch_cooperative_kernel, why) &&
      resolve(lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor", a.occupancy_max_active_blocks, why) &&
      resolve(lib, "cuFuncSetAttribute", a.func_set_attribute, why) &&
      resolve(lib, "cuStreamCreate", a.stream_create, why) &&
      resolve(lib, "cuStreamDestroy_v2", a.stream_destroy, why) &&
      resolve(lib, "cuStreamSynchronize", a.stream_synchronize, why) &&
      resolve(lib, "cuEventCreate", a.event_create, why) && resolve(lib, "cuEventDestroy_v2", a.event_destroy, why) &&
      resolve(lib, "cuEventRecord", a.event_record, why) &&
      resolve(lib, "cuEventSynchronize", a.event_synchronize, why) &&
      resolve(lib, "cuEventElapsedTime_v2", a.event_elapsed_time, why);
}

// Starts the driver and reads device 0's properties into `st` (its context retained); false, with
// st.reason set, when there is no usable device.
bool start_device(State& st) {
  const Api& a = st.api;
  CUresult r = a.init(0);
  if (r != CUDA_SUCCESS) {
    st.reason = "the CUDA driver did not start: cuInit failed with " + error_text(a, r);
    return false;
  }
  int count = 0;
  r = a.device_get_count(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    st.reason = r != CUDA_SUCCESS ? "cuDeviceGetCount failed with " + error_text(a, r) : "no CUDA device is present";
    return false;
  }
  CUdevice dev = 0;
  char name[256] = {};
  int major = 0, minor = 0, sms = 0, l2 = 0, shared_optin = 0;
  std::size_t mem = 0;
  if (a.device_get(&dev, 0) != CUDA_SUCCESS || a.device_get_name(name, sizeof name, dev) != CUDA_SUCCESS ||
      a.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
      a.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS ||
      a.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS ||
      a.device_get_attribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) != CUDA_SUCCESS ||
      a.device_get_attribute(&shared_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev) != CUDA_SUCCESS ||
      a.device_total_mem(&mem, dev) != CUDA_SUCCESS) {
    st.reason = "could not read the properties of CUDA device 0";
    return false;
  }
  r = a.primary_ctx_retain(&st.context, dev);
  if (r != CUDA_SUCCESS) {
    st.reason = "cuDevicePrimaryCtxRetain failed with " + error_text(a, r);
    return false;
  }
  st.info.name = name;
  st.info.cc_major = major;
  st.info.cc_minor = minor;
  st.info.max_shared_per_block = shared_optin;
  st.info.sm_count = sms;
  st.info.l2_bytes = l2;
  st.info.total_memory = mem;
  a.driver_get_version(&st.info.driver_version);
  // Optional facts: a driver that does not report them leaves the bandwidth unknown (0).
  int memory_khz = 0, bus_bits = 0;
  if (a.device_get_attribute(&memory_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) == CUDA_SUCCESS &&
      a.device_get_attribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) == CUDA_SUCCESS && memory_khz > 0 && bus_bits > 0)
    st.info.memory_bandwidth = std::int64_t{memory_khz} * 1000 * 2 * bus_bits / 8;
  return true;
}

State& state() {
  static State s = [] {
    State st;
    const std::string library = knobs::cuda_driver();
    void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      st.reason = "no CUDA driver: dlopen(\"" + library + "\") failed: " + (e ? e : "unknown error") +
                  " (TILEFUSE_CUDA_DRIVER names another library)";
      return st;
    }
    st.ok = driver_new_enough(lib, st.api, st.reason) && resolve_api(lib, st.api, st.reason) && start_device(st);
    // Only kernels with TMA copies need it (a driver without it runs every other kernel).
    st.api.tensor_map_encode_tiled = reinterpret_cast<decltype(st.api.tensor_map_encode_tiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
    // Only launches that overlap the previous kernel need it (launch_overlapping falls back without).
    st.api.launch_kernel_ex = reinterpret_cast<decltype(st.api.launch_kernel_ex)>(dlsym(lib, "cuLaunchKernelEx"));
    // Only the count of clusters a GPU holds at once needs it (resident_clusters says 0 without).
    st.api.occupancy_max_active_clusters =
        reinterpret_cast<decltype(st.api.occupancy_max_active_clusters)>(dlsym(lib, "cuOccupancyMaxActiveClusters"));
    return st;
  }();
  return s;
}

thread_local bool context_is_current = false;

const Api& api() {
  make_current();
  return state().api;
}

void check(CUresult r, const char* call, const std::string& kernel = {}) {
  if (r == CUDA_SUCCESS) return;
  throw DriverError("tilefuse driver: " + std::string(call) + (kernel.empty() ? "" : " (kernel '" + kernel + "')") +
                    " failed: " + error_text(state().api, r));
}

}  // namespace

bool available(std::string* reason) {
  const State& s = state();
  if (!s.ok && reason) *reason = s.reason;
  return s.ok;
}

const DeviceInfo& device() {
  make_current();
  return state().info;
}

void make_current() {
  if (context_is_current) return;
  State& s = state();
  if (!s.ok) throw DeviceUnavailable("tilefuse: no GPU available: " + s.reason);
  check(s.api.ctx_set_current(s.context), "cuCtxSetCurrent");
  context_is_current = true;
}

std::uint64_t allocate(std::size_t bytes) {
  CUdeviceptr p = 0;
  check(api().mem_alloc(&p, bytes == 0 ? 1 : bytes), ("cuMemAlloc of " + std::to_string(bytes) + " bytes").c_str());
  return p;
}

void release(std::uint64_t address) noexcept {
  if (address && state().ok) state().api.mem_free(address);
}

void copy_to_device(std::uint64_t dst, const void* src, std::size_t bytes) {
  if (bytes) check(api().memcpy_htod(dst, src, bytes), "cuMemcpyHtoD");
}

void copy_to_host(void* dst, std::uint64_t src, std::size_t bytes) {
  if (bytes) check(api().memcpy_dtoh(dst, src, bytes), "cuMemcpyDtoH");
}

void copy_device(std::uint64_t dst, std::uint64_t src, std::size_t bytes, void* stream) {
  if (bytes) check(api().memcpy_dtod_async(dst, src, bytes, static_cast<CUstream>(stream)), "cuMemcpyDtoDAsync");
}

void fill_bytes(std::uint64_t dst, std::uint8_t value, std::size_t bytes, void* stream) {
  if (bytes) check(api().memset_d8_async(dst, value, bytes, static_cast<CUstream>(stream)), "cuMemsetD8Async");
}

void synchronize() { check(api().ctx_synchronize(), "cuCtxSynchronize"); }

Module::Module(const std::vector<char>& cubin, const std::string& kernel) : kernel_(kernel) {
  CUmodule m = nullptr;
  check(api().module_load_data(&m, cubin.data()), "cuModuleLoadData", kernel_);
  module_ = m;
}

Module::~Module() {
  if (module_ && state().ok) state().api.module_unload(static_cast<CUmodule>(module_));
}

void* Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  check(api().module_get_function(&f, static_cast<CUmodule>(module_), name.c_str()), "cuModuleGetFunction", kernel_);
  return f;
}

void launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream, void** params,
            const char* kernel) {
  const CUresult r = api().launch_kernel(static_cast<CUfunction>(function), grid.x, grid.y, grid.z, block.x, block.y,
                                         block.z, shared_bytes, static_cast<CUstream>(stream), params, nullptr);
  if (r != CUDA_SUCCESS) check(r, "cuLaunchKernel", kernel);
}

void launch_overlapping(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream, void** params,
                        const char* kernel) {
  const Api& a = api();
  if (!a.launch_kernel_ex || device().cc_major < 9) return launch(function, grid, block, shared_bytes, stream, params, kernel);
  CUlaunchAttribute overlap{};
  overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  overlap.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = shared_bytes;
  config.hStream = static_cast<CUstream>(stream);
  config.attrs = &overlap;
  config.numAttrs = 1;
  const CUresult r = a.launch_kernel_ex(&config, static_cast<CUfunction>(function), params, nullptr);
  if (r != CUDA_SUCCESS) check(r, "cuLaunchKernelEx", kernel);
}

void launch_cooperative(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream, void** params,
                        const char* kernel) {
  const CUresult r = api().launch_cooperative_kernel(static_cast<CUfunction>(function), grid.x, grid.y, grid.z, block.x, block.y,
                                                     block.z, shared_bytes, static_cast<CUstream>(stream), params);
  if (r != CUDA_SUCCESS) check(r, "cuLaunchCooperativeKernel", kernel);
}

int resident_blocks_per_sm(void* function, int block_threads, unsigned shared_bytes, const char* kernel) {
  int blocks = 0;
  check(api().occupancy_max_active_blocks(&blocks, static_cast<CUfunction>(function), block_threads, shared_bytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", kernel);
  return blocks;
}

int resident_clusters(void* function, int cluster, Dim3 block, unsigned shared_bytes, const char* kernel) {
  const Api& a = api();
  if (!a.occupancy_max_active_clusters || device().cc_major < 9) return 0;
  // The kernel compiles its cluster size in (__cluster_dims__), so the configuration leaves it unspecified;
  // the grid is one cluster.
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(cluster);
  config.gridDimY = 1;
  config.gridDimZ = 1;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = shared_bytes;
  int clusters = 0;
  check(a.occupancy_max_active_clusters(&clusters, static_cast<CUfunction>(function), &config), "cuOccupancyMaxActiveClusters", kernel);
  return clusters;
}

void allow_non_portable_clusters(void* function, const char* kernel) {
  check(api().func_set_attribute(static_cast<CUfunction>(function), CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
        "cuFuncSetAttribute", kernel);
}

void reserve_dynamic_shared(void* function, int bytes, int carveout, const char* kernel) {
  const auto f = static_cast<CUfunction>(function);
  check(api().func_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes), "cuFuncSetAttribute", kernel);
  if (carveout >= 0)
    check(api().func_set_attribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout), "cuFuncSetAttribute", kernel);
}

void encode_tensor_map_2d(void* map, TensorElement element, std::uint64_t address, std::uint64_t cols, std::uint64_t rows, std::uint32_t box_cols,
                          std::uint32_t box_rows, const char* kernel) {
  if (!api().tensor_map_encode_tiled)
    throw std::runtime_error(std::string("tilefuse: kernel '") + kernel + "' copies with TMA, and the CUDA driver " + knobs::cuda_driver() +
                             " has no cuTensorMapEncodeTiled (CUDA 12.0 or later has it)");
  const CUtensorMapDataType type = element == TensorElement::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * 2};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  check(api().tensor_map_encode_tiled(static_cast<CUtensorMap*>(map), type, 2, reinterpret_cast<void*>(address), dims, strides, box,
                                      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled", kernel);
}

RawLaunch raw_launch() { return reinterpret_cast<RawLaunch>(api().launch_kernel); }

Stream::Stream() {
  CUstream s = nullptr;
  check(api().stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  stream_ = s;
}

Stream::~Stream() {
  if (stream_ && state().ok) state().api.stream_destroy(static_cast<CUstream>(stream_));
}

void Stream::synchronize() const { check(api().stream_synchronize(static_cast<CUstream>(stream_)), "cuStreamSynchronize"); }

Event::Event() {
  CUevent e = nullptr;
  check(api().event_create(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  event_ = e;
}

Event::~Event() {
  if (event_ && state().ok) state().api.event_destroy(static_cast<CUevent>(event_));
}

void Event::record(void* stream) {
  check(api().event_record(static_cast<CUevent>(event_), static_cast<CUstream>(stream)), "cuEventRecord");
}

void Event::synchronize() const { check(api().event_synchronize(static_cast<CUevent>(event_)), "cuEventSynchronize"); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  check(api().event_elapsed_time(&ms, static_cast<CUevent>(start.event_), static_cast<CUevent>(stop.event_)),
        "cuEventElapsedTime");
  return ms;
}

}  // namespace tilefuse::driver
