// The emitter core: the kernel frame (header comments, device helpers, signature, thread ids, live
// flags), value names and declarations, and the dispatch of each instruction to its family's lowering.
#include "backend/codegen/emitter.hpp"

#include <algorithm>
#include <stdexcept>

#include "backend/codegen/prelude.hpp"
#include "backend/codegen/text.hpp"
#include "backend/codegen/tile_emitter.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;

Emitter::Emitter(const ir::Function& fn, const passes::Analysis& analysis, const Options& options)
    : fn_(fn), a_(analysis), opt_(options), threads_(32 * options.num_warps), packed_(options.programs_per_block > 1),
      bounds_(fn, analysis, options.bounds_checks) {}

std::string Emitter::run() {
  check();
  os_ << "// tilefuse kernel '" << fn_.name << "': " << opt_.num_warps << " warps (" << threads_ << " threads) per program, "
      << (packed_ ? std::to_string(opt_.programs_per_block) + " programs (one warp each) per thread block.\n"
                  : std::string("one program per thread block.\n"));
  for (const auto& [n, l] : a_.layouts)
    os_ << "// layout of " << n << "-element tiles: " << l.per_thread << " per thread in runs of " << l.vector
        << (l.n < threads_ ? " (threads past the tile hold none)" : "") << "\n";
  os_ << prelude::core << "\n";
  if (any_of_ops(fn_.body, [](Op op) { return op == Op::rand; })) os_ << prelude::rand << "\n";
  used_.assign(fn_.values.size(), false);
  ir::walk(fn_.body, [&](const ir::Instr& in) {
    cluster_reductions_left_ += ir::is_cluster_reduction(in.op) ? 1 : 0;
    for (auto id : in.args) if (id >= 0) used_[id] = true;
    for (auto id : in.yields) if (id >= 0) used_[id] = true;
  });
  const bool cluster = cluster_reductions_left_ > 0 && opt_.cluster_size > 1 && !opt_.resident_groups;
  if (cluster) os_ << prelude::cluster << "\n";
  if (opt_.resident_groups) os_ << prelude::group << "\n";
  if (any_of_ops(fn_.body, [](Op op) { return op == Op::stage_copy; })) os_ << prelude::copy << "\n";
  if (any_of_ops(fn_.body, ir::is_grid_order)) os_ << prelude::grid << "\n";
  if (bounds_.on()) os_ << prelude::bounds << "\n" << bounds_.declarations();
  signature();
  frame();
  declare_stages();
  for (const ir::Instr& in : fn_.body) instr(in);
  // Copies issued ahead that no access waited for (a loop's last prefetch, masked off) land before exit.
  wait_all_copies();
  // The other blocks may still read this block's slots: it leaves only when all have passed their last read.
  if (cluster) os_ << "  tf_cluster_wait();\n";
  os_ << "}\n";
  return os_.str();
}

void Emitter::check() const {
  if (opt_.programs_per_block < 1 || opt_.programs_per_block > 32 || (packed_ && opt_.num_warps != 1))
    throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': programs_per_block must be 1, or up "
                                "to 32 for one-warp programs");
  if (opt_.num_warps < 1 || opt_.num_warps > 32 || (opt_.num_warps & (opt_.num_warps - 1)))
    throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': num_warps must be a power of two "
                                "from 1 to 32, got " + std::to_string(opt_.num_warps));
  if (opt_.resident_groups && (packed_ || opt_.cluster_size > 1))
    throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': resident groups run one program per thread "
                                "block, without clusters");
}

void Emitter::signature() { os_ << signature_text(fn_, a_, opt_); }

std::string param_value(const ir::Function& fn, const Options& opt, int index) {
  const auto i = static_cast<std::size_t>(index);
  if (i < opt.constants.size() && opt.constants[i])
    return text::integer_literal(fn.params[i].type.dtype, *opt.constants[i]) + " /* compiled in */";
  return "a_" + text::identifier(fn.params[i].name);
}

