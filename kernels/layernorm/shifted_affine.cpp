// LayerNorm's shifted copies of w and b for rows read through aligned windows: the launch that writes
// them (layernorm_shifted_affine_program), into scratch the library keeps per stream.
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/programs.hpp"
#include "kernels/rows/workspace.hpp"

namespace tilefuse::kernels::layernorm_launch {

namespace {

// Arg `a` advanced by `elements` (what remains of it after them).
Arg advanced(const Arg& a, std::int64_t elements) {
  Arg r = a;
  const std::size_t bytes = static_cast<std::size_t>(elements) * static_cast<std::size_t>(ir::dtype_bytes(a.dtype));
  if (a.kind == Arg::Kind::host_memory) r.host = static_cast<char*>(a.host) + bytes;
  else r.device = a.device + bytes;
  r.count = a.count - static_cast<std::size_t>(elements);
  return r;
}

}  // namespace

ShiftedAffine launch_shifted_affine(const RowCall& call, const Args& a, LaunchChain& chain) {
  const int bytes = ir::dtype_bytes(a.x.dtype);
  const std::int64_t copies = 16 / bytes;  // one per offset of a row from its window's start
  // S: a copy of w, then one of b, each S elements, S a multiple of 16 (so that every copy starts on a
  // 16-byte boundary, and the row kernels' divisibility of 2S proves it).
  const std::int64_t half = (call.cols + copies + 15) / 16 * 16;
  const Arg scratch = scratch_elements(call.opt, a.x.dtype, 2 * copies * half);
  constexpr int kBlock = 1024;
  with_float_dtype(a.x.dtype, [&]<class T>() {
    static constexpr const char* params[] = {"w", "b", "copies", "n", "half_stride"};
    Program& p = kernel_for<&layernorm_shifted_affine_program<T, kBlock>>(KernelShape{}, [] { return std::string("layernorm_shifted_affine"); },
                                                                          params);
    chain(p, Grid((call.cols + kBlock - 1) / kBlock, copies), std::array{a.w, a.b, scratch, i32(call.cols), i32(half)});
  });
  return {scratch, advanced(scratch, half), i32(2 * half)};
}

}  // namespace tilefuse::kernels::layernorm_launch
