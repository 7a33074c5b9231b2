// A traced program ready to run: optimizes the IR once, then per launch either runs the interpreter or
// picks the GPU specialization (argument alignment), compiles it through the cache and launches it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/ir/ir.hpp"
#include "backend/nvrtc/sass.hpp"
#include "backend/runtime/args.hpp"
#include "backend/runtime/target.hpp"

namespace tilefuse::codegen {
struct Generated;
struct AccessSite;
}  // namespace tilefuse::codegen
namespace tilefuse::nvrtc {
struct Compiled;
}  // namespace tilefuse::nvrtc

namespace tilefuse {

/// The largest thread-block cluster a kernel may ask for (sm_90's non-portable limit) and the largest every
/// sm_90 part holds (the portable one).
inline constexpr int kMaxClusterSize = 16;
inline constexpr int kMaxPortableClusterSize = 8;

/// Options fixed for a kernel when it is declared.
struct KernelOptions {
  int num_warps = 4;                     ///< threads per program = 32 * num_warps (1 to 32, a power of two)
  std::vector<std::string> param_names;  ///< names used in IR, generated code and error messages
  /// Programs the compiler must fit on one SM at once (it becomes __launch_bounds__'s minimum blocks):
  /// caps registers per thread so that memory-bound kernels keep enough rows in flight; 0 leaves it to ptxas.
  int min_programs_per_sm = 0;
  /// Programs along axis 0 that run together as one thread-block cluster and share tl::cluster_max and
  /// tl::cluster_sum (1 to kMaxClusterSize; 1: no clusters). The grid's axis 0 must be a multiple of it.
  /// Past kMaxPortableClusterSize the kernel is allowed Hopper's non-portable cluster sizes when it loads
  /// (a GPU or MIG slice that cannot hold such a cluster refuses the launch with the driver's error).
  int cluster_size = 1;
  /// tl::cluster_max and tl::cluster_sum combine over groups of co-resident programs through global
  /// memory instead of over a thread-block cluster: LaunchConfig::group consecutive programs along axis
  /// 0 form a group, of any size. Such a kernel launches cooperatively: every program of the grid runs at
  /// once (a grid larger than the GPU holds is refused with an error), so that each can wait for the rest
  /// of its group. Not with cluster_size above 1; programs with 1D tiles only.
  bool resident_groups = false;
  /// For kernels with stages: the percentage of the SM's L1/shared array asked for as shared memory
  /// (0 to 100; -1 leaves it to the driver). The default, all of it, lets stages decide how many programs
  /// fit on an SM.
  int shared_carveout = 100;
  /// For programs with 2D tiles: copies into shared memory that a loop's dots read are issued this many
  /// iterations ahead minus one (Triton's num_stages): 2 overlaps each iteration's copies with the
  /// previous iteration's math; 1 copies and waits in place. 1 to 4.
  int num_stages = 2;
  /// Tile division rounds correctly (IEEE, as the interpreter and scalar division do) instead of through
  /// div.full.f32, which is faster and within 2 ulp (Triton's default too). For programs that truncate a
  /// quotient to an integer, where 2 ulp can cross an integer.
  bool precise_division = false;
  /// For programs with dots on sm_90 GPUs: dots whose result spreads over whole warpgroups run on the
  /// warpgroup MMA (wgmma, compiled for sm_90a) instead of mma.sync. false keeps mma.sync everywhere.
  bool warpgroup_mma = true;
  /// For programs on warpgroup MMA: a loop's pipelined loads of row-major matrix blocks whose masks are
  /// the matrix's bounds are copied by TMA (one thread per stage, completing on an mbarrier) instead of
  /// each thread's cp.async, and a store of such a block outside loops that is the kernel's last global
  /// access goes out through shared memory and TMA (codegen::TensorMap says which). false keeps cp.async
  /// and stores from registers.
  bool tma = true;
  /// min_programs_per_sm as a wish, asked of ptxas only where it changes something and never at the cost
  /// of spills: the kernel compiles without it where the registers ptxas chooses already fit that many
  /// programs, or where fitting them would spill (what launches, compile and inspect use; cuda_source and
  /// generate show the request).
  bool min_programs_unless_spilling = false;
  /// Integer scalar parameters (by name) whose launch values are compiled into the kernel as constants,
  /// as Triton compiles a tl.constexpr: masks against them, divisions by them and the elements of a tile
  /// past them fold away. Each distinct value compiles (and caches) a specialization of its own, so name
  /// only parameters that take few values, such as a narrow row's width. The interpreter ignores it.
  std::vector<std::string> constant_params;
  /// Loads and stores with tl::Cache::evict_last take the L2's evict-last policy (PTX createpolicy and
  /// L2::cache_hint), so that their lines outlast others there; false compiles them as Cache::normal (the
  /// same program without the hint, to measure what it buys).
  bool l2_evict_last = true;
};

/// What is known about each argument at compile time: the power of two that divides an integer argument
/// (up to 2^16 for a positive one, else up to 16: above 16 it also says the argument is positive), or the
/// byte alignment (1 to 16) of a pointer argument. Keys the GPU specializations.
struct Specialization {
  std::vector<int> divisibility;
  /// One-warp programs packed per thread block along axis 0 (the runtime packs 8 for large grids).
  int programs_per_block = 1;
  /// Every global access checked against its argument's size (TILEFUSE_DEBUG_BOUNDS=1; slow).
  bool bounds_checks = false;
  /// The value compiled in for each parameter KernelOptions::constant_params names, by parameter index
  /// (nullopt for the others); empty when it names none.
  std::vector<std::optional<std::int64_t>> constants;
  friend bool operator==(const Specialization&, const Specialization&) = default;
};

/// The divisibility a launch records for an integer argument v: the largest power of two dividing it, up to
/// 2^16 when v > 0 (so `arange<N> < n` with n a positive multiple of N folds to true) and up to 16 otherwise.
int integer_divisibility(std::int64_t v);

/// A GPU launch that touched memory outside an argument, found by the debug bounds checks
/// (TILEFUSE_DEBUG_BOUNDS=1): what() names the kernel, the program, the thread, the access (its IR and
/// source line), the argument, the element and the argument's size, as the interpreter's errors do.
class BoundsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A compiled GPU specialization, as inspect tools see it.
struct CompiledInfo {
  std::string source;      ///< generated CUDA C++
  std::string options;     ///< NVRTC options, space separated
  std::string ptxas_log;   ///< NVRTC log including the ptxas -v report
  int registers = -1;      ///< registers per thread
  int spill_bytes = 0;     ///< spill stores + spill loads, bytes
  int stack_bytes = 0;     ///< stack frame, bytes
  /// Instructions in the kernel's machine code as written (nvrtc::sass_instructions: loops once, both
  /// sides of every branch), -1 if unknown: what a change to the generated code costs, without a GPU.
  int sass_instructions = -1;
  std::vector<char> cubin; ///< the CUBIN itself (Inspection::sass disassembles it)
  std::string symbol;      ///< the kernel's symbol in the CUBIN
};

/// Everything about the GPU kernel one launch runs (Program::inspect, Kernel::inspect): exactly the
/// specialization that launch compiles, not a default one.
struct Inspection {
  std::string kernel;         ///< kernel name
  std::string key;            ///< the specialization key: what each argument is known to be (see Program::describe)
  Specialization spec;        ///< the specialization itself
  std::string cache_key;      ///< the kernel cache's key of the compiled CUBIN (source, options, NVRTC version)
  std::string arch;           ///< the architecture compiled for ("sm_90")
  std::string ir;             ///< the IR after the passes
  std::string cuda;           ///< the generated CUDA C++
  std::string ptx;            ///< PTX for arch's virtual architecture
  CompiledInfo compiled;      ///< NVRTC options, ptxas report, registers, spills, stack, CUBIN
  std::int64_t shared_bytes = 0;  ///< dynamic shared memory per thread block
  Grid grid;                      ///< the launch's programs along each axis (LaunchConfig::grid)
  std::int64_t group = 1;         ///< programs per resident group along axis 0 (LaunchConfig::group)
  bool pdl = false;               ///< the launch may overlap the stream's previous kernel (LaunchConfig::pdl)
  /// Whether a launch like this one would compile: "compiled already", "the first specialization", or which
  /// argument property (alignment, divisibility) differs from the nearest specialization compiled so far.
  std::string reason;
  /// The launch's grid as text: "525 programs" ("64 x 2 programs", "... in resident groups of 105").
  std::string grid_text() const;
  /// All of it as text: key, grid and reason, IR, CUDA, PTX, the register and spill report.
  std::string text() const;
  /// The kernel's machine code (SASS) as NVIDIA's disassembler prints it, after its instructions counted
  /// by opcode, on the whole-run path (whole_run_instructions) and by DSL statement
  /// (instructions_by_statement). The source is compiled again with -lineinfo, which gives each
  /// instruction its CUDA line and leaves the code unchanged. Needs nvdisasm (TILEFUSE_NVDISASM,
  /// knobs::nvdisasm), not a GPU; throws std::runtime_error without it.
  std::string sass() const;
  /// The last part of text(): NVRTC's options, the ptxas report, registers, spills, stack, shared memory
  /// and the instruction count.
  std::string report() const;
};

/// How many of `code`'s instructions each statement of the generated CUDA `cuda` has, in source order:
/// an instruction belongs to the statement whose comment (`// %7 = ...`, one per IR statement) heads the
/// lines above its own; "(kernel entry)" takes those before the first statement, "(no source line)" those
/// the line table leaves out. As ptxas's line table places them: it interleaves statements, and code it
/// shares between statements goes to one of them.
std::vector<std::pair<std::string, int>> instructions_by_statement(const std::string& cuda,
                                                                  const std::vector<nvrtc::SassInstruction>& code);

/// How many of `code`'s instructions a thread runs when every vector run of its masked accesses and
/// selects lies wholly in the mask: those outside the generated CUDA's `else` blocks (which lower runs a
/// mask cuts or turns off, element by element) and before the last EXIT (after it ptxas places the slow
/// paths of divisions and square roots). Loops count once. An estimate of what the common thread issues
/// where the as-written count adds every fallback path; the row kernels are bound by instructions issued.
int whole_run_instructions(const std::string& cuda, const std::vector<nvrtc::SassInstruction>& code);

/// A program traced from the DSL, optimized, and launchable on the GPU or in the interpreter.
class Program {
 public:
  /// Takes the traced IR, verifies and optimizes it (TILEFUSE_DUMP_IR=1 prints it after each pass).
  Program(ir::Function traced, KernelOptions options);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  /// Kernel name.
  const std::string& name() const { return fn_.name; }
  /// The optimized IR.
  const ir::Function& ir() const { return fn_; }
  /// Threads per program.
  int num_warps() const { return options_.num_warps; }

