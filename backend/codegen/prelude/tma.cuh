//! TMA helpers (sm_90), emitted only into kernels whose pipelined loads are copied by the tensor memory
//! accelerator: the tensor map parameter type, the mbarriers a stage's copies complete on, and the 2D
//! bulk tensor copies, into shared memory and out of it. One thread issues a stage's copies; every thread
//! waits on the stage's mbarrier.
// ---- tilefuse TMA helpers ----
// A tensor map (CUtensorMap: 128 opaque bytes) as a kernel parameter, encoded by the runtime at launch.
struct __align__(64) tf_tmap { unsigned long long opaque[16]; };
// Initializes mbarriers bar .. bar + 8 (N - 1), each completing when one thread has arrived and its
// copies' bytes have landed, and makes the initialization visible to the copies (call from one thread).
template <int N> __device__ __forceinline__ void tf_mbar_init(unsigned bar) {
  for (int s = 0; s < N; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar + 8 * s) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Arrives on mbarrier `bar` expecting `bytes` more from the copies that complete on it.
__device__ __forceinline__ void tf_mbar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// Waits until the phase of mbarrier `bar` with parity `parity` has completed.
__device__ __forceinline__ void tf_mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nTF_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra TF_WAIT;\n}"
               :: "r"(bar), "r"(parity) : "memory");
}
// Copies the box of `map` at (c0 inner, c1 outer) to shared address `dst`, completing on mbarrier `bar`
// (elements outside the tensor map's dimensions are written as zeros).
__device__ __forceinline__ void tf_tma2d(unsigned dst, const tf_tmap* map, int c0, int c1, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
// Stores the box of `map` at (c0 inner, c1 outer) from shared address `src` (elements outside the tensor
// map's dimensions are not written), as one bulk-copy group.
__device__ __forceinline__ void tf_tma2d_store(const tf_tmap* map, int c0, int c1, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(src) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Waits until this thread's bulk stores have read their shared memory.
__device__ __forceinline__ void tf_tma_store_wait() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// ---- end of TMA helpers ----
