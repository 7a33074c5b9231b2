// Program (see program.hpp): the optimized IR, the argument checks every launch makes, the interpreter
// path over host memory, and the GPU path: specialize, generate, compile through the cache, load, launch.
#include "backend/runtime/program.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "backend/cache/cache.hpp"
#include "backend/codegen/cuda.hpp"
#include "backend/driver/driver.hpp"
#include "backend/interp/interp.hpp"
#include "backend/ir/ops.hpp"
#include "backend/knobs/knobs.hpp"
#include "backend/nvrtc/nvrtc.hpp"
#include "backend/passes/analysis/analysis.hpp"
#include "backend/passes/passes.hpp"
#include "backend/runtime/buffer.hpp"
#include "backend/runtime/target.hpp"

namespace tilefuse {

namespace {

// Largest power of two up to 16 dividing v (16 for 0).
int pow2_up_to_16(std::uint64_t v) {
  if (v == 0) return 16;
  int d = 1;
  while (d < 16 && v % (2u * d) == 0) d *= 2;
  return d;
}

}  // namespace

int integer_divisibility(std::int64_t v) {
  if (v <= 0) return pow2_up_to_16(static_cast<std::uint64_t>(v));
  int d = 1;
  while (d < 65536 && v % (2 * static_cast<std::int64_t>(d)) == 0) d *= 2;
  return d;
}

namespace {

// The value `spec` compiles in for parameter i, if any.
std::optional<std::int64_t> constant_of(const Specialization& spec, std::size_t i) {
  return i < spec.constants.size() ? spec.constants[i] : std::nullopt;
}

std::string kind_name(Arg::Kind k) {
  switch (k) {
    case Arg::Kind::device_memory: return "device memory";
    case Arg::Kind::host_memory: return "host memory";
    case Arg::Kind::i32: return "an i32";
    case Arg::Kind::i64: return "an i64";
    case Arg::Kind::f32: return "an f32";
  }
  return "?";
}

}  // namespace

bool interpret_by_default() { return knobs::interpret(); }

Backend resolve_backend(Backend requested) {
  if (requested != Backend::automatic) return requested;
  return interpret_by_default() ? Backend::interpreter : Backend::gpu;
}

// One compiled GPU specialization: its loaded module and function handle and what launches need of it.
struct Program::GpuEntry {
  Specialization spec;
  std::shared_ptr<const nvrtc::Compiled> compiled;
  std::unique_ptr<driver::Module> module;
  void* function = nullptr;
  unsigned shared_bytes = 0;  // dynamic shared memory per block: the stages of its programs
  std::string reason;         // why it was compiled, when it is not the first
  std::vector<codegen::AccessSite> sites;  // with bounds checks: the checked accesses, by site number
  std::vector<codegen::TensorMap> tensor_maps;  // its TMA copies' tensor maps, encoded at each launch
  int resident_per_sm = 0;  // resident groups: the blocks an SM holds at once (the occupancy calculator's)
  int resident_clusters = -1;  // cluster kernels: the clusters the GPU holds at once (-1: not asked yet)
};

// GPU state: compiled specializations, each with its loaded module and function handle.
struct Program::Gpu {
  using Entry = GpuEntry;
  // Resident-group kernels: the group workspace of each stream (arrival counts, zeroed once, and values)
  // and the launches made with it (which array of counts the next one takes).
  struct GroupWorkspace {
    std::unique_ptr<DeviceBytes> bytes;
    std::uint64_t launches = 0;
  };
  std::map<void*, GroupWorkspace> group_workspaces;
  // Held from taking a workspace's array of counts until the launch is on its stream, so that launches
  // from several host threads on one stream take the arrays in the order they run.
  std::mutex group_mutex;
  std::unique_ptr<DeviceBytes> fault;  // with bounds checks: the kernel's TfFault record (zero until a violation)
  std::mutex mutex;
  std::vector<std::unique_ptr<Entry>> entries;
  Entry* last = nullptr;  // most recent launch: the common case of one specialization hits here
};

Program::Program(ir::Function traced, KernelOptions options) : options_(std::move(options)), gpu_(std::make_unique<Gpu>()) {
  passes::DumpHook dump;
  if (knobs::dump_ir())
    dump = [](const std::string& pass, const ir::Function& f) {
      std::cerr << "// tilefuse IR after " << pass << "\n" << ir::print(f);
    };
  fn_ = passes::optimize(traced, dump);
  ir::walk(fn_.body, [&](const ir::Instr& in) { waits_for_previous_ = waits_for_previous_ || in.op == ir::Op::gdc_wait; });
  if (options_.num_warps < 1 || options_.num_warps > 32 || (options_.num_warps & (options_.num_warps - 1)))
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': num_warps must be a power of two from 1 to 32, got " +
                                std::to_string(options_.num_warps));
  if (options_.num_stages < 1 || options_.num_stages > 4)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': num_stages must be from 1 to 4, got " +
                                std::to_string(options_.num_stages));
  if (options_.cluster_size < 1 || options_.cluster_size > kMaxClusterSize)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': cluster_size must be from 1 to " + std::to_string(kMaxClusterSize) + ", got " +
                                std::to_string(options_.cluster_size));
  if (options_.resident_groups && options_.cluster_size > 1)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': resident_groups and a cluster_size of " +
                                std::to_string(options_.cluster_size) + " exclude each other (groups replace clusters)");
  if (options_.shared_carveout < -1 || options_.shared_carveout > 100)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': shared_carveout must be from -1 to 100 (percent), got " +
                                std::to_string(options_.shared_carveout));
  constant_params_.assign(fn_.params.size(), false);
  for (const std::string& name : options_.constant_params) {
    std::size_t i = 0;
    while (i < fn_.params.size() && fn_.params[i].name != name) ++i;
    if (i == fn_.params.size() || fn_.params[i].type.pointer || !ir::is_int(fn_.params[i].type.dtype)) {
      std::string ints;
      for (const auto& p : fn_.params)
        if (!p.type.pointer && ir::is_int(p.type.dtype)) ints += (ints.empty() ? "" : ", ") + p.name;
      throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': constant_params names '" + name +
                                  "', expected one of its integer scalar parameters (" + (ints.empty() ? "it has none" : ints) + ")");
    }
    constant_params_[i] = true;
  }
  if (options_.min_programs_per_sm < 0 || options_.min_programs_per_sm > 2048)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': min_programs_per_sm must be from 0 to 2048, got " +
                                std::to_string(options_.min_programs_per_sm));
}

