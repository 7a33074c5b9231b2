//! Programmatic dependent launch (sm_90 and later), emitted only into kernels that order themselves
//! against their stream's neighbours (tl::gdc_wait, tl::gdc_launch_dependents). Both are no-ops on
//! older GPUs, and on a launch made without the attribute (LaunchConfig::pdl) that lets it overlap.
// ---- tilefuse grid ordering ----
// Waits until the kernels this launch may overlap have finished and their writes are visible.
__device__ __forceinline__ void tf_gdc_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Lets the stream's next kernel start its programs before this one's have finished.
__device__ __forceinline__ void tf_gdc_launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
