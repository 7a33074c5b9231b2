// Program (see program.hpp): the optimized IR, the argument checks every launch makes, the interpreter
// path over host memory, and the GPU path: specialize, generate, compile through the cache, load, launch.
#include "backend/runtime/program.hpp"

#include <cstdio>
#include <iostream>

#include "backend/cache/cache.hpp"
#include "backend/codegen/cuda.hpp"
#include "backend/driver/driver.hpp"
#include "backend/interp/interp.hpp"
#include "backend/knobs/knobs.hpp"
#include "backend/nvrtc/nvrtc.hpp"
#include "backend/passes/analysis/analysis.hpp"
#include "backend/passes/passes.hpp"

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

std::string kind_name(Arg::Kind k) {
  switch (k) {
    case Arg::Kind::device_memory: return "a DeviceBuffer";
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

// GPU state: compiled specializations, each with its loaded module and function handle.
struct Program::Gpu {
  struct Entry {
    Specialization spec;
    std::shared_ptr<const nvrtc::Compiled> compiled;
    std::unique_ptr<driver::Module> module;
    void* function = nullptr;
    unsigned shared_bytes = 0;  // dynamic shared memory per block: the stages of its programs
  };
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
  if (options_.num_warps < 1 || options_.num_warps > 32 || (options_.num_warps & (options_.num_warps - 1)))
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': num_warps must be a power of two from 1 to 32, got " +
                                std::to_string(options_.num_warps));
  if (options_.num_stages < 1 || options_.num_stages > 4)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': num_stages must be from 1 to 4, got " +
                                std::to_string(options_.num_stages));
  if (options_.cluster_size < 1 || options_.cluster_size > 8)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': cluster_size must be from 1 to 8, got " +
                                std::to_string(options_.cluster_size));
  if (options_.shared_carveout < -1 || options_.shared_carveout > 100)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': shared_carveout must be from -1 to 100 (percent), got " +
                                std::to_string(options_.shared_carveout));
  if (options_.min_programs_per_sm < 0 || options_.min_programs_per_sm > 2048)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': min_programs_per_sm must be from 0 to 2048, got " +
                                std::to_string(options_.min_programs_per_sm));
}

Program::~Program() = default;

Specialization Program::default_specialization() const {
  return Specialization{std::vector<int>(fn_.params.size(), 16)};
}

codegen::Generated Program::generate(const Specialization& spec) const {
  const passes::Analysis analysis = passes::analyze(fn_, 32 * options_.num_warps, spec.divisibility);
  return codegen::generate(
      fn_, analysis, codegen::Options{options_.num_warps, spec.programs_per_block, options_.min_programs_per_sm, options_.cluster_size,
                                  options_.num_stages});
}

std::string Program::cuda_source(const Specialization& spec) const { return generate(spec).source; }

CompiledInfo Program::compile(const Specialization& spec, const std::string& arch) const {
  CompiledInfo info;
  info.source = cuda_source(spec);
  const auto options = nvrtc::options_for(arch);
  const auto compiled = cache::KernelCache::global().get(info.source, codegen::kernel_symbol(fn_), options);
  for (const auto& o : options) info.options += (info.options.empty() ? "" : " ") + o;
  info.ptxas_log = compiled->log;
  info.registers = compiled->registers;
  info.spill_bytes = compiled->spill_stores + compiled->spill_loads;
  info.stack_bytes = compiled->stack_bytes;
  info.cubin = compiled->cubin;
  return info;
}

std::string Program::param_label(std::size_t index) const {
  return "argument " + std::to_string(index) + " (" + fn_.params[index].name + ")";
}

void Program::bad_argument(std::size_t index, const std::string& expected, const std::string& got) const {
  throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "', " + param_label(index) + ": expected " + expected +
                              ", got " + got);
}

void Program::launch(const LaunchConfig& config, std::span<const Arg> args) {
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
  if (resolve_backend(config.backend) == Backend::interpreter) launch_interpreter(config, args);
  else launch_gpu(config, args);
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
  interp::run(fn_, config.grid.x, config.grid.y, config.grid.z, host, options_.cluster_size);
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].kind == Arg::Kind::device_memory)
      driver::copy_to_device(args[i].device, staging[i].data(), staging[i].size());
}

