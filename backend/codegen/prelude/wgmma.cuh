//! Warpgroup MMA helpers (sm_90a), emitted only into kernels whose dots run on wgmma: the shared-memory
//! matrix descriptor, the fences and the commit and wait of wgmma groups. The wgmma instructions
//! themselves are generated per shape beside the kernel (their operand lists depend on N).
// ---- tilefuse warpgroup MMA helpers ----
// A wgmma shared-memory matrix descriptor: the start address, the leading and stride byte offsets, and the
// swizzle (1: 128-byte rows, 2: 64-byte, 3: 32-byte).
__device__ __forceinline__ unsigned long long tf_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned swizzle) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | ((unsigned long long)swizzle << 62);
}
// Orders this thread's register writes before the wgmmas that follow (accumulators, A fragments).
__device__ __forceinline__ void tf_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void tf_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most N of the wgmma groups this warpgroup committed are still running.
template <int N> __device__ __forceinline__ void tf_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
// Keeps the compiler from moving accesses of an accumulator across the asynchronous wgmmas that write it.
__device__ __forceinline__ void tf_wgmma_fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// Makes this thread's shared-memory writes (stores, cp.async) visible to wgmma, which reads through the async proxy.
__device__ __forceinline__ void tf_fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
