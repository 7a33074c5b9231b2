//! Asynchronous copies, emitted only into kernels that copy into stages: a copy of 4, 8 or 16 bytes
//! from global to shared memory that does not wait for the data (cp.async, sm_80 and later; `on` false
//! writes zeros and reads nothing; tf_copy_async_prefix reads only the first `n` bytes and writes zeros
//! after them), the wait for all of this thread's copies, and groups of copies (commit, wait for the older).
// ---- tilefuse asynchronous copies ----
template <int Bytes> struct alignas(Bytes) tf_chunk { unsigned w[Bytes / 4]; };
template <int Bytes> __device__ __forceinline__ void tf_copy_async(void* dst, const void* src, bool on) {
#if __CUDA_ARCH__ >= 800
  unsigned d;
  asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(d) : "l"(dst));
  if (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src), "r"(on ? 16 : 0) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(d), "l"(src), "n"(Bytes), "r"(on ? Bytes : 0) : "memory");
#else
  tf_chunk<Bytes> c = {};
  if (on) c = *reinterpret_cast<const tf_chunk<Bytes>*>(src);
  *reinterpret_cast<tf_chunk<Bytes>*>(dst) = c;
#endif
}
template <int Bytes> __device__ __forceinline__ void tf_copy_async_prefix(void* dst, const void* src, unsigned n) {
#if __CUDA_ARCH__ >= 800
  unsigned d;
  asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(d) : "l"(dst));
  if (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src), "r"(n) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(d), "l"(src), "n"(Bytes), "r"(n) : "memory");
#else
  unsigned char* const out = static_cast<unsigned char*>(dst);
  for (unsigned k = 0; k < (unsigned)Bytes; ++k) out[k] = k < n ? static_cast<const unsigned char*>(src)[k] : 0;
#endif
}
__device__ __forceinline__ void tf_copy_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
// Closes this thread's group of copies issued since the last one, and waits until at most N of its newest
// groups are in flight (the older ones have landed).
__device__ __forceinline__ void tf_copy_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void tf_copy_wait_groups() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#endif
}
