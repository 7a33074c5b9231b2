// SASS without a GPU: the disassembler's output is parsed into opcodes and source lines, instructions are
// counted by DSL statement, the disassembler is run on the CUBIN and its failures are clear errors. With a
// real nvdisasm (TILEFUSE_NVDISASM, or the CUDA toolkit's) a sample kernel is disassembled end to end.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "backend/codegen/cuda.hpp"
#include "backend/knobs/knobs.hpp"
#include "backend/nvrtc/sass.hpp"
#include "backend/runtime/program.hpp"
#include "tests/common/programs.hpp"

using namespace tilefuse;

namespace {

// What nvdisasm -c -gi prints (abridged): line notes name the innermost location first and the kernel's
// own line last; a note holds until the next one.
const char* const kDisassembly = R"(	.target	sm_90
//--------------------- .text.tilefuse_k --------------------------
tilefuse_k:
.text.tilefuse_k:
	//## File "/work/tilefuse_k.cu", line 4
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
	//## File "/usr/local/cuda/include/sm_32_intrinsics.hpp", line 259 inlined at "/work/tilefuse_k.cu", line 2
	//## File "/work/tilefuse_k.cu", line 2 inlined at "/work/tilefuse_k.cu", line 7
        /*0020*/              @!P1 LDG.E.EF.U16 R12, desc[UR4][R12.64] ;
	//## File "/work/tilefuse_k.cu", line 9
        /*0030*/                   FADD.FTZ R3, R2, R3 ;
        /*0040*/              @P0  STG.E desc[UR4][R4.64], R3 ;
	//## File "/usr/local/cuda/include/math.hpp", line 12
        /*0050*/                   EXIT ;
.L_x_0:
        /*0060*/                   BRA `(.L_x_0);
)";

// The CUDA those lines point into: a helper (line 2), the kernel from line 3, statements at 6 and 8.
const char* const kCuda =
    "__device__ float helper(float x)\n"     // 1
    "{ return x; }\n"                         // 2
    "extern \"C\" __global__ void k() {\n"    // 3
    "  const int tid = threadIdx.x;\n"        // 4
    "  // %0 = param 0 \"x\" : ptr<bf16>\n"   // 5
    "  // %1 = load %0 : bf16\n"              // 6
    "  float v1 = helper(0.0f);\n"            // 7
    "  // store %0, %1\n"                     // 8
    "  *p = v1;\n"                            // 9
    "}\n";                                    // 10

std::string write_script(const std::string& name, const std::string& body) {
  const auto path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::ofstream(path) << "#!/bin/sh\n" << body;
  ::chmod(path.c_str(), 0755);
  return path.string();
}

}  // namespace

TEST(Sass, ParsesOpcodesAndTheKernelsOwnLines) {
  const auto code = nvrtc::parse_sass(kDisassembly, "tilefuse_k.cu");
  ASSERT_EQ(code.size(), 7u);
  EXPECT_EQ(code[0].opcode, "LDC");
  EXPECT_EQ(code[0].line, 4);
  EXPECT_EQ(code[1].line, 4) << "a line note holds until the next";
  EXPECT_EQ(code[2].opcode, "LDG") << "the predicate and the modifiers are not part of the opcode";
  EXPECT_EQ(code[2].text, "@!P1 LDG.E.EF.U16 R12, desc[UR4][R12.64] ;");
  EXPECT_EQ(code[2].line, 7) << "through every inlined call to the kernel's own line";
  EXPECT_EQ(code[3].opcode, "FADD");
  EXPECT_EQ(code[4].opcode, "STG");
  EXPECT_EQ(code[4].line, 9);
  EXPECT_EQ(code[5].line, 0) << "a line of another file";
  EXPECT_EQ(code[6].opcode, "BRA");
  const auto ops = nvrtc::opcode_counts(code);
  ASSERT_EQ(ops.size(), 7u);
  EXPECT_EQ(ops[0], (std::pair<std::string, int>{"BRA", 1})) << "equal counts in the order of their names";
  EXPECT_TRUE(nvrtc::parse_sass("", "k.cu").empty());
}

TEST(Sass, CountsInstructionsByStatement) {
  const auto code = nvrtc::parse_sass(kDisassembly, "tilefuse_k.cu");
  const auto by = instructions_by_statement(kCuda, code);
  ASSERT_EQ(by.size(), 4u);
  EXPECT_EQ(by[0], (std::pair<std::string, int>{"(kernel entry)", 2}));
  EXPECT_EQ(by[1], (std::pair<std::string, int>{"%1 = load %0 : bf16", 1})) << "line 7 lies under the load's comment";
  EXPECT_EQ(by[2], (std::pair<std::string, int>{"store %0, %1", 2}));
  EXPECT_EQ(by[3], (std::pair<std::string, int>{"(no source line)", 2}));
}

// The whole-run path leaves out what lies in `else` blocks (nested ones too, and the line that closes
// them) and what follows the last EXIT; loops and the rest count once.
TEST(Sass, CountsThePathOfAThreadWhoseRunsAreWhole) {
  const char* const cuda =
      "extern \"C\" __global__ void k() {\n"             // 1
      "  for (int e0 = 0; e0 < 8; e0 += 4) {\n"            // 2
      "    if (m[e0] && m[e0 + 1]) {\n"                    // 3
      "      tf_load_vec(p, raw);\n"                       // 4
      "    } else {\n"                                     // 5
      "      for (int e = e0; e < e0 + 4; ++e) {\n"        // 6
      "        if (m[e]) x[e] = p[e]; else { x[e] = 0; }\n"  // 7
      "      }\n"                                          // 8
      "    }\n"                                            // 9
      "  }\n"                                              // 10
      "  tf_elsewhere(x);  // not an else\n"               // 11
      "}\n";                                               // 12
  std::vector<nvrtc::SassInstruction> code;
  for (int line : {1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 11, 0, 10})
    code.push_back({"", line == 10 ? "EXIT" : "IADD3", line});
  code.push_back({"", "FFMA", 4});  // after the last EXIT: a slow path
  code.push_back({"", "EXIT", 9});
  code.push_back({"", "BRA", 3});
  // Up to the last EXIT: lines 1-4 (five), 11, the one without a line, the EXIT at 10 and the FFMA; lines
  // 5-9 are the else block's.
  EXPECT_EQ(whole_run_instructions(cuda, code), 8 + 1);
  code.pop_back();
  code.pop_back();
  code.pop_back();
  EXPECT_EQ(whole_run_instructions(cuda, code), 8) << "the slow path after the last EXIT";
  EXPECT_EQ(whole_run_instructions("", code), static_cast<int>(code.size())) << "no source: every line counts";
}

TEST(Sass, RunsTheDisassemblerOnTheCubin) {
  const std::vector<char> cubin{'\x7f', 'E', 'L', 'F', '\0', 'x', '\n'};
  const auto expected = std::filesystem::temp_directory_path() / ("tilefuse-sass-expected-" + std::to_string(::getpid()));
  std::ofstream(expected, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  // The fake prints what it was given, and fails unless the file it was handed holds the CUBIN.
  const std::string fake = write_script("tilefuse-fake-nvdisasm",
                                        "for a in \"$@\"; do last=\"$a\"; done\n"
                                        "cmp -s \"$last\" '" + expected.string() + "' || { echo 'not the cubin' >&2; exit 3; }\n"
                                        "echo \"args: $1 $2\"\n");
  EXPECT_EQ(nvrtc::disassemble(cubin, true, {"/no/such/nvdisasm", fake}), "args: -c -gi\n") << "a missing path is skipped";
  EXPECT_EQ(nvrtc::disassemble(cubin, false, {fake}).substr(0, 9), "args: -c ");
  try {
    nvrtc::disassemble(std::vector<char>{'x'}, false, {fake});
    ADD_FAILURE() << "a failing disassembler was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("failed (exit status 3)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not the cubin"), std::string::npos) << "its output is part of the error";
  }
  try {
    nvrtc::disassemble(cubin, false, {"/no/such/nvdisasm", "tilefuse-no-such-tool"});
    ADD_FAILURE() << "no disassembler, no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tried /no/such/nvdisasm, tilefuse-no-such-tool"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TILEFUSE_NVDISASM"), std::string::npos) << e.what();
  }
  std::filesystem::remove(fake);
  std::filesystem::remove(expected);
}

// In a child process (a death test), so that the variables it sets do not outlive it.
TEST(Sass, TheDisassemblerKnobTriesTheToolkitThenThePath) {
  auto check = [](const std::vector<std::string>& expected, const char* what) {
    if (knobs::nvdisasm() == expected) return;
    std::fprintf(stderr, "unexpected tools: %s\n", what);
    std::exit(1);
  };
  EXPECT_EXIT(
      {
        ::setenv("TILEFUSE_NVDISASM", "/opt/x/nvdisasm", 1);
        ::setenv("CUDA_HOME", "/opt/cuda", 1);
        check({"/opt/x/nvdisasm"}, "TILEFUSE_NVDISASM alone when set");
        ::unsetenv("TILEFUSE_NVDISASM");
        check({"/opt/cuda/bin/nvdisasm", "/usr/local/cuda/bin/nvdisasm", "nvdisasm"}, "CUDA_HOME's, the default toolkit's, PATH's");
        ::setenv("CUDA_HOME", "/usr/local/cuda", 1);
        check({"/usr/local/cuda/bin/nvdisasm", "nvdisasm"}, "each once");
        ::unsetenv("CUDA_HOME");
        check({"/usr/local/cuda/bin/nvdisasm", "nvdisasm"}, "without CUDA_HOME");
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// End to end where a disassembler is installed: the softmax kernel's every instruction is disassembled
// (as many as its code section holds), its loads fall under its load statement, and nearly all have a line.
TEST(Sass, DisassemblesASampleKernel) {
  const Program& p = test::softmax_program(ir::DType::f32, 4096);
  Inspection i;
  i.kernel = p.name();
  i.arch = "sm_90";
  i.compiled = p.compile(Specialization{{16, 16, 4, 4}}, "sm_90");
  std::string text;
  try {
    text = i.sass();
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("no disassembler") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
  EXPECT_NE(text.find("==== SASS for sm_90: " + std::to_string(i.compiled.sass_instructions) + " instructions ===="), std::string::npos)
      << text.substr(0, 2000);
  EXPECT_NE(text.find(" LDG "), std::string::npos) << text.substr(0, 2000);
  const auto code = nvrtc::parse_sass(text.substr(text.find("==== disassembly ====")), codegen::kernel_symbol(p.ir()) + ".cu");
  int loads = 0, loads_under_load = 0, unplaced = 0;
  const auto by = instructions_by_statement(i.compiled.source, code);
  for (const auto& [statement, n] : by)
    if (statement == "(no source line)") unplaced = n;
  for (const auto& c : code) {
    if (c.opcode != "LDG") continue;
    ++loads;
    const auto one = instructions_by_statement(i.compiled.source, {c});
    loads_under_load += one.size() == 1 && one[0].first.find("= load ") != std::string::npos;
  }
  EXPECT_GT(loads, 0);
  EXPECT_EQ(loads_under_load, loads) << "a global load placed under another statement";
  EXPECT_LT(unplaced, i.compiled.sass_instructions / 10) << "most instructions have a line";
  const int whole = whole_run_instructions(i.compiled.source, code);
  EXPECT_GT(whole, 0);
  EXPECT_LT(whole, i.compiled.sass_instructions) << "a masked load's lanes one by one are off the whole-run path";
  EXPECT_NE(text.find("on the path of a thread whose runs lie wholly in their masks: " + std::to_string(whole)), std::string::npos);
}
