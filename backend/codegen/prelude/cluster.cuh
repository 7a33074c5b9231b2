//! Thread-block cluster helpers (sm_90), emitted only into kernels with cluster reductions: a barrier
//! over the cluster's blocks, and a read of the same shared variable in another block of the cluster
//! (distributed shared memory: mapa gives that block's address of it).
// ---- tilefuse thread-block cluster ----
__device__ __forceinline__ void tf_cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void tf_cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ void tf_cluster_sync() { tf_cluster_arrive(); tf_cluster_wait(); }
__device__ __forceinline__ float tf_cluster_read(const float* slot, unsigned rank) {
  unsigned local, remote;
  float v;
  asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(local) : "l"(slot));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
