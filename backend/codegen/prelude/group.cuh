//! Resident-group helpers, emitted only into kernels whose cluster reductions combine over groups of
//! co-resident programs through global memory (KernelOptions::resident_groups): each program publishes its
//! value, meets the rest of its group at a barrier in global memory, and combines the group's values in
//! program order. The launch is cooperative, so every program of a group runs at once and a wait ends.
// ---- tilefuse resident groups ----
// Workspace: arrival counts (tf_group_count: one word per group slot, zero when a launch starts) and two
// floats per program (tf_group_values). A program's reductions are numbered in the order it runs them (its
// rounds: a reduction inside a loop takes a round per iteration); round k of a group is over once its
// count reaches (k + 1) x size: counts only grow within a launch. Round k's values take the slot of k's
// parity: a program writes that slot again only in round k + 2, whose arrival follows every member's
// round k + 1, and so every member's reads of round k. Launches alternate between two arrays of counts:
// each launch zeroes the other (tf_group_next, every slot a grid can have) for the next one, while the
// launch before it, which used that array, has ended.
__device__ __forceinline__ unsigned tf_ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned tf_arrive(unsigned* p) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}
// Arrives at `count` (this program's value, stored before, visible first) and waits until it reaches
// `target`; after at most about 2^25 polls (seconds) it traps, so that a group that cannot all be
// resident fails with an error instead of hanging (a cooperative launch never gets there).
__device__ __noinline__ void tf_group_wait(unsigned* count, unsigned target) {
  if (tf_arrive(count) + 1u >= target) return;
  for (unsigned polls = 0; tf_ld_acquire(count) < target; ++polls) {
    if (polls > (1u << 25)) __trap();
    __nanosleep(32);
  }
}
// Round k of the program: every thread gets the max (or sum) of `value` over the group's programs,
// combined in program order by lanes of warp 0 and one fixed shuffle tree, so every program of the group
// gets the same bits. `value` is the same in every thread of the program.
__device__ __forceinline__ float tf_group_combine(unsigned* count, unsigned* next, float* all_values, int size, int slots, unsigned k,
                                                  float value, bool max, float* slot) {
  const unsigned programs = gridDim.x, group = blockIdx.x / size, member = blockIdx.x % size;
  float* const values = all_values + (size_t)(k & 1u) * programs + (size_t)group * size;
  __syncthreads();  // the threads' earlier reads of `slot` are done
  if (threadIdx.x == 0) {
    if (k == 0)
      for (int s = (int)blockIdx.x; s < slots; s += (int)programs) next[s] = 0u;
    values[member] = value;
    tf_group_wait(count + group, (k + 1u) * (unsigned)size);
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    float acc = max ? -__int_as_float(0x7f800000) : 0.0f;
    for (int i = (int)threadIdx.x; i < size; i += 32) {
      const float v = __ldcg(values + i);
      acc = max ? fmaxf(acc, v) : acc + v;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, acc, o);
      acc = max ? fmaxf(acc, other) : acc + other;
    }
    if (threadIdx.x == 0) *slot = acc;
  }
  __syncthreads();
  return *slot;
}