Program::~Program() = default;

Specialization Program::default_specialization() const {
  return Specialization{std::vector<int>(fn_.params.size(), 16)};
}

namespace {
// The architecture a generated kernel compiles for: sm_90a (with its arch-specific wgmma) when it uses
// warpgroup MMA, else the GPU's own.
std::string compile_arch(const codegen::Generated& g, const std::string& arch) { return g.warpgroup_mma ? arch + "a" : arch; }
}  // namespace

codegen::Generated Program::generate(const Specialization& spec, const std::string& arch) const { return generate(spec, arch, true); }

codegen::Generated Program::generate(const Specialization& spec, const std::string& arch, bool bounded) const {
  const bool wgmma = options_.warpgroup_mma && has_warpgroup_mma(arch);
  const passes::Analysis analysis = passes::analyze(fn_, 32 * options_.num_warps, spec.divisibility, wgmma, spec.constants);
  return codegen::generate(
      fn_, analysis, codegen::Options{options_.num_warps, spec.programs_per_block, bounded ? options_.min_programs_per_sm : 0, options_.cluster_size,
                                  options_.resident_groups, options_.num_stages, spec.bounds_checks, options_.precise_division,
                                  options_.tma, spec.constants, options_.l2_evict_last});
}

std::string Program::cuda_source(const Specialization& spec, const std::string& arch) const { return generate(spec, arch).source; }

/// A specialization as it runs: its generated kernel, the architecture it compiles for, and its CUBIN
/// through the kernel cache.
struct Program::Built {
  codegen::Generated generated;
  std::string arch;
  std::shared_ptr<const nvrtc::Compiled> compiled;
};

namespace {
// Registers a multiprocessor holds on every sm_80+ GPU, and how it hands them out: per warp, in units of
// 256 (8 a thread).
constexpr int kRegistersPerSm = 65536;
constexpr int kRegisterUnitPerWarp = 256;

// Whether blocks of `block_warps` warps at `registers` a thread leave room for `blocks` of them on one SM.
bool registers_hold(int registers, int block_warps, int blocks) {
  if (registers <= 0) return false;  // not reported: ask
  const int per_warp = (registers * 32 + kRegisterUnitPerWarp - 1) / kRegisterUnitPerWarp * kRegisterUnitPerWarp;
  return kRegistersPerSm / per_warp / block_warps >= blocks;
}
}  // namespace

// With min_programs_unless_spilling the launch bound is asked only where it changes something: the
// kernel compiles without it first, and with it only where the registers ptxas chose leave fewer programs
// per SM than asked or the first compile spills (ptxas sometimes spills unbounded, as in the looped
// cluster kernels); where the bounded compile spills as much or more, the first one runs. (Each compile
// is cached, so the choice costs once per cache.) A bound that registers already meet would only change
// ptxas's schedule, which measured slower as often as faster (bench/NOTES.md). `check` sees each
// generated kernel before it compiles.
Program::Built Program::build(const Specialization& spec, const std::string& arch,
                              const std::function<void(const codegen::Generated&)>& check) const {
  const auto compiled_for = [&](bool bounded) {
    Built b{generate(spec, arch, bounded), "", nullptr};
    if (check) check(b.generated);
    b.arch = compile_arch(b.generated, arch);
    b.compiled = cache::KernelCache::global().get(b.generated.source, codegen::kernel_symbol(fn_), nvrtc::options_for(b.arch));
    return b;
  };
  if (!options_.min_programs_unless_spilling || options_.min_programs_per_sm <= 0) return compiled_for(true);
  Built free = compiled_for(false);
  const int packed = spec.programs_per_block;
  const int blocks = (options_.min_programs_per_sm + packed - 1) / packed;
  const auto spills = [](const Built& b) { return b.compiled->spill_stores + b.compiled->spill_loads; };
  if (registers_hold(free.compiled->registers, options_.num_warps * packed, blocks) && spills(free) == 0) return free;
  Built bounded = compiled_for(true);
  return spills(bounded) > 0 && spills(bounded) >= spills(free) ? free : bounded;
}

