// Prints what tilefuse makes of a tile program, without a GPU: the IR, the generated CUDA C++, the PTX,
// and the ptxas register and spill report of the CUBIN for sm_90 (or --arch).
//
//   inspect [--kernel softmax|row_max|layernorm|rmsnorm] [--dtype f32|f16|bf16] [--block N] [--arch sm_90] [--only ir|cuda|ptx|report]
//           [--cols N]  (specialize as a launch on rows of N elements with stride N does)
//           [--cubin FILE]   (also writes the CUBIN, for cuobjdump --dump-sass FILE)
#include <cstdio>
#include <fstream>
#include <string>

#include "backend/nvrtc/nvrtc.hpp"
#include "backend/codegen/cuda.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/softmax.hpp"

using namespace tilefuse;

namespace {

template <class T>
Program& pick(const std::string& kernel, std::int64_t block) {
  Program* p = nullptr;
  kernels::with_block<kernels::kSoftmaxMaxCols>(block, [&]<int B>() {
    if (kernel == "softmax") p = &kernels::softmax_kernel<T, B>().program();
    else if (kernel == "row_max")
      p = &kernels::row_max_kernel<T, B>().program();
    else if (kernel == "layernorm") p = &kernels::layernorm_kernel<T, B>().program();
    else if (kernel == "rmsnorm") p = &kernels::rmsnorm_kernel<T, B>().program();
  });
  if (!p) throw std::invalid_argument("inspect: --kernel must be softmax, row_max, layernorm or rmsnorm, got " + kernel);
  return *p;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string kernel = "softmax", dtype = "f32", arch = "sm_90", only, cubin_path;
    std::int64_t block = 4096, cols = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--kernel") kernel = value;
      else if (flag == "--dtype") dtype = value;
      else if (flag == "--block") block = std::stoll(value);
      else if (flag == "--arch") arch = value;
      else if (flag == "--only") only = value;
      else if (flag == "--cubin") cubin_path = value;
      else if (flag == "--cols") cols = std::stoll(value);
      else throw std::invalid_argument("inspect: unknown flag " + flag);
    }
    if (block < 1 || block > kernels::kSoftmaxMaxCols || (block & (block - 1)))
      throw std::invalid_argument("inspect: --block must be a power of two from 1 to 16384");
    Program& p = dtype == "f16" ? pick<tl::f16>(kernel, block)
                 : dtype == "bf16" ? pick<tl::bf16>(kernel, block)
                 : dtype == "f32"  ? pick<tl::f32>(kernel, block)
                                   : throw std::invalid_argument("inspect: --dtype must be f32, f16 or bf16");
    // As a launch on rows of `cols` elements (and that stride) specializes it; else every argument aligned.
    auto spec = p.default_specialization();
    if (cols > 0)
      for (std::size_t i = 0; i < p.ir().params.size(); ++i)
        if (!p.ir().params[i].type.pointer && ir::is_int(p.ir().params[i].type.dtype))
          spec.divisibility[i] = integer_divisibility(cols);
    if (only.empty() || only == "ir") std::printf("==== IR (after simplify, cse, dce) ====\n%s\n", ir::print(p.ir()).c_str());
    const std::string source = p.cuda_source(spec);
    if (only.empty() || only == "cuda") std::printf("==== CUDA C++ ====\n%s\n", source.c_str());
    if (only.empty() || only == "ptx")
      std::printf("==== PTX (%s) ====\n%s\n", arch.c_str(), nvrtc::ptx(source, codegen::kernel_symbol(p.ir()), arch).c_str());
    if (only.empty() || only == "report") {
      const auto info = p.compile(spec, arch);
      std::printf("==== CUBIN for %s ====\noptions: %s\n%s\nregisters: %d, spill bytes: %d, stack bytes: %d\n",
                  arch.c_str(), info.options.c_str(), info.ptxas_log.c_str(), info.registers, info.spill_bytes,
                  info.stack_bytes);
      if (!cubin_path.empty()) std::ofstream(cubin_path, std::ios::binary).write(info.cubin.data(), info.cubin.size());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
