// Prints what a sample kernel call would run on the GPU, with or without one: every kernel the call
// launches (with its specialization key), and for one of them the IR, the generated CUDA C++, the PTX and
// the ptxas register and spill report. A thin front end over tilefuse::InspectLaunches, which runs the
// library call without launching anything and inspects each launch exactly as it would compile; for your
// own kernels, call Kernel::inspect (README: "Inspecting your own kernel").
//
//   inspect [--kernel softmax|softmax_unfused|layernorm|rmsnorm|epilogue|epilogue_unfused|attention|
//                     attention_naive|matmul]
//           [--variant automatic|one_program|looped|split|cluster|staged|resident] [--splits N]
//           [--peel 0|1] [--pack-rows 0|1] [--stage-rows 0|1] [--stage-stores 0|1] [--stride-rows 0|1] [--rows-ahead 0|1] [--stride-stages 0|1] [--shift-affine 0|1] [--keep-rows-in-l2 0|1]
//           [--constant-cols 0|1] [--row-elements E] [--resident-threads T] [--looped-cluster K] [--staged-cluster K] [--looped-groups K] [--split-combine-rows K]   (row kernels' knobs)
//           [--dtype f32|f16|bf16] [--rows R] [--cols N]              (row kernels: R rows of N elements)
//           [--batch B] [--heads H] [--seq S] [--head-dim D] [--causal 0|1]            (attention)
//           [--m M] [--n N] [--k K] [--gelu 0|1]                                        (matmul)
//           [--index I] [--arch sm_90] [--sms 132] [--only key|ir|cuda|ptx|report|sass] [--cubin FILE]
// --index picks among the kernels of a multi-kernel call (split, unfused, naive attention). Without a GPU
// the choices assume --arch with --sms multiprocessors and clusters; with one, that GPU. --only sass prints
// the machine code, counted by opcode and by DSL statement (needs nvdisasm: TILEFUSE_NVDISASM).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "backend/driver/driver.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/epilogue/epilogue.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/matmul/matmul.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;