CompiledInfo Program::compile(const Specialization& spec, const std::string& arch) const {
  const Built b = build(spec, arch);
  return compile_source(b.generated.source, b.arch);
}

CompiledInfo Program::compile_source(std::string source, const std::string& arch) const {
  CompiledInfo info;
  info.source = std::move(source);
  const auto options = nvrtc::options_for(arch);
  const auto compiled = cache::KernelCache::global().get(info.source, codegen::kernel_symbol(fn_), options);
  for (const auto& o : options) info.options += (info.options.empty() ? "" : " ") + o;
  info.ptxas_log = compiled->log;
  info.registers = compiled->registers;
  info.spill_bytes = compiled->spill_stores + compiled->spill_loads;
  info.stack_bytes = compiled->stack_bytes;
  info.cubin = compiled->cubin;
  info.symbol = codegen::kernel_symbol(fn_);
  info.sass_instructions = nvrtc::sass_instructions(info.cubin, info.symbol);
  return info;
}

std::string Program::param_label(std::size_t index) const {
  return "argument " + std::to_string(index) + " (" + fn_.params[index].name + ")";
}

void Program::bad_argument(std::size_t index, const std::string& expected, const std::string& got) const {
  throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "', " + param_label(index) + ": expected " + expected +
                              ", got " + got);
}

void Program::check_arguments(const LaunchConfig& config, std::span<const Arg> args) const {
  if (args.size() != fn_.params.size())
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "' takes " + std::to_string(fn_.params.size()) +
                                " arguments, got " + std::to_string(args.size()));
  const Grid& g = config.grid;
  if (g.x < 1 || g.y < 1 || g.z < 1 || g.x > 2147483647 || g.y > 65535 || g.z > 65535)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': grid (" + std::to_string(g.x) + ", " +
                                std::to_string(g.y) + ", " + std::to_string(g.z) +
                                ") is outside 1..2^31-1 programs along x and 1..65535 along y and z");
  if (g.x % options_.cluster_size != 0)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': grid x = " + std::to_string(g.x) +
                                " is not a multiple of its cluster size " + std::to_string(options_.cluster_size));
  if (options_.resident_groups) {
    if (config.group < 1 || g.x % config.group != 0 || g.y != 1 || g.z != 1)
      throw std::invalid_argument("tilefuse: kernel '" + fn_.name +
                                  "' combines over resident groups: expected a grid (x, 1, 1) with x a multiple of the group of " +
                                  std::to_string(config.group) + " programs, got (" + std::to_string(g.x) + ", " + std::to_string(g.y) +
                                  ", " + std::to_string(g.z) + ")");
  }
  if (config.pdl) {
    if (!waits_for_previous_)
      throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': a launch with LaunchConfig::pdl may start before the "
                                  "previous kernel ends, and this program never calls tl::gdc_wait to wait for it");
    if (options_.resident_groups)
      throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "' combines over resident groups (a cooperative "
                                  "launch), which cannot also take LaunchConfig::pdl");
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ir::ValueType& t = fn_.params[i].type;
    const Arg& a = args[i];
    const bool memory = a.kind == Arg::Kind::device_memory || a.kind == Arg::Kind::host_memory;
    if (t.pointer) {
      if (!memory) bad_argument(i, std::string("memory of ") + ir::dtype_name(t.dtype), kind_name(a.kind));
      if (a.dtype != t.dtype)
        bad_argument(i, std::string("memory of ") + ir::dtype_name(t.dtype), std::string("memory of ") + ir::dtype_name(a.dtype));
    } else {
      const Arg::Kind want = t.dtype == ir::DType::i32 ? Arg::Kind::i32 : t.dtype == ir::DType::i64 ? Arg::Kind::i64 : Arg::Kind::f32;
      if (a.kind != want) bad_argument(i, std::string("an ") + ir::dtype_name(t.dtype), kind_name(a.kind));
    }
  }
}

void Program::launch(const LaunchConfig& config, std::span<const Arg> args) {
  check_arguments(config, args);
  if (InspectLaunches* capture = InspectLaunches::active()) {
    capture->record(*this, config, args);
    return;
  }
  if (resolve_backend(config.backend) == Backend::interpreter) launch_interpreter(config, args);
  else launch_gpu(config, args);
}

Specialization Program::specialize(const LaunchConfig& config, std::span<const Arg> args) const {
  // What the arguments reveal about alignment, as Triton specializes: vector accesses need it.
  Specialization spec;
  spec.divisibility.resize(args.size());
  // One-warp programs on a large grid: 8 per block, so an SM holds 64 of them rather than its 32-block limit.
  if (options_.num_warps == 1 && options_.cluster_size == 1 && !options_.resident_groups && config.grid.x >= 4096)
    spec.programs_per_block = 8;
  spec.bounds_checks = knobs::debug_bounds();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    switch (a.kind) {
      case Arg::Kind::host_memory:
        bad_argument(i, "device memory (a DeviceBuffer or DeviceView) for a GPU launch",
                     "host memory (use Backend::interpreter or TILEFUSE_INTERPRET=1 to run on host memory)");
      case Arg::Kind::device_memory: spec.divisibility[i] = pow2_up_to_16(a.device); break;
      case Arg::Kind::i32: spec.divisibility[i] = integer_divisibility(a.i32); break;
      case Arg::Kind::i64: spec.divisibility[i] = integer_divisibility(a.i64); break;
      case Arg::Kind::f32: spec.divisibility[i] = 1; break;
    }
    if (constant_params_[i]) {
      spec.constants.resize(args.size());
      spec.constants[i] = a.kind == Arg::Kind::i32 ? a.i32 : a.i64;
    }
  }
  return spec;
}