std::string signature_text(const ir::Function& fn, const passes::Analysis& a, const Options& opt) {
  std::ostringstream os;
  const int threads = 32 * opt.num_warps;
  os << "extern \"C\" __global__ void __launch_bounds__(" << threads * opt.programs_per_block;
  if (opt.min_programs_per_sm > 0)
    os << ", " << std::max(1, std::min({32, 2048 / (threads * opt.programs_per_block),  // what an SM can hold
                                        (opt.min_programs_per_sm + opt.programs_per_block - 1) / opt.programs_per_block}));
  os << ") ";
  if (opt.cluster_size > 1) os << "__cluster_dims__(" << opt.cluster_size << ", 1, 1) ";
  os << kernel_symbol(fn) << "(";
  for (std::size_t i = 0; i < fn.params.size(); ++i) {
    const auto& p = fn.params[i];
    std::string type = text::reg_type(p.type);
    if (p.type.pointer && !a.written[i]) type = "const " + type;
    os << (i ? ", " : "") << type << " a_" << text::identifier(p.name);
  }
  if (opt.programs_per_block > 1) os << (fn.params.empty() ? "" : ", ") << "int tf_num_programs_x";
  if (opt.resident_groups)
    os << (fn.params.empty() && opt.programs_per_block == 1 ? "" : ", ")
       << "unsigned* tf_group_count, unsigned* tf_group_next, float* tf_group_values, int tf_group, int tf_group_slots";
  os << bounds_parameters(opt.bounds_checks) << ") {\n";
  return os.str();
}

// Thread ids, and the flags of threads that hold elements of tiles smaller than the program.
void Emitter::frame() {
  if (packed_) {
    // Warp w of the block runs program blockIdx.x * P + w; the grid's last block may hold fewer programs.
    os_ << "  const int tid = threadIdx.x & 31;\n";
    os_ << "  const int tf_program_x = (int)blockIdx.x * " << opt_.programs_per_block << " + (int)(threadIdx.x >> 5);\n";
    os_ << "  if (tf_program_x >= tf_num_programs_x) return;\n";
  } else {
    os_ << "  const int tid = threadIdx.x;\n";
  }
  if (any_of_ops(fn_.body, ir::is_reduction) && opt_.num_warps > 1) os_ << "  const int lane = tid & 31;\n  const int warp = tid >> 5;\n";
  for (const auto& [n, l] : a_.layouts)
    if (l.n < threads_) os_ << "  const bool live" << n << " = tid < " << n << ";\n";
  if (ir::cluster_reduction_in_loop(fn_) && opt_.cluster_size > 1 && !opt_.resident_groups)
    os_ << "  unsigned tf_cluster_round = 0;  // cluster barriers passed inside loops (a looped reduction's slot)\n";
  if (opt_.resident_groups && cluster_reductions_left_ > 0)
    os_ << "  unsigned tf_group_round = 0;  // group reductions passed (each one's arrival target and value slot)\n";
}

void Emitter::instr(const ir::Instr& in) {
  os_ << "  // " << ir::print(fn_, in);
  if (!in.where.empty()) os_ << "   [" << in.where << "]";
  os_ << "\n";
  switch (ir::op_info(in.op).family) {
    case ir::Family::geometry: return geometry(in);
    case ir::Family::elementwise: return arithmetic(in);
    case ir::Family::memory: return in.op == Op::load ? load(in) : store(in);
    case ir::Family::reduction: return reduce(in);
    case ir::Family::cluster: return cluster_reduce(in);
    case ir::Family::stage: return in.op == Op::stage_copy ? stage_copy(in) : stage_access(in);
    case ir::Family::control: return loop(in);
    case ir::Family::shape:
    case ir::Family::axis_reduction:
    case ir::Family::dot: break;  // 2D tiles: TileEmitter
    case ir::Family::grid: os_ << "  " << text::grid_order(in.op) << "\n"; return;
  }
}