namespace {

kernels::RowVariant variant_of(const std::string& name) {
  for (auto v : {kernels::RowVariant::automatic, kernels::RowVariant::one_program, kernels::RowVariant::looped,
                 kernels::RowVariant::split, kernels::RowVariant::cluster, kernels::RowVariant::staged,
                 kernels::RowVariant::resident})
    if (name == kernels::variant_name(v)) return v;
  throw std::invalid_argument("inspect: --variant must be one_program, looped, split, cluster, staged, resident or automatic, got " + name);
}

ir::DType dtype_of(const std::string& name) {
  if (name == "f32") return ir::DType::f32;
  if (name == "f16") return ir::DType::f16;
  if (name == "bf16") return ir::DType::bf16;
  throw std::invalid_argument("inspect: --dtype must be f32, f16 or bf16, got " + name);
}

// Device addresses as cudaMalloc would hand them out (256-byte aligned); nothing is ever read or written.
struct FakeMemory {
  std::uint64_t next = std::uint64_t{1} << 40;
  Arg operator()(ir::DType dtype, std::int64_t count) {
    const Arg a = Arg::device_memory_of(dtype, next, static_cast<std::size_t>(count));
    next += (static_cast<std::uint64_t>(count) * ir::dtype_bytes(dtype) + 255) / 256 * 256 + 256;
    return a;
  }
};

// Runs the library call the flags describe; launches go to the active InspectLaunches.
void call(const std::map<std::string, std::string>& f) {
  auto num = [&](const char* k, std::int64_t d) { return f.count(k) ? std::stoll(f.at(k)) : d; };
  auto str = [&](const char* k, const char* d) { return f.count(k) ? f.at(k) : std::string(d); };
  const std::string kernel = str("--kernel", "softmax");
  const ir::DType dtype = dtype_of(str("--dtype", kernel == "attention" || kernel == "attention_naive" || kernel == "matmul" ? "bf16" : "f32"));
  const std::int64_t rows = num("--rows", 4096), cols = num("--cols", 4096), splits = num("--splits", 0);
  const kernels::RowVariant variant = variant_of(str("--variant", "automatic"));
  kernels::RowOptions opt{Backend::gpu};
  // The row kernels' layout knobs (kernels::Tuning), 0 or 1; unset: each kernel's rule.
  auto knob = [&](const char* k, std::optional<bool>& field) {
    if (f.count(k)) field = num(k, 0) != 0;
  };
  knob("--peel", opt.tuning.peel);
  knob("--pack-rows", opt.tuning.pack_rows);
  knob("--stage-rows", opt.tuning.stage_rows);
  knob("--stage-stores", opt.tuning.stage_stores);
  knob("--constant-cols", opt.tuning.constant_cols);
  knob("--stride-rows", opt.tuning.stride_rows);
  knob("--rows-ahead", opt.tuning.rows_ahead);
  knob("--stride-stages", opt.tuning.stride_stages);
  knob("--shift-affine", opt.tuning.shift_affine);
  knob("--keep-rows-in-l2", opt.tuning.keep_rows_in_l2);
  if (f.count("--row-elements")) opt.tuning.row_elements = static_cast<int>(num("--row-elements", 0));
  if (f.count("--resident-threads")) opt.tuning.resident_threads = static_cast<int>(num("--resident-threads", 0));
  if (f.count("--looped-cluster")) opt.tuning.looped_cluster = static_cast<int>(num("--looped-cluster", 1));
  if (f.count("--staged-cluster")) opt.tuning.staged_cluster = static_cast<int>(num("--staged-cluster", 1));
  if (f.count("--looped-groups")) opt.tuning.looped_groups = static_cast<int>(num("--looped-groups", 0));
  if (f.count("--split-combine-rows")) opt.tuning.split_combine_rows = static_cast<int>(num("--split-combine-rows", 1));
  FakeMemory mem;
  const std::int64_t n = rows * cols;
  if (kernel == "softmax") {
    kernels::detail::SoftmaxArgs a{mem(dtype, n), mem(dtype, n), rows, cols, splits};
    if (variant == kernels::RowVariant::split) a.partial_max = mem(ir::DType::f32, rows * splits), a.partial_sum = mem(ir::DType::f32, rows * splits);
    kernels::detail::softmax(variant, a, opt);
  } else if (kernel == "softmax_unfused") {
    const Arg scratch[4] = {mem(dtype, rows), mem(dtype, n), mem(dtype, n), mem(dtype, rows)};
    kernels::detail::softmax_unfused({mem(dtype, n), mem(dtype, n), rows, cols}, scratch, opt);
  } else if (kernel == "layernorm" || kernel == "rmsnorm") {
    kernels::detail::NormArgs a{mem(dtype, n), mem(dtype, cols), mem(dtype, cols), mem(dtype, n), mem(ir::DType::f32, rows),
                                mem(ir::DType::f32, rows), rows, cols, 1e-5f, splits};
    if (variant == kernels::RowVariant::split) a.partial_s1 = mem(ir::DType::f32, rows * splits), a.partial_s2 = mem(ir::DType::f32, rows * splits);
    if (kernel == "rmsnorm") kernels::detail::rmsnorm(a, opt);
    else kernels::detail::layernorm(variant, a, opt);
  } else if (kernel == "epilogue" || kernel == "epilogue_unfused") {
    const kernels::detail::EpilogueArgs a{mem(dtype, n), mem(dtype, cols), mem(dtype, n), mem(dtype, n), rows, cols, {}};
    if (kernel == "epilogue") kernels::detail::epilogue(a, opt);
    else kernels::detail::epilogue_unfused(a, mem(dtype, n), mem(dtype, n), opt);
  } else if (kernel == "attention" || kernel == "attention_naive") {
    const kernels::AttentionShape s{num("--batch", 4), num("--heads", 32), num("--seq", 4096), num("--head-dim", 128)};
    const std::int64_t elems = s.batch * s.heads * s.seq * s.head_dim, rows_bh = s.batch * s.heads * s.seq;
    const kernels::detail::AttentionArgs a{mem(dtype, elems), mem(dtype, elems), mem(dtype, elems), mem(dtype, elems),
                                           mem(ir::DType::f32, rows_bh), s, num("--causal", 0) != 0,
                                           1.0f / std::sqrt(static_cast<float>(s.head_dim))};
    const kernels::MatrixOptions mopt{Backend::gpu};
    if (kernel == "attention") kernels::detail::attention(a, mopt);
    else kernels::detail::attention_naive(a, mem(ir::DType::f32, rows_bh * s.seq), mem(dtype, rows_bh * s.seq), mopt);
  } else if (kernel == "matmul") {
    const std::int64_t m = num("--m", 4096), nn = num("--n", 4096), k = num("--k", 4096);
    kernels::detail::matmul({mem(dtype, m * k), mem(dtype, k * nn), mem(dtype, nn), mem(dtype, m * nn), m, nn, k,
                             num("--gelu", 0) ? kernels::MatmulEpilogue::gelu : kernels::MatmulEpilogue::none},
                            kernels::MatrixOptions{Backend::gpu});
  } else {
    throw std::invalid_argument("inspect: --kernel must be softmax, softmax_unfused, layernorm, rmsnorm, epilogue, "
                                "epilogue_unfused, attention, attention_naive or matmul, got " + kernel);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::map<std::string, std::string> flags;
    for (int i = 1; i < argc; i += 2) {
      if (i + 1 >= argc) throw std::invalid_argument(std::string("inspect: flag ") + argv[i] + " needs a value");
      flags[argv[i]] = argv[i + 1];
    }
    static const char* known[] = {"--kernel", "--variant", "--splits", "--dtype", "--rows", "--cols", "--batch", "--heads", "--seq",
                                  "--head-dim", "--causal", "--m", "--n", "--k", "--gelu", "--index", "--arch", "--sms", "--only", "--cubin",
                                  "--peel", "--pack-rows", "--stage-rows", "--stage-stores", "--stride-rows", "--rows-ahead", "--stride-stages", "--shift-affine",
                                  "--keep-rows-in-l2",
                                  "--constant-cols", "--row-elements", "--resident-threads", "--looped-cluster", "--staged-cluster", "--looped-groups", "--split-combine-rows"};
    for (const auto& [k, v] : flags)
      if (std::find(std::begin(known), std::end(known), k) == std::end(known)) throw std::invalid_argument("inspect: unknown flag " + k);
    const std::string arch = flags.count("--arch") ? flags["--arch"] : "";
    const std::string only = flags.count("--only") ? flags["--only"] : "";
    if (!only.empty() && only != "key" && only != "ir" && only != "cuda" && only != "ptx" && only != "report" && only != "sass")
      throw std::invalid_argument("inspect: --only must be key, ir, cuda, ptx, report or sass, got " + only);
    // Without a GPU, the choices assume an sm_90 with --sms multiprocessors (the H200's 132 by default)
    // and 50 MB of L2 (the GPU's own figures when there is one).
    Target gpu{arch.empty() ? "sm_90" : arch, true, static_cast<int>(flags.count("--sms") ? std::stoll(flags["--sms"]) : 132), true, 232448,
               50 << 20};
    const bool real = driver::available() && !flags.count("--sms");
    InspectLaunches capture(arch, real ? nullptr : &gpu);
    call(flags);
    const auto& launches = capture.launches();
    const std::int64_t index = flags.count("--index") ? std::stoll(flags["--index"]) : 0;
    if (index < 0 || index >= static_cast<std::int64_t>(launches.size()))
      throw std::invalid_argument("inspect: --index must be from 0 to " + std::to_string(launches.size() - 1));
    if (only.empty() || only == "key") {
      std::printf("==== the call launches %zu kernel(s) ====\n", launches.size());
      for (std::size_t i = 0; i < launches.size(); ++i)
        std::printf("[%zu] %s  (%s)  %s\n", i, launches[i].kernel.c_str(), launches[i].grid_text().c_str(), launches[i].key.c_str());
    }
    const Inspection& in = launches[index];
    if (only.empty() || only == "key")
      std::printf("==== [%lld] kernel '%s' for %s ====\nspecialization: %s\ngrid: %s\ncache key: %s\n", static_cast<long long>(index),
                  in.kernel.c_str(), in.arch.c_str(), in.key.c_str(), in.grid_text().c_str(), in.cache_key.c_str());
    if (only.empty() || only == "ir") std::printf("==== IR (after the passes) ====\n%s\n", in.ir.c_str());
    if (only.empty() || only == "cuda") std::printf("==== CUDA C++ ====\n%s\n", in.cuda.c_str());
    if (only.empty() || only == "ptx") std::printf("==== PTX (%s) ====\n%s\n", in.arch.c_str(), in.ptx.c_str());
    if (only.empty() || only == "report") std::printf("%s", in.report().c_str());
    if (only == "sass") std::printf("%s", in.sass().c_str());
    if (flags.count("--cubin")) std::ofstream(flags["--cubin"], std::ios::binary).write(in.compiled.cubin.data(), in.compiled.cubin.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
