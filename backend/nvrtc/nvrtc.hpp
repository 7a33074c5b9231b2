// CUDA C++ source -> CUBIN through NVRTC, keeping the log and the ptxas resource report.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace tilefuse::nvrtc {

/// A failed compilation: what() holds the kernel name, the NVRTC log and the source with line numbers.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& kernel, const std::string& log, const std::string& source);
  /// The NVRTC log.
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

/// A compiled kernel: CUBIN for one architecture, the options used and the ptxas -v report.
struct Compiled {
  std::string kernel;                ///< the kernel's symbol
  std::vector<char> cubin;
  std::string log;                   ///< NVRTC log including ptxas info lines
  std::vector<std::string> options;  ///< exactly the options passed to NVRTC
  int registers = -1;                ///< registers per thread (-1 when the report lacks it)
  int spill_stores = 0;              ///< bytes of spill stores
  int spill_loads = 0;               ///< bytes of spill loads
  int stack_bytes = 0;               ///< bytes of stack frame
};

/// The NVRTC options tilefuse compiles with for `arch` (e.g. "sm_90").
std::vector<std::string> options_for(const std::string& arch);

/// Compiles `source` (which defines extern "C" kernel `kernel`) with `options`; throws CompileError.
Compiled compile(const std::string& source, const std::string& kernel, const std::vector<std::string>& options);

/// PTX for `source` at the virtual architecture matching `arch` (sm_90 -> compute_90), for inspection.
std::string ptx(const std::string& source, const std::string& kernel, const std::string& arch);

/// NVRTC's version, "major.minor".
std::string version();

/// `source` with each line prefixed by its number, as compile errors show it.
std::string numbered(const std::string& source);

/// Instructions in kernel `kernel`'s code in `cubin` (sm_70 and later encode each in 16 bytes): the size
/// of its ELF section `.text.<kernel>` over 16. Counted as written, not as executed: a loop's body once,
/// every branch's both sides. -1 when the CUBIN is not a 64-bit ELF or has no such section.
int sass_instructions(const std::vector<char>& cubin, const std::string& kernel);

/// Parses a ptxas -v report into `out`'s registers, spills and stack.
void parse_resource_report(const std::string& log, Compiled& out);

}  // namespace tilefuse::nvrtc