std::string Program::describe(const Specialization& spec) const {
  std::string s;
  for (std::size_t i = 0; i < spec.divisibility.size() && i < fn_.params.size(); ++i) {
    const ir::ValueType& t = fn_.params[i].type;
    if (!s.empty()) s += ' ';
    const auto constant = constant_of(spec, i);
    s += fn_.params[i].name + (constant ? "=" : ":");
    if (constant) s += std::to_string(*constant);
    else if (t.pointer) s += "align" + std::to_string(spec.divisibility[i]);
    else if (ir::is_int(t.dtype)) s += "div" + std::to_string(spec.divisibility[i]);
    else s += "f32";
  }
  if (spec.programs_per_block > 1) s += " programs_per_block:" + std::to_string(spec.programs_per_block);
  if (spec.bounds_checks) s += " bounds_checks";
  return s;
}

std::vector<Specialization> Program::specializations() const {
  std::lock_guard lock(gpu_->mutex);
  std::vector<Specialization> out;
  for (const auto& e : gpu_->entries) out.push_back(e->spec);
  return out;
}

std::vector<std::string> Program::recompile_reasons() const {
  std::lock_guard lock(gpu_->mutex);
  std::vector<std::string> out;
  for (const auto& e : gpu_->entries)
    if (!e->reason.empty()) out.push_back(e->reason);
  return out;
}

namespace {

std::string divisibility_words(int d, bool pointer) {
  if (pointer) return "aligned to " + std::to_string(d) + " bytes";
  return d == 1 ? "odd" : "divisible by " + std::to_string(d);
}

}  // namespace

// Which argument properties make `spec` differ from the nearest specialization compiled so far (the one
// differing in the fewest arguments); "" when `spec` is compiled already. Called with the mutex held.
std::string Program::why_new(const Specialization& spec, std::span<const Arg> args) const {
  const Gpu::Entry* nearest = nullptr;
  int fewest = 1 << 30;
  for (const auto& e : gpu_->entries) {
    if (e->spec == spec) return "";
    int differ = e->spec.programs_per_block != spec.programs_per_block;
    for (std::size_t i = 0; i < spec.divisibility.size(); ++i)
      differ += e->spec.divisibility[i] != spec.divisibility[i] || constant_of(e->spec, i) != constant_of(spec, i);
    if (differ < fewest) fewest = differ, nearest = e.get();
  }
  if (!nearest) return "kernel '" + fn_.name + "': the first specialization (" + describe(spec) + ")";
  std::string why;
  for (std::size_t i = 0; i < spec.divisibility.size(); ++i) {
    if (const auto was = constant_of(nearest->spec, i), now = constant_of(spec, i); was != now) {
      why += std::string(why.empty() ? "" : "; ") + param_label(i) + " = " + std::to_string(now.value_or(0)) +
             ", where the compiled one has " + std::to_string(was.value_or(0)) + " compiled in (KernelOptions::constant_params)";
      continue;
    }
    const int was = nearest->spec.divisibility[i], now = spec.divisibility[i];
    if (was == now) continue;
    const Arg& a = args[i];
    const bool pointer = fn_.params[i].type.pointer;
    std::string value = pointer ? "address 0x" : "";
    if (pointer) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(a.device));
      value += hex;
    } else {
      value = std::to_string(a.kind == Arg::Kind::i32 ? a.i32 : a.i64);
    }
    why += std::string(why.empty() ? "" : "; ") + param_label(i) + " = " + value + " is " + divisibility_words(now, pointer) +
           ", where the compiled one assumed " + divisibility_words(was, pointer);
  }
  if (nearest->spec.programs_per_block != spec.programs_per_block)
    why += std::string(why.empty() ? "" : "; ") + "the grid packs " + std::to_string(spec.programs_per_block) +
           " one-warp programs per thread block (8 from 4096 programs along x), the compiled one " +
           std::to_string(nearest->spec.programs_per_block);
  return "kernel '" + fn_.name + "' compiles a new specialization (" + describe(spec) + ") because " + why;
}

Inspection Program::inspect(const LaunchConfig& config, std::span<const Arg> args, const std::string& arch) const {
  check_arguments(config, args);
  Inspection out;
  out.kernel = fn_.name;
  out.grid = config.grid;
  out.group = config.group;
  out.pdl = config.pdl;
  out.spec = specialize(config, args);
  out.key = describe(out.spec);
  out.arch = !arch.empty() ? arch : driver::available() ? driver::device().arch() : "sm_90";
  out.ir = ir::print(fn_);
  const Built built = build(out.spec, out.arch);
  const codegen::Generated& generated = built.generated;
  out.arch = built.arch;
  out.cuda = generated.source;
  out.shared_bytes = generated.shared_bytes;
  const auto options = nvrtc::options_for(out.arch);
  out.cache_key = cache::make_key(out.cuda, options, nvrtc::version());
  out.ptx = nvrtc::ptx(out.cuda, codegen::kernel_symbol(fn_), out.arch);
  out.compiled = compile_source(out.cuda, out.arch);  // the source generated above, not generated again
  {
    std::lock_guard lock(gpu_->mutex);
    out.reason = why_new(out.spec, args);
  }
  if (out.reason.empty()) out.reason = "compiled already: a launch like this one reuses it";
  return out;
}

