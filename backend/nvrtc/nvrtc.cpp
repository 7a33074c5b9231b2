// NVRTC (see nvrtc.hpp): CUDA C++ source to CUBIN or PTX with the options tilefuse compiles with, the log
// and numbered source on failure, and the ptxas -v report parsed into registers, spills and stack.
#include "backend/nvrtc/nvrtc.hpp"

#include <nvrtc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <regex>
#include <sstream>

namespace tilefuse::nvrtc {

namespace {

void check(nvrtcResult r, const char* call, const std::string& kernel) {
  if (r != NVRTC_SUCCESS)
    throw std::runtime_error("tilefuse nvrtc: " + std::string(call) + " failed for kernel '" + kernel +
                             "': " + nvrtcGetErrorString(r));
}

struct ProgramHandle {
  nvrtcProgram p = nullptr;
  ~ProgramHandle() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

// Compiles and returns the program handle with its log; throws CompileError on failure.
std::string build(ProgramHandle& prog, const std::string& source, const std::string& kernel,
                  const std::vector<std::string>& options) {
  check(nvrtcCreateProgram(&prog.p, source.c_str(), (kernel + ".cu").c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram", kernel);
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog.p, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(prog.p, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog.p, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (r != NVRTC_SUCCESS) throw CompileError(kernel, log, source);
  return log;
}

}  // namespace

CompileError::CompileError(const std::string& kernel, const std::string& log, const std::string& source)
    : std::runtime_error("tilefuse nvrtc: kernel '" + kernel + "' failed to compile:\n" + log +
                         "\n--- generated source ---\n" + numbered(source)),
      log_(log) {}

std::vector<std::string> options_for(const std::string& arch) {
  // -arch=sm_XX makes NVRTC emit a CUBIN for that GPU (no JIT at load); -v asks ptxas for the
  // register/spill report; --std=c++17 keeps the generated code free of newer language needs.
  // --no-cache: NVRTC 12.9+ keeps its own cache, and a hit there drops the ptxas report; tilefuse
  // caches the CUBIN itself, keyed on everything that decides it.
  std::vector<std::string> o = {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v", "-default-device"};
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  if (major > 12 || (major == 12 && minor >= 9)) o.push_back("--no-cache");
  return o;
}

Compiled compile(const std::string& source, const std::string& kernel, const std::vector<std::string>& options) {
  ProgramHandle prog;
  Compiled out;
  out.kernel = kernel;
  out.options = options;
  out.log = build(prog, source, kernel, options);
  std::size_t size = 0;
  check(nvrtcGetCUBINSize(prog.p, &size), "nvrtcGetCUBINSize", kernel);
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(prog.p, out.cubin.data()), "nvrtcGetCUBIN", kernel);
  parse_resource_report(out.log, out);
  return out;
}

std::string ptx(const std::string& source, const std::string& kernel, const std::string& arch) {
  std::string virt = arch;
  if (virt.rfind("sm_", 0) == 0) virt = "compute_" + virt.substr(3);
  ProgramHandle prog;
  build(prog, source, kernel, {"--gpu-architecture=" + virt, "--std=c++17", "-default-device"});
  std::size_t size = 0;
  check(nvrtcGetPTXSize(prog.p, &size), "nvrtcGetPTXSize", kernel);
  std::string text(size, '\0');
  check(nvrtcGetPTX(prog.p, text.data()), "nvrtcGetPTX", kernel);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::string version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string numbered(const std::string& source) {
  std::istringstream in(source);
  std::ostringstream out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%4d | ", n);
    out << prefix << line << "\n";
  }
  return out.str();
}

int sass_instructions(const std::vector<char>& cubin, const std::string& kernel) {
  // ELF64, little-endian: the section headers' offset, entry size and count, and the index of the section
  // that holds their names, are at fixed places of the file header.
  auto read = [&](std::size_t at, std::size_t bytes) -> std::uint64_t {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < bytes; ++k) v |= std::uint64_t{static_cast<unsigned char>(cubin[at + k])} << (8 * k);
    return v;
  };
  if (cubin.size() < 64 || std::memcmp(cubin.data(), "\x7f" "ELF", 4) != 0 || cubin[4] != 2 || cubin[5] != 1) return -1;
  const std::uint64_t shoff = read(0x28, 8), shentsize = read(0x3a, 2), shnum = read(0x3c, 2), shstrndx = read(0x3e, 2);
  if (shentsize < 64 || shstrndx >= shnum || shoff + shnum * shentsize > cubin.size()) return -1;
  const std::uint64_t names = read(shoff + shstrndx * shentsize + 0x18, 8);  // the name table's file offset
  const std::string want = ".text." + kernel;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const std::uint64_t header = shoff + i * shentsize, name = names + read(header, 4);
    if (name + want.size() >= cubin.size() || std::memcmp(cubin.data() + name, want.c_str(), want.size() + 1) != 0) continue;
    return static_cast<int>(read(header + 0x20, 8) / 16);  // sh_size
  }
  return -1;
}

void parse_resource_report(const std::string& log, Compiled& out) {
  std::smatch m;
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex spills(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  if (std::regex_search(log, m, regs)) out.registers = std::stoi(m[1]);
  if (std::regex_search(log, m, spills)) {
    out.stack_bytes = std::stoi(m[1]);
    out.spill_stores = std::stoi(m[2]);
    out.spill_loads = std::stoi(m[3]);
  }
}

}  // namespace tilefuse::nvrtc
