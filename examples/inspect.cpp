// Prints what tilefuse makes of a sample kernel, without a GPU: the IR, the generated CUDA C++, the PTX,
// and the ptxas register and spill report of the CUBIN for sm_90 (or --arch). The program is the one a
// launch on rows of --cols columns runs (kernels::*_programs), of the family and variant asked for.
//
//   inspect [--kernel softmax|softmax_unfused|layernorm|rmsnorm|epilogue|epilogue_unfused]
//           [--variant one_program|looped|split|cluster|staged|automatic] [--splits N] [--index K]
//           [--dtype f32|f16|bf16] [--cols N] [--block N] [--arch sm_90] [--only ir|cuda|ptx|report]
//           [--cubin FILE]   (also writes the CUBIN, for cuobjdump --dump-sass FILE)
// --cols N picks the program a launch on N columns runs and specializes it as such a launch does (rows of
// N elements, stride N); --block N picks the program of an N-column tile and specializes it as if every
// argument were aligned. --index picks among the kernels of a multi-kernel variant (split, unfused).
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "backend/codegen/cuda.hpp"
#include "backend/nvrtc/nvrtc.hpp"
#include "kernels/epilogue/epilogue.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;

namespace {

kernels::RowVariant variant_of(const std::string& name) {
  for (auto v : {kernels::RowVariant::automatic, kernels::RowVariant::one_program, kernels::RowVariant::looped,
                 kernels::RowVariant::split, kernels::RowVariant::cluster, kernels::RowVariant::staged})
    if (name == kernels::variant_name(v)) return v;
  throw std::invalid_argument("inspect: --variant must be one_program, looped, split, cluster, staged or automatic, got " + name);
}

ir::DType dtype_of(const std::string& name) {
  if (name == "f32") return ir::DType::f32;
  if (name == "f16") return ir::DType::f16;
  if (name == "bf16") return ir::DType::bf16;
  throw std::invalid_argument("inspect: --dtype must be f32, f16 or bf16, got " + name);
}

std::vector<const Program*> programs(const std::string& kernel, kernels::RowVariant variant, ir::DType dtype, std::int64_t cols,
                                     std::int64_t splits) {
  const kernels::RowOptions opt{Backend::interpreter};  // the target of inspection: every variant, no GPU needed
  if (kernel == "softmax") return kernels::softmax_programs(variant, dtype, cols, opt, splits);
  if (kernel == "softmax_unfused") return kernels::softmax_unfused_programs(dtype, cols, opt);
  if (kernel == "layernorm") return kernels::layernorm_programs(variant, dtype, cols, opt, splits);
  if (kernel == "rmsnorm") return kernels::rmsnorm_programs(dtype, cols, opt);
  if (kernel == "epilogue" || kernel == "epilogue_unfused") return kernels::epilogue_programs(dtype, cols, kernel == "epilogue", opt);
  throw std::invalid_argument("inspect: --kernel must be softmax, softmax_unfused, layernorm, rmsnorm, epilogue or "
                              "epilogue_unfused, got " + kernel);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string kernel = "softmax", dtype = "f32", arch = "sm_90", only, cubin_path, variant = "one_program";
    std::int64_t block = 0, cols = 0, splits = 0, index = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--kernel") kernel = value;
      else if (flag == "--variant") variant = value;
      else if (flag == "--dtype") dtype = value;
      else if (flag == "--block") block = std::stoll(value);
      else if (flag == "--cols") cols = std::stoll(value);
      else if (flag == "--splits") splits = std::stoll(value);
      else if (flag == "--index") index = std::stoll(value);
      else if (flag == "--arch") arch = value;
      else if (flag == "--only") only = value;
      else if (flag == "--cubin") cubin_path = value;
      else throw std::invalid_argument("inspect: unknown flag " + flag);
    }
    if (block != 0 && (block < 1 || (block & (block - 1))))
      throw std::invalid_argument("inspect: --block must be a power of two, got " + std::to_string(block));
    const std::int64_t width = block ? block : cols ? cols : 4096;
    const auto list = programs(kernel, variant_of(variant), dtype_of(dtype), width, splits);
    if (index < 0 || index >= static_cast<std::int64_t>(list.size()))
      throw std::invalid_argument("inspect: --index must be from 0 to " + std::to_string(list.size() - 1));
    const Program& p = *list[index];
    // As a launch on rows of `cols` elements (and that stride) specializes it; else every argument aligned.
    auto spec = p.default_specialization();
    if (cols > 0)
      for (std::size_t i = 0; i < p.ir().params.size(); ++i)
        if (!p.ir().params[i].type.pointer && ir::is_int(p.ir().params[i].type.dtype)) spec.divisibility[i] = integer_divisibility(cols);
    if (only.empty() || only == "ir") std::printf("==== IR (after simplify, cse, dce) ====\n%s\n", ir::print(p.ir()).c_str());
    const std::string source = p.cuda_source(spec);
    if (only.empty() || only == "cuda") std::printf("==== CUDA C++ ====\n%s\n", source.c_str());
    if (only.empty() || only == "ptx")
      std::printf("==== PTX (%s) ====\n%s\n", arch.c_str(), nvrtc::ptx(source, codegen::kernel_symbol(p.ir()), arch).c_str());
    if (only.empty() || only == "report") {
      const auto info = p.compile(spec, arch);
      std::printf("==== CUBIN for %s ====\noptions: %s\n%s\nregisters: %d, spill bytes: %d, stack bytes: %d\n", arch.c_str(),
                  info.options.c_str(), info.ptxas_log.c_str(), info.registers, info.spill_bytes, info.stack_bytes);
      if (!cubin_path.empty()) std::ofstream(cubin_path, std::ios::binary).write(info.cubin.data(), info.cubin.size());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