void Emitter::geometry(const ir::Instr& in) {
  switch (in.op) {
    case Op::param:
      if (!used_[in.result]) break;  // a parameter the program never reads (a variant's unused argument)
      os_ << "  " << value_type(in.result) << " const " << v(in.result) << " = "
          << param_value(fn_, opt_, in.as<ir::attr::Param>().index) << ";\n";
      break;
    case Op::program_id:
    case Op::num_programs: {
      const int axis = in.as<ir::attr::Axis>().axis;
      const bool id = in.op == Op::program_id;
      os_ << "  const int " << v(in.result) << " = "
          << (packed_ && axis == 0 ? std::string(id ? "tf_program_x" : "tf_num_programs_x")
                                   : std::string(id ? "(int)blockIdx." : "(int)gridDim.") + "xyz"[axis])
          << ";\n";
      break;
    }
    default:  // arange
      elementwise(in, index_expr(layout(fn_.values[in.result])));
      break;
  }
}

void Emitter::elementwise(const ir::Instr& in, const std::string& expr) {
  const auto& t = fn_.values[in.result];
  if (t.rank == 0) {
    os_ << "  " << value_type(in.result) << " const " << v(in.result) << " = " << expr << ";\n";
    return;
  }
  os_ << "  " << value_type(in.result) << " " << v(in.result) << "[" << per_thread(t) << "];\n";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << per_thread(t) << "; ++e) " << v(in.result) << "[e] = " << expr << ";\n";
}

void Emitter::declare_copy(ir::ValueId id, ir::ValueId from) {
  const auto& t = fn_.values[id];
  if (t.rank == 0) {
    os_ << "  " << value_type(id) << " " << v(id) << " = " << v(from) << ";\n";
    return;
  }
  const int E = per_thread(t);
  os_ << "  " << value_type(id) << " " << v(id) << "[" << E << "];\n#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) "
      << v(id) << "[e] = " << v(from) << "[e];\n";
}

std::string Emitter::v(ir::ValueId id) const {
  std::string name = "v";  // (appending: GCC 12 warns falsely about "v" + std::to_string)
  name += std::to_string(id);
  return name;
}

std::string Emitter::at(ir::ValueId id) const { return fn_.values[id].rank == 0 ? v(id) : v(id) + "[e]"; }

std::string Emitter::value_type(ir::ValueId id) const {
  const auto& t = fn_.values[id];
  return t.pointer && a_.root[id] >= 0 && !a_.written[a_.root[id]] ? "const " + text::reg_type(t) : text::reg_type(t);
}

std::string Emitter::index_expr(const passes::TileLayout& l, const std::string& e) const {
  const int tv = l.threads * l.vector;
  if (l.per_thread == 1) return "tid";
  if (l.vector == l.per_thread) return "tid * " + std::to_string(l.vector) + " + " + e;
  return "(" + e + " / " + std::to_string(l.vector) + ") * " + std::to_string(tv) + " + tid * " + std::to_string(l.vector) +
         " + " + e + " % " + std::to_string(l.vector);
}

std::string Emitter::live(const ir::ValueType& t) const {
  return t.rank == 1 && layout(t).n < threads_ ? "live" + std::to_string(t.dims[0]) : "";
}

std::string kernel_symbol(const ir::Function& fn) { return "tilefuse_" + text::identifier(fn.name); }

Generated generate(const ir::Function& fn, const passes::Analysis& analysis, const Options& options) {
  Generated g;
  if (analysis.matrix) {
    TileEmitter e(fn, analysis, options);
    g.source = e.run();
    g.shared_bytes = e.shared_bytes();
    g.access_sites = e.bounds_.sites();
    g.warpgroup_mma = e.uses_warpgroup_mma();
    g.tensor_maps = e.tensor_maps();
  } else {
    Emitter e(fn, analysis, options);
    g.source = e.run();
    g.shared_bytes = ir::stage_bytes(fn.stages) * options.programs_per_block;
    g.access_sites = e.bounds_.sites();
  }
  // The prelude's tf_div reads it (prelude/core.cuh).
  if (options.precise_division) g.source = "#define TF_PRECISE_DIVISION 1  // tile division rounds correctly (IEEE)\n" + g.source;
  return g;
}

std::string cuda_source(const ir::Function& fn, const passes::Analysis& analysis, const Options& options) {
  return generate(fn, analysis, options).source;
}

}  // namespace tilefuse::codegen