std::string Inspection::grid_text() const {
  std::string s = std::to_string(grid.x);
  if (grid.y > 1 || grid.z > 1) s += " x " + std::to_string(grid.y);
  if (grid.z > 1) s += " x " + std::to_string(grid.z);
  s += grid.x * grid.y * grid.z == 1 ? " program" : " programs";
  if (group > 1) s += " in resident groups of " + std::to_string(group);
  return s;
}

std::string Inspection::text() const {
  std::string s;
  s += "==== kernel '" + kernel + "' for " + arch + " ====\nspecialization: " + key + "\ngrid: " + grid_text() + "\ncache key: " +
       cache_key + "\n" + reason + "\n";
  s += "==== IR (after the passes) ====\n" + ir + "\n";
  s += "==== CUDA C++ ====\n" + cuda + "\n";
  s += "==== PTX (" + arch + ") ====\n" + ptx + "\n";
  return s + report();
}

std::string Inspection::report() const {
  return "==== CUBIN for " + arch + " ====\noptions: " + compiled.options + "\n" + compiled.ptxas_log + "\nregisters: " +
         std::to_string(compiled.registers) + ", spill bytes: " + std::to_string(compiled.spill_bytes) +
         ", stack bytes: " + std::to_string(compiled.stack_bytes) + ", shared bytes: " + std::to_string(shared_bytes) +
         ", instructions: " + std::to_string(compiled.sass_instructions) + "\n";
}

std::string Inspection::sass() const {
  if (compiled.cubin.empty() || compiled.symbol.empty())
    throw std::runtime_error("tilefuse: kernel '" + kernel + "' has no CUBIN to disassemble (" + arch + ")");
  std::vector<std::string> options;
  std::istringstream words(compiled.options);
  for (std::string o; words >> o;) options.push_back(o);
  options.push_back("-lineinfo");
  const nvrtc::Compiled lined = nvrtc::compile(compiled.source, compiled.symbol, options);
  const std::string text = nvrtc::disassemble(lined.cubin, true);
  const auto code = nvrtc::parse_sass(text, compiled.symbol + ".cu");
  std::string s = "==== SASS for " + arch + ": " + std::to_string(code.size()) + " instructions ====\nby opcode:";
  for (const auto& [op, n] : nvrtc::opcode_counts(code)) s += " " + op + " " + std::to_string(n);
  s += "\non the path of a thread whose runs lie wholly in their masks: " +
       std::to_string(whole_run_instructions(compiled.source, code)) + " instructions";
  s += "\nby statement (as ptxas's line table places them):\n";
  for (const auto& [statement, n] : instructions_by_statement(compiled.source, code)) {
    char count[16];
    std::snprintf(count, sizeof count, "%6d  ", n);
    s += count + statement + "\n";
  }
  return s + "==== disassembly ====\n" + text;
}

std::vector<std::pair<std::string, int>> instructions_by_statement(const std::string& cuda,
                                                                  const std::vector<nvrtc::SassInstruction>& code) {
  // The statement heading each source line (1-based); lines before the kernel's body head nothing.
  std::vector<int> heading{-1};
  std::vector<std::string> statements{"(kernel entry)"};
  std::istringstream in(cuda);
  bool body = false;
  int current = -1;
  for (std::string line; std::getline(in, line);) {
    if (!body && line.find("__global__") != std::string::npos) body = true, current = 0;
    const auto first = line.find_first_not_of(' ');
    if (body && first != std::string::npos && line.compare(first, 3, "// ") == 0) {
      current = static_cast<int>(statements.size());
      statements.push_back(line.substr(first + 3));
    }
    heading.push_back(current);
  }
  std::vector<int> count(statements.size() + 1, 0);  // the last: no source line
  for (const auto& i : code) {
    const int h = i.line > 0 && i.line < static_cast<int>(heading.size()) ? heading[i.line] : -1;
    ++count[h >= 0 ? h : statements.size()];
  }
  std::vector<std::pair<std::string, int>> out;
  for (std::size_t k = 0; k < statements.size(); ++k)
    if (count[k] > 0) out.emplace_back(statements[k], count[k]);
  if (count.back() > 0) out.emplace_back("(no source line)", count.back());
  return out;
}

