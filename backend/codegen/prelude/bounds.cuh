//! Debug bounds checks, emitted only into kernels compiled with TILEFUSE_DEBUG_BOUNDS=1: every global
//! access's address goes through tf_bounds, which compares the run of elements it touches with its
//! argument's element count; the first violation of a launch is recorded in the TfFault the runtime
//! passes (and reads back after the launch), and the access goes to a scratch word instead of memory.
// ---- tilefuse bounds checks ----
struct TfFault {
  int hit;             // 0 until the first violation
  int param;           // the argument
  int site;            // the access (the runtime's table of the kernel's loads, stores and copies)
  int thread;          // threadIdx.x
  long long element;   // the first element of the run the access touches
  long long count;     // the argument's elements
  int block[3];        // blockIdx
  int width;           // elements in the run
};
__device__ __align__(16) unsigned long long tf_sink[2];
template <class T>
__device__ __forceinline__ T* tf_bounds(T* p, const void* base, long long count, int width, int param, int site, TfFault* f,
                                        bool active) {
  const long long bytes = (const char*)p - (const char*)base;
  const long long element = bytes / (long long)sizeof(T);
  if (!active || (element >= 0 && element + width <= count && bytes % (long long)sizeof(T) == 0)) return p;
  if (atomicCAS(&f->hit, 0, 1) == 0) {
    f->param = param;
    f->site = site;
    f->thread = (int)threadIdx.x;
    f->element = element;
    f->count = count;
    f->block[0] = (int)blockIdx.x;
    f->block[1] = (int)blockIdx.y;
    f->block[2] = (int)blockIdx.z;
    f->width = width;
    __threadfence_system();
  }
  return (T*)tf_sink;
}