  /// The generated CUDA source for a specialization (default: every argument 16-divisible/aligned), for
  /// GPU architecture `arch` ("sm_90": dots may use warpgroup MMA); empty: what runs on every sm_80+ GPU.
  std::string cuda_source(const Specialization& spec, const std::string& arch = {}) const;
  /// The generated kernel of one specialization for `arch` (as cuda_source) with the shared memory it needs.
  codegen::Generated generate(const Specialization& spec, const std::string& arch = {}) const;
  /// The specialization assumed when no arguments are known: the best alignment for every parameter.
  Specialization default_specialization() const;
  /// Compiles (or fetches from the cache) a specialization for `arch` (e.g. "sm_90") without a GPU.
  CompiledInfo compile(const Specialization& spec, const std::string& arch) const;

  /// The specialization a GPU launch of `config` with `args` compiles (what launches key their kernels on).
  Specialization specialize(const LaunchConfig& config, std::span<const Arg> args) const;
  /// A specialization as text, one entry per parameter: "in:align16 out:align16 stride:div8 n_cols:div8"
  /// (pointers: byte alignment of the address; integers: the power of two dividing the value, or
  /// "n_cols=151" for a value compiled in), then "programs_per_block:8" where one-warp programs are packed.
  std::string describe(const Specialization& spec) const;
  /// The specializations GPU launches have compiled so far, oldest first.
  std::vector<Specialization> specializations() const;
  /// Why each GPU specialization after the first was compiled, one sentence each, oldest first
  /// (TILEFUSE_LOG_RECOMPILES=1 also prints each to stderr as it happens).
  std::vector<std::string> recompile_reasons() const;
  /// The kernel a launch of `config` with `args` would run on the GPU, without running it: key, IR, CUDA,
  /// PTX, registers and spills (compiled through the kernel cache for `arch`: empty for the GPU's, or
  /// sm_90 without one), and whether that launch would compile a new specialization and why.
  Inspection inspect(const LaunchConfig& config, std::span<const Arg> args, const std::string& arch = {}) const;