int whole_run_instructions(const std::string& cuda, const std::vector<nvrtc::SassInstruction>& code) {
  // Lines (1-based) inside an `else {` block: from the line that opens it to the one that closes it.
  std::vector<bool> cold{false};
  std::istringstream in(cuda);
  int depth = 0;  // braces open since the outermost `else {` (0: outside every one)
  for (std::string line; std::getline(in, line);) {
    const auto e = line.find("else");
    const bool opens_else = e != std::string::npos && line.find('{', e) != std::string::npos &&
                            (e == 0 || line[e - 1] == ' ' || line[e - 1] == '}');
    const bool inside = depth > 0 || opens_else;
    cold.push_back(inside);
    if (!inside) continue;
    for (char c : depth > 0 ? line : line.substr(e)) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (depth < 0) depth = 0;
  }
  std::size_t end = code.size();  // one past the last EXIT
  for (std::size_t k = code.size(); k-- > 0;)
    if (code[k].opcode == "EXIT") {
      end = k + 1;
      break;
    }
  int n = 0;
  for (std::size_t k = 0; k < end; ++k)
    n += !(code[k].line > 0 && code[k].line < static_cast<int>(cold.size()) && cold[code[k].line]);
  return n;
}

namespace {
thread_local InspectLaunches* active_capture = nullptr;
}  // namespace

InspectLaunches::InspectLaunches(std::string arch, const Target* gpu) : arch_(std::move(arch)), previous_(active_capture) {
  if (gpu) target_ = *gpu;
  else if (driver::available()) target_ = tilefuse::target(Backend::gpu);
  else target_ = Target{"sm_90", true, 132, true, 232448, 50 << 20};
  if (arch_.empty()) arch_ = target_.arch;
  active_capture = this;
}

InspectLaunches::~InspectLaunches() { active_capture = previous_; }

InspectLaunches* InspectLaunches::active() { return active_capture; }

void InspectLaunches::record(const Program& program, const LaunchConfig& config, std::span<const Arg> args) {
  if (resolve_backend(config.backend) != Backend::gpu) {
    // An interpreter launch has no GPU kernel: record the IR only.
    Inspection i;
    i.kernel = program.name();
    i.grid = config.grid;
    i.group = config.group;
    i.arch = "interpreter";
    i.ir = ir::print(program.ir());
    i.reason = "runs in the interpreter";
    launches_.push_back(std::move(i));
    return;
  }
  launches_.push_back(program.inspect(config, args, arch_));
}

void Program::launch_interpreter(const LaunchConfig& config, std::span<const Arg> args) {
  // Device buffers are copied to host memory, run over, and the ones the program writes copied back.
  std::vector<interp::HostArg> host(args.size());
  std::vector<std::vector<char>> staging(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    interp::HostArg& h = host[i];
    switch (a.kind) {
      case Arg::Kind::host_memory: h.data = a.host; h.count = a.count; break;
      case Arg::Kind::device_memory: {
        staging[i].resize(a.count * ir::dtype_bytes(a.dtype));
        if (config.stream) driver::synchronize();
        driver::copy_to_host(staging[i].data(), a.device, staging[i].size());
        h.data = staging[i].data();
        h.count = a.count;
        break;
      }
      case Arg::Kind::i32: h.i = a.i32; break;
      case Arg::Kind::i64: h.i = a.i64; break;
      case Arg::Kind::f32: h.f = a.f32; break;
    }
  }
  // Resident groups run in lockstep between their reductions as a cluster's programs do.
  interp::run(fn_, config.grid.x, config.grid.y, config.grid.z, host,
              options_.resident_groups ? static_cast<int>(std::min<std::int64_t>(config.group, 1 << 30)) : options_.cluster_size);
  // Only what the program stores through goes back: read-only memory is never written, not even with
  // its own bytes.
  passes::Analysis roots;
  passes::find_pointer_roots(fn_, roots);
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].kind == Arg::Kind::device_memory && roots.written[i])
      driver::copy_to_device(args[i].device, staging[i].data(), staging[i].size());
}

// The compiled entry of `spec` (compiled, loaded and kept on first use; `args` only say why a new one
// compiled).
Program::GpuEntry& Program::gpu_entry(const Specialization& spec, std::span<const Arg> args) {
  Gpu::Entry* entry = nullptr;
  std::lock_guard lock(gpu_->mutex);
  if (gpu_->last && gpu_->last->spec == spec) {
    entry = gpu_->last;
  } else {
    for (auto& e : gpu_->entries)
      if (e->spec == spec) entry = e.get();
    if (!entry) {
      auto e = std::make_unique<Gpu::Entry>();
      e->spec = spec;
      if (!gpu_->entries.empty()) {
        e->reason = why_new(spec, args);
        if (knobs::log_recompiles()) std::fprintf(stderr, "tilefuse: %s\n", e->reason.c_str());
      }
      const std::string arch = driver::device().arch();
      // The device's shared-memory limit is checked on the generated kernel, before it compiles.
      const int limit = driver::device().max_shared_per_block;
      const Built built = build(spec, arch, [&](const codegen::Generated& g) {
        if (g.shared_bytes > limit)
          throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': its " + (fn_.stages.empty() ? "tiles" : "stages") + " take " +
                                      std::to_string(g.shared_bytes) + " bytes of shared memory per thread block, more than the " +
                                      std::to_string(limit) + " bytes " + driver::device().name + " allows; use " +
                                      (fn_.stages.empty() ? "smaller blocks (tile sizes)" : "smaller stages"));
      });
      const codegen::Generated& generated = built.generated;
      const std::string symbol = codegen::kernel_symbol(fn_);
      const std::int64_t shared = generated.shared_bytes;
      e->compiled = built.compiled;
      e->module = std::make_unique<driver::Module>(e->compiled->cubin, fn_.name);
      e->function = e->module->function(symbol);
      e->sites = generated.access_sites;
      e->tensor_maps = generated.tensor_maps;
      // Before any launch or occupancy query of the function: clusters past the portable size need it.
      if (options_.cluster_size > kMaxPortableClusterSize) driver::allow_non_portable_clusters(e->function, fn_.name.c_str());
      if (shared > 0) {
        driver::reserve_dynamic_shared(e->function, static_cast<int>(shared), options_.shared_carveout, fn_.name.c_str());
        e->shared_bytes = static_cast<unsigned>(shared);
      }
      if (options_.resident_groups)
        e->resident_per_sm = driver::resident_blocks_per_sm(e->function, 32 * options_.num_warps, e->shared_bytes, fn_.name.c_str());
      entry = e.get();
      gpu_->entries.push_back(std::move(e));
    }
    gpu_->last = entry;
  }
  return *entry;
}