void Program::launch_gpu(const LaunchConfig& config, std::span<const Arg> args) {
  // Specialize on what the arguments reveal about alignment, as Triton does: vector accesses need it.
  Specialization spec;
  spec.divisibility.resize(args.size());
  // One-warp programs on a large grid: 8 per block, so an SM holds 64 of them rather than its 32-block limit.
  if (options_.num_warps == 1 && options_.cluster_size == 1 && config.grid.x >= 4096) spec.programs_per_block = 8;
  void* params[65];
  if (args.size() > 64) throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "' has more than 64 parameters");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    switch (a.kind) {
      case Arg::Kind::host_memory:
        bad_argument(i, "a DeviceBuffer for a GPU launch",
                     "host memory (use Backend::interpreter or TILEFUSE_INTERPRET=1 to run on host memory)");
      case Arg::Kind::device_memory:
        spec.divisibility[i] = pow2_up_to_16(a.device);
        params[i] = const_cast<std::uint64_t*>(&a.device);
        break;
      case Arg::Kind::i32:
        spec.divisibility[i] = integer_divisibility(a.i32);
        params[i] = const_cast<std::int32_t*>(&a.i32);
        break;
      case Arg::Kind::i64:
        spec.divisibility[i] = integer_divisibility(a.i64);
        params[i] = const_cast<std::int64_t*>(&a.i64);
        break;
      case Arg::Kind::f32:
        spec.divisibility[i] = 1;
        params[i] = const_cast<float*>(&a.f32);
        break;
    }
  }
  Gpu::Entry* entry = nullptr;
  {
    std::lock_guard lock(gpu_->mutex);
    if (gpu_->last && gpu_->last->spec == spec) {
      entry = gpu_->last;
    } else {
      for (auto& e : gpu_->entries)
        if (e->spec == spec) entry = e.get();
      if (!entry) {
        auto e = std::make_unique<Gpu::Entry>();
        e->spec = spec;
        const codegen::Generated generated = generate(spec);
        const std::string symbol = codegen::kernel_symbol(fn_);
        const std::int64_t shared = generated.shared_bytes;
        const int limit = driver::device().max_shared_per_block;
        if (shared > limit)
          throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': its " + (fn_.stages.empty() ? "tiles" : "stages") + " take " +
                                      std::to_string(shared) + " bytes of shared memory per thread block, more than the " +
                                      std::to_string(limit) + " bytes " + driver::device().name + " allows; use " +
                                      (fn_.stages.empty() ? "smaller blocks (tile sizes)" : "smaller stages"));
        e->compiled = cache::KernelCache::global().get(generated.source, symbol, nvrtc::options_for(driver::device().arch()));
        e->module = std::make_unique<driver::Module>(e->compiled->cubin, fn_.name);
        e->function = e->module->function(symbol);
        if (shared > 0) {
          driver::reserve_dynamic_shared(e->function, static_cast<int>(shared), options_.shared_carveout, fn_.name.c_str());
          e->shared_bytes = static_cast<unsigned>(shared);
        }
        entry = e.get();
        gpu_->entries.push_back(std::move(e));
      }
      gpu_->last = entry;
    }
  }
  const int packed = spec.programs_per_block;
  std::int32_t programs_x = static_cast<std::int32_t>(config.grid.x);
  if (packed > 1) params[args.size()] = &programs_x;
  const driver::Dim3 grid{static_cast<unsigned>((config.grid.x + packed - 1) / packed),
                          static_cast<unsigned>(config.grid.y), static_cast<unsigned>(config.grid.z)};
  const driver::Dim3 block{static_cast<unsigned>(32 * options_.num_warps * packed), 1, 1};
  driver::launch(entry->function, grid, block, entry->shared_bytes, config.stream, params, fn_.name.c_str());
}

void* Program::last_function() const {
  std::lock_guard lock(gpu_->mutex);
  return gpu_->last ? gpu_->last->function : nullptr;
}

}  // namespace tilefuse