  /// Runs the program over the launch grid. Throws std::invalid_argument naming the kernel and argument
  /// for arguments that do not fit, tilefuse::driver errors for GPU failures.
  void launch(const LaunchConfig& config, std::span<const Arg> args);

  /// For a cluster kernel (KernelOptions::cluster_size > 1), the programs a GPU holds at once when it is
  /// launched with `args`: the driver's count of resident clusters (cuOccupancyMaxActiveClusters, which
  /// knows how clusters fit the GPCs) times the cluster size. Compiles the kernel for `args` as a launch
  /// would and asks the driver once per specialization. 0 where there is nothing to ask: not a cluster
  /// kernel, a resident-groups kernel, the interpreter, launches being inspected, or a driver or GPU
  /// without the query (sm_90 and CUDA 12 on).
  std::int64_t resident_cluster_programs(std::span<const Arg> args, Backend backend = Backend::automatic);
  /// For a resident-groups kernel (KernelOptions::resident_groups), the programs a GPU holds at once when it
  /// is launched with `args` (the occupancy calculator's programs per SM times the SMs): the largest grid
  /// its cooperative launch takes. Compiles the kernel for `args` as a launch would. 0 where there is
  /// nothing to ask: not such a kernel, the interpreter, or launches being inspected.
  std::int64_t resident_group_programs(std::span<const Arg> args, Backend backend = Backend::automatic);

