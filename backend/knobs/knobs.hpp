// Every environment variable tilefuse reads, in one place (Triton's knobs module): each is read here, once,
// with its range checked, and listed in table(), which a test holds equal to the README's Environment
// table. Tuning choices are not environment variables: they are fields of option structs
// (KernelOptions, kernels::Tuning) that callers and the bench set.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tilefuse::knobs {

/// One environment variable: its name, the values it takes, and what it does.
struct Knob {
  const char* name;
  const char* values;
  const char* effect;
};

/// Every variable tilefuse reads, in the README's order.
std::span<const Knob> table();

/// TILEFUSE_INTERPRET: launches with Backend::automatic run in the CPU interpreter.
bool interpret();
/// TILEFUSE_DUMP_IR: print the IR after each pass to stderr.
bool dump_ir();
/// The disk cache directory: TILEFUSE_CACHE_DIR, else $XDG_CACHE_HOME/tilefuse, else ~/.cache/tilefuse;
/// none when TILEFUSE_DISABLE_DISK_CACHE=1 (or no home directory is known).
std::optional<std::filesystem::path> cache_dir();
/// Where the tuner keeps its configurations: TILEFUSE_TUNE_DIR, else tuned/ in cache_dir(); none when
/// TILEFUSE_DISABLE_DISK_CACHE=1. Read at each use.
std::optional<std::filesystem::path> tune_dir();
/// TILEFUSE_LOG_RECOMPILES: print why each new GPU specialization of a kernel was compiled.
bool log_recompiles();
/// TILEFUSE_DEBUG_BOUNDS: GPU kernels compiled from now on check each access against its argument's size
/// (read at each kernel's first GPU launch, so a test can switch it).
bool debug_bounds();
/// TILEFUSE_CUDA_DRIVER: the driver library to open (default "libcuda.so.1"); read once, by the driver's
/// first use.
std::string cuda_driver();
/// The disassembler to run for SASS, as candidates to try in order: TILEFUSE_NVDISASM alone when set, else
/// $CUDA_HOME/bin/nvdisasm, /usr/local/cuda/bin/nvdisasm and nvdisasm on PATH. Read at each use.
std::vector<std::string> nvdisasm();
/// TILEFUSE_FUZZ_PROGRAMS: how many programs the CPU tier's fuzzer test generates (default 2000).
long fuzz_programs();
/// TILEFUSE_UPDATE_GOLDENS: the codegen golden tests rewrite their files instead of comparing.
bool update_goldens();

}  // namespace tilefuse::knobs
