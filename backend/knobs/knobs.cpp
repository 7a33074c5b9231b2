// The environment variables (see knobs.hpp): each read once per process, with its range checked; a bad
// value is an std::invalid_argument that names the variable, the values it takes and what came.
#include "backend/knobs/knobs.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tilefuse::knobs {

namespace {

constexpr Knob kTable[] = {
    {"TILEFUSE_INTERPRET", "0 or 1", "every launch with `Backend::automatic` runs in the CPU interpreter"},
    {"TILEFUSE_CACHE_DIR", "a directory", "disk cache location (default `$XDG_CACHE_HOME/tilefuse`, else `~/.cache/tilefuse`)"},
    {"TILEFUSE_DISABLE_DISK_CACHE", "0 or 1", "keep compiled kernels (and tuned configurations) in memory only"},
    {"TILEFUSE_TUNE_DIR", "a directory", "where the tuner keeps its configurations (default: `tuned/` in the disk cache directory)"},
    {"TILEFUSE_DUMP_IR", "0 or 1", "print the IR after each pass to stderr"},
    {"TILEFUSE_LOG_RECOMPILES", "0 or 1", "print to stderr why each GPU specialization after a kernel's first was compiled"},
    {"TILEFUSE_DEBUG_BOUNDS", "0 or 1",
     "GPU kernels check every load and store against its argument's size and report the first violation (slow)"},
    {"TILEFUSE_CUDA_DRIVER", "a library name or path",
     "the CUDA driver library tilefuse opens (default `libcuda.so.1`, found as the dynamic loader finds libraries)"},
    {"TILEFUSE_NVDISASM", "a program name or path",
     "the disassembler that `Inspection::sass` and `inspect --only sass` run (default: `nvdisasm` in `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, else on `PATH`)"},
    {"TILEFUSE_FUZZ_PROGRAMS", "0 to 10000000", "programs the CPU tier's differential fuzzer test generates (default 2000)"},
    {"TILEFUSE_UPDATE_GOLDENS", "0 or 1", "the codegen golden tests rewrite tests/goldens instead of comparing"},
    {"XDG_CACHE_HOME", "a directory", "the default disk cache is `$XDG_CACHE_HOME/tilefuse` when TILEFUSE_CACHE_DIR is unset"},
    {"HOME", "a directory", "the default disk cache is `~/.cache/tilefuse` when neither of the above is set"},
    {"CUDA_HOME", "a directory", "the CUDA toolkit whose `bin/nvdisasm` is tried first when TILEFUSE_NVDISASM is unset"},
};

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// A 0/1 switch: unset or empty is off.
bool flag(const char* name) {
  const char* v = get(name);
  if (!v) return false;
  const std::string s = v;
  if (s == "0") return false;
  if (s == "1") return true;
  throw std::invalid_argument(std::string("tilefuse: environment variable ") + name + " must be 0 or 1, got '" + s + "'");
}

}  // namespace

std::span<const Knob> table() { return kTable; }

bool interpret() {
  static const bool on = flag("TILEFUSE_INTERPRET");
  return on;
}

bool dump_ir() {
  static const bool on = flag("TILEFUSE_DUMP_IR");
  return on;
}

bool log_recompiles() {
  static const bool on = flag("TILEFUSE_LOG_RECOMPILES");
  return on;
}

bool debug_bounds() { return flag("TILEFUSE_DEBUG_BOUNDS"); }

std::string cuda_driver() {
  const char* v = get("TILEFUSE_CUDA_DRIVER");
  return v ? v : "libcuda.so.1";
}

std::vector<std::string> nvdisasm() {
  if (const char* v = get("TILEFUSE_NVDISASM")) return {v};
  std::vector<std::string> at;
  if (const char* home = get("CUDA_HOME")) at.push_back(std::string(home) + "/bin/nvdisasm");
  if (at.empty() || at[0] != "/usr/local/cuda/bin/nvdisasm") at.push_back("/usr/local/cuda/bin/nvdisasm");
  at.push_back("nvdisasm");
  return at;
}

long fuzz_programs() {
  const char* v = get("TILEFUSE_FUZZ_PROGRAMS");
  if (!v) return 2000;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 10000000)
    throw std::invalid_argument(std::string("tilefuse: environment variable TILEFUSE_FUZZ_PROGRAMS must be 0 to 10000000, got '") + v + "'");
  return n;
}

std::optional<std::filesystem::path> tune_dir() {
  if (flag("TILEFUSE_DISABLE_DISK_CACHE")) return std::nullopt;
  if (const char* d = get("TILEFUSE_TUNE_DIR")) return std::filesystem::path(d);
  if (auto c = cache_dir()) return *c / "tuned";
  return std::nullopt;
}

bool update_goldens() { return flag("TILEFUSE_UPDATE_GOLDENS"); }

std::optional<std::filesystem::path> cache_dir() {
  if (flag("TILEFUSE_DISABLE_DISK_CACHE")) return std::nullopt;
  if (const char* d = get("TILEFUSE_CACHE_DIR")) return std::filesystem::path(d);
  if (const char* x = get("XDG_CACHE_HOME")) return std::filesystem::path(x) / "tilefuse";
  if (const char* h = get("HOME")) return std::filesystem::path(h) / ".cache" / "tilefuse";
  return std::nullopt;
}

}  // namespace tilefuse::knobs
