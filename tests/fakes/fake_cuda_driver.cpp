// Stand-ins for the CUDA driver library (libcuda.so.1), loaded through TILEFUSE_CUDA_DRIVER by the fault
// tests to inject a driver that is too old, one that lacks entry points, and one with every entry point
// whose cuInit fails. Built as modules, three times, with:
//   FAKE_DRIVER_VERSION  what cuDriverGetVersion reports (CUDA 12.4 is 12040)
//   FAKE_ALL_SYMBOLS     define every entry point tilefuse resolves (cuInit fails with no device);
//                        without it, the library has cuDriverGetVersion only
// Nothing here is called with real arguments except cuDriverGetVersion, cuInit and the error names.

extern "C" {

int cuDriverGetVersion(int* version) {
  *version = FAKE_DRIVER_VERSION;
  return 0;
}

#ifdef FAKE_ALL_SYMBOLS
constexpr int kNoDevice = 100;  // CUDA_ERROR_NO_DEVICE

int cuInit(unsigned) { return kNoDevice; }
int cuGetErrorName(int, const char** name) {
  *name = "CUDA_ERROR_NO_DEVICE";
  return 0;
}
int cuGetErrorString(int, const char** text) {
  *text = "no CUDA-capable device is detected (a fake driver)";
  return 0;
}

// The rest are never reached once cuInit fails; they exist so that every symbol resolves.
#define FAKE_ENTRY(name) \
  int name() { return kNoDevice; }
FAKE_ENTRY(cuDeviceGet)
FAKE_ENTRY(cuDeviceGetCount)
FAKE_ENTRY(cuDeviceGetName)
FAKE_ENTRY(cuDeviceGetAttribute)
FAKE_ENTRY(cuDeviceTotalMem_v2)
FAKE_ENTRY(cuDevicePrimaryCtxRetain)
FAKE_ENTRY(cuCtxSetCurrent)
FAKE_ENTRY(cuCtxSynchronize)
FAKE_ENTRY(cuMemAlloc_v2)
FAKE_ENTRY(cuMemFree_v2)
FAKE_ENTRY(cuMemcpyHtoD_v2)
FAKE_ENTRY(cuMemcpyDtoH_v2)
FAKE_ENTRY(cuMemcpyDtoDAsync_v2)
FAKE_ENTRY(cuMemsetD8Async)
FAKE_ENTRY(cuModuleLoadData)
FAKE_ENTRY(cuModuleUnload)
FAKE_ENTRY(cuModuleGetFunction)
FAKE_ENTRY(cuLaunchKernel)
FAKE_ENTRY(cuLaunchCooperativeKernel)
FAKE_ENTRY(cuOccupancyMaxActiveBlocksPerMultiprocessor)
FAKE_ENTRY(cuFuncSetAttribute)
FAKE_ENTRY(cuStreamCreate)
FAKE_ENTRY(cuStreamDestroy_v2)
FAKE_ENTRY(cuStreamSynchronize)
FAKE_ENTRY(cuEventCreate)
FAKE_ENTRY(cuEventDestroy_v2)
FAKE_ENTRY(cuEventRecord)
FAKE_ENTRY(cuEventSynchronize)
FAKE_ENTRY(cuEventElapsedTime_v2)
#endif

}  // extern "C"
