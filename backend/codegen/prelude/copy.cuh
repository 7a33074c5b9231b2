//! Asynchronous copies, emitted only into kernels that copy into stages: a copy of 4, 8 or 16 bytes
//! from global to shared memory that does not wait for the data (cp.async, sm_80 and later; `on` false
//! writes zeros and reads nothing; tf_copy_async_prefix reads only the first `n` bytes and writes zeros
//! after them, the bytes of its last word below n synchronously), the wait for all of this thread's
//! copies, and groups of copies (commit, wait for the older).
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
  // Reads exactly the first n bytes: the whole 4-byte words among them asynchronously, the words after
  // them zero-filled (asynchronously, reading nothing), and the word that n ends inside, if any, with a
  // plain load of its bytes below n. One cp.async of Bytes with src-size n reads no more either, but
  // compute-sanitizer counts all Bytes as read, and at the end of an allocation reports the rest.
  unsigned char* const d = static_cast<unsigned char*>(dst);
  const unsigned char* const s = static_cast<const unsigned char*>(src);
  const unsigned whole = n & ~3u;
#pragma unroll
  for (unsigned k = 0; k < (unsigned)Bytes; k += 4)
    if (k != whole || (n & 3u) == 0u) tf_copy_async<4>(d + k, s + k, k < whole);
  if (n & 3u) {
    unsigned word = 0u;
    if (n & 2u) word = *reinterpret_cast<const unsigned short*>(s + whole);
    if (n & 1u) word |= (unsigned)s[n - 1u] << (8u * ((n & 3u) - 1u));
    *reinterpret_cast<unsigned*>(d + whole) = word;
  }
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