std::int64_t Program::resident_cluster_programs(std::span<const Arg> args, Backend backend) {
  if (options_.cluster_size <= 1 || options_.resident_groups || InspectLaunches::active() ||
      resolve_backend(backend) == Backend::interpreter)
    return 0;
  const LaunchConfig one(Grid(options_.cluster_size), backend);
  check_arguments(one, args);
  Gpu::Entry& e = gpu_entry(specialize(one, args), args);
  std::lock_guard lock(gpu_->mutex);
  if (e.resident_clusters < 0)
    e.resident_clusters = driver::resident_clusters(e.function, options_.cluster_size, {static_cast<unsigned>(32 * options_.num_warps), 1, 1},
                                                    e.shared_bytes, fn_.name.c_str());
  return std::int64_t{e.resident_clusters} * options_.cluster_size;
}

std::int64_t Program::resident_group_programs(std::span<const Arg> args, Backend backend) {
  if (!options_.resident_groups || InspectLaunches::active() || resolve_backend(backend) == Backend::interpreter) return 0;
  const LaunchConfig one(Grid(1), backend);
  check_arguments(one, args);
  const Gpu::Entry& e = gpu_entry(specialize(one, args), args);
  return std::int64_t{e.resident_per_sm} * driver::device().sm_count;
}

