// The machine code (SASS) of a CUBIN as NVIDIA's disassembler prints it, parsed into instructions that
// each know their opcode and the line of the CUDA source ptxas assigned them to. The row kernels were
// measured bound by instructions issued; this is how one sees, without a GPU, which statements they go to.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tilefuse::nvrtc {

/// Runs the disassembler on `cubin` and returns what it prints: the code sections only (`-c`), with the
/// source line of each instruction (`-gi`) when `line_info` (the CUBIN must then be compiled with
/// `-lineinfo`, which leaves the code as it is). `tools` are the programs to try in order (knobs::nvdisasm()
/// by default): an absolute path or a name looked up on PATH. Throws std::runtime_error naming the tools
/// tried when none runs, and the tool's output when it fails.
std::string disassemble(const std::vector<char>& cubin, bool line_info, const std::vector<std::string>& tools);
std::string disassemble(const std::vector<char>& cubin, bool line_info);

/// One instruction of a disassembly.
struct SassInstruction {
  std::string text;    ///< as printed, without its offset: "@P0 LDG.E.128 R4, desc[UR4][R2.64] ;"
  std::string opcode;  ///< the operation without predicate or modifiers: "LDG"
  /// The line of `source_file` the instruction was compiled from, through every inlined call to the
  /// outermost one (0 when the disassembly names no line in that file for it).
  int line = 0;
};

/// The instructions of `disassembly` (disassemble's output) in order; lines count only where they name
/// `source_file` (NVRTC's name of the program, "<kernel symbol>.cu"), and carry over to the following
/// instructions until the next line note, as the disassembler prints them.
std::vector<SassInstruction> parse_sass(const std::string& disassembly, const std::string& source_file);

/// How many of `code`'s instructions each opcode has, most first (ties by name).
std::vector<std::pair<std::string, int>> opcode_counts(const std::vector<SassInstruction>& code);

}  // namespace tilefuse::nvrtc