  /// The CUDA function handle of the most recent GPU launch (for benchmarks that launch it raw).
  void* last_function() const;

 private:
  struct Gpu;
  struct GpuEntry;
  void launch_interpreter(const LaunchConfig& config, std::span<const Arg> args);
  void launch_gpu(const LaunchConfig& config, std::span<const Arg> args);
  GpuEntry& gpu_entry(const Specialization& spec, std::span<const Arg> args);
  [[noreturn]] void bad_argument(std::size_t index, const std::string& expected, const std::string& got) const;
  void check_arguments(const LaunchConfig& config, std::span<const Arg> args) const;
  CompiledInfo compile_source(std::string source, const std::string& arch) const;
  /// generate, with (`bounded`) or without KernelOptions::min_programs_per_sm.
  codegen::Generated generate(const Specialization& spec, const std::string& arch, bool bounded) const;
  struct Built;
  Built build(const Specialization& spec, const std::string& arch,
              const std::function<void(const codegen::Generated&)>& check = {}) const;
  std::string why_new(const Specialization& spec, std::span<const Arg> args) const;
  void check_fault(const std::vector<codegen::AccessSite>& sites, int packed);
  static constexpr std::size_t kFaultBytes = 48;  // the device's TfFault (codegen/prelude/bounds.cuh)
  std::string param_label(std::size_t index) const;

  ir::Function fn_;
  KernelOptions options_;
  bool waits_for_previous_ = false;  ///< the program calls tl::gdc_wait (what a LaunchConfig::pdl launch needs)
  std::vector<bool> constant_params_;  ///< by parameter index: KernelOptions::constant_params names it
  std::unique_ptr<Gpu> gpu_;
};

/// While one is alive, launches on its thread do not run: each is inspected (Program::inspect) and
/// recorded, and target() answers with `target` for GPU launches. Shows what a library call (a sample
/// kernel's launcher, which may launch several kernels and choose among variants) would run, with or
/// without a GPU: the inspect tool is built on it.
class InspectLaunches {
 public:
  /// Launches are inspected for `arch` (empty: the GPU's, or sm_90 without one); `gpu` describes the GPU
  /// the choices assume (default: the GPU present, or an sm_90 with 132 SMs, clusters and 50 MB of L2
  /// without one).
  explicit InspectLaunches(std::string arch = {}, const Target* gpu = nullptr);
  ~InspectLaunches();
  InspectLaunches(const InspectLaunches&) = delete;
  InspectLaunches& operator=(const InspectLaunches&) = delete;
  /// The inspected launches, in launch order.
  const std::vector<Inspection>& launches() const { return launches_; }
  /// The active capture of this thread, if any (for the runtime).
  static InspectLaunches* active();
  /// Records a launch (for the runtime).
  void record(const Program& program, const LaunchConfig& config, std::span<const Arg> args);
  /// The GPU target launches see while this capture is active.
  const Target& target() const { return target_; }

 private:
  std::string arch_;
  Target target_;
  std::vector<Inspection> launches_;
  InspectLaunches* previous_;
};

/// Whether TILEFUSE_INTERPRET=1 (read once per process).
bool interpret_by_default();

/// The backend a launch with `requested` runs on: Backend::automatic becomes the interpreter when
/// TILEFUSE_INTERPRET=1, else the GPU.
Backend resolve_backend(Backend requested);

}  // namespace tilefuse