void Program::launch_gpu(const LaunchConfig& config, std::span<const Arg> args) {
  const Specialization spec = specialize(config, args);
  void* params[81];  // the arguments, then at most 1 + 5 + 2 + 8 trailing ones (packed programs, groups, bounds checks, tensor maps)
  if (args.size() > 64) throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "' has more than 64 parameters");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    switch (a.kind) {
      case Arg::Kind::host_memory: break;  // refused by specialize()
      case Arg::Kind::device_memory: params[i] = const_cast<std::uint64_t*>(&a.device); break;
      case Arg::Kind::i32: params[i] = const_cast<std::int32_t*>(&a.i32); break;
      case Arg::Kind::i64: params[i] = const_cast<std::int64_t*>(&a.i64); break;
      case Arg::Kind::f32: params[i] = const_cast<float*>(&a.f32); break;
    }
  }
  Gpu::Entry* entry = &gpu_entry(spec, args);
  const int packed = spec.programs_per_block;
  std::int32_t programs_x = static_cast<std::int32_t>(config.grid.x);
  std::size_t extra = args.size();
  if (packed > 1) params[extra++] = &programs_x;
  // Resident groups: the stream's workspace (prelude/group.cuh: two arrays of arrival counts, one per group
  // of the largest grid that can be resident, launches taking them in turn, then a value per program and
  // reduction), the group size and the counts per array.
  std::uint64_t group_count = 0, group_next = 0, group_values = 0;
  std::int32_t group = static_cast<std::int32_t>(config.group), group_slots = 0;
  std::unique_lock<std::mutex> group_lock;
  Gpu::GroupWorkspace* workspace = nullptr;
  if (options_.resident_groups) {
    const int blocks = entry->resident_per_sm;
    const int sms = driver::device().sm_count;
    const std::int64_t resident = std::int64_t{blocks} * sms;
    if (config.grid.x > resident)
      throw std::invalid_argument("tilefuse: kernel '" + fn_.name +
                                  "' combines over resident groups, so all its programs must run at once: expected a grid of at most " +
                                  std::to_string(resident) + " programs (" + std::to_string(blocks) + " per SM on " + driver::device().name +
                                  "), got " + std::to_string(config.grid.x));
    // Sized for the most blocks any specialization could keep resident (32 a SM).
    const std::size_t most = 32 * static_cast<std::size_t>(sms), counts_bytes = 4 * most;
    group_lock = std::unique_lock<std::mutex>(gpu_->group_mutex);
    workspace = &gpu_->group_workspaces[config.stream];
    if (!workspace->bytes) {  // the stream's first launch: two values per program (a round's, the next one's)
      workspace->bytes = std::make_unique<DeviceBytes>(2 * counts_bytes + 2 * 4 * most);
      workspace->bytes->fill(0, 2 * counts_bytes, config.stream);
    }
    const std::uint64_t base = workspace->bytes->address();
    // (counted once the launch is on its stream: a launch that fails to start leaves the turn unchanged)
    const bool odd = workspace->launches % 2 == 1;
    group_count = base + (odd ? counts_bytes : 0);
    group_next = base + (odd ? 0 : counts_bytes);
    group_values = base + 2 * counts_bytes;
    group_slots = static_cast<std::int32_t>(most);
    for (void* p : {static_cast<void*>(&group_count), static_cast<void*>(&group_next), static_cast<void*>(&group_values),
                    static_cast<void*>(&group), static_cast<void*>(&group_slots)})
      params[extra++] = p;
  }
  // Bounds checks: each argument's element count (by value, as the kernel's TfCounts) and the fault record.
  long long counts[64];  // filled only with bounds checks: no work on the ordinary launch path
  std::uint64_t fault_address = 0;
  if (spec.bounds_checks) {
    counts[0] = 0;  // (a kernel without parameters still takes one count)
    for (std::size_t i = 0; i < args.size(); ++i) counts[i] = static_cast<long long>(args[i].count);
    {
      std::lock_guard lock(gpu_->mutex);
      if (!gpu_->fault) {
        auto fault = std::make_unique<DeviceBytes>(kFaultBytes);
        fault->fill(0, kFaultBytes, nullptr);
        driver::synchronize();
        gpu_->fault = std::move(fault);
      }
    }
    fault_address = gpu_->fault->address();
    params[extra++] = counts;
    params[extra++] = &fault_address;
  }
  // The TMA copies' tensor maps, from this launch's arguments: trailing parameters, by value.
  struct alignas(64) TensorMapBytes {
    unsigned char bytes[128];
  };
  TensorMapBytes maps[codegen::kMaxTensorMaps];
  for (std::size_t k = 0; k < entry->tensor_maps.size(); ++k) {
    const codegen::TensorMap& m = entry->tensor_maps[k];
    const std::int32_t rows = args[m.rows_param].i32, cols = args[m.cols_param].i32;
    if (rows < 1 || cols < 1)
      throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': its TMA copies read argument '" + fn_.params[m.pointer_param].name +
                                  "' as a matrix of '" + fn_.params[m.rows_param].name + "' rows of '" + fn_.params[m.cols_param].name +
                                  "' elements, which must both be at least 1; got " + std::to_string(rows) + " and " + std::to_string(cols));
    driver::encode_tensor_map_2d(maps[k].bytes, m.dtype == ir::DType::f16 ? driver::TensorElement::f16 : driver::TensorElement::bf16,
                                 args[m.pointer_param].device, static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows),
                                 static_cast<std::uint32_t>(m.box_cols), static_cast<std::uint32_t>(m.box_rows), fn_.name.c_str());
    params[extra++] = maps[k].bytes;
  }
  const driver::Dim3 grid{static_cast<unsigned>((config.grid.x + packed - 1) / packed),
                          static_cast<unsigned>(config.grid.y), static_cast<unsigned>(config.grid.z)};
  const driver::Dim3 block{static_cast<unsigned>(32 * options_.num_warps * packed), 1, 1};
  if (options_.resident_groups) {
    driver::launch_cooperative(entry->function, grid, block, entry->shared_bytes, config.stream, params, fn_.name.c_str());
    ++workspace->launches;
    group_lock.unlock();
  } else if (config.pdl) {
    driver::launch_overlapping(entry->function, grid, block, entry->shared_bytes, config.stream, params, fn_.name.c_str());
  } else {
    driver::launch(entry->function, grid, block, entry->shared_bytes, config.stream, params, fn_.name.c_str());
  }
  if (spec.bounds_checks) check_fault(entry->sites, packed);
}

// The fault record of a bounds-checked launch, read back after it finishes: a violation becomes a
// BoundsError (and the record is cleared for the next launch).
void Program::check_fault(const std::vector<codegen::AccessSite>& sites, int packed) {
  struct Fault {
    std::int32_t hit, param, site, thread;
    std::int64_t element, count;
    std::int32_t block[3], width;
  } f{};
  static_assert(sizeof(Fault) == kFaultBytes);
  driver::synchronize();
  gpu_->fault->download(&f, sizeof f);
  if (!f.hit) return;
  gpu_->fault->fill(0, kFaultBytes, nullptr);
  driver::synchronize();
  const std::int64_t program_x = packed > 1 ? std::int64_t{f.block[0]} * packed + f.thread / 32 : f.block[0];
  const codegen::AccessSite site =
      f.site >= 0 && f.site < static_cast<int>(sites.size()) ? sites[f.site] : codegen::AccessSite{"access", "?", false};
  throw BoundsError("tilefuse GPU bounds check: kernel '" + fn_.name + "', program (" + std::to_string(program_x) + "," +
                    std::to_string(f.block[1]) + "," + std::to_string(f.block[2]) + ") thread " +
                    std::to_string(f.thread % (32 * options_.num_warps)) + ", '" + site.ir + "': " + site.what + " through " +
                    param_label(static_cast<std::size_t>(f.param)) + " at element " + std::to_string(f.element) +
                    (f.width > 1 ? " (a run of " + std::to_string(f.width) + ")" : "") + ", outside its " + std::to_string(f.count) +
                    " elements" + (site.masked ? " (the mask let it through)" : " (the access has no mask)"));
}

void* Program::last_function() const {
  std::lock_guard lock(gpu_->mutex);
  return gpu_->last ? gpu_->last->function : nullptr;
}

}  // namespace tilefuse
