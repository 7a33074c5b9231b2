// The layout's rules, checked on the source tree: every environment variable is read in backend/knobs,
// the DSL and the sample kernels reach the driver only through the runtime, no kernel family includes
// another, codegen never calls the driver, and every source file opens with a comment saying what it is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Source {
  std::string path;  // relative to the repository root
  std::string text;
};

// Every C++ and CUDA source under the given top-level folders.
std::vector<Source> sources(std::initializer_list<const char*> folders) {
  const fs::path root = TILEFUSE_SOURCE_DIR;
  std::vector<Source> out;
  for (const char* folder : folders)
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".hpp" && ext != ".cpp" && ext != ".cuh")) continue;
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back({fs::relative(entry.path(), root).generic_string(), ss.str()});
    }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST(Structure, OnlyTheKnobsModuleReadsTheEnvironment) {
  for (const auto& s : sources({"dsl", "backend", "kernels", "bench", "examples", "tests"})) {
    if (s.path == "backend/knobs/knobs.cpp" || s.path == "tests/nodevice/test_structure.cpp") continue;
    EXPECT_EQ(s.text.find("getenv("), std::string::npos) << s.path << " reads the environment (backend/knobs does that)";
  }
}

TEST(Structure, TheDslAndTheKernelsReachTheDriverThroughTheRuntime) {
  for (const auto& s : sources({"dsl", "kernels", "backend/codegen", "backend/passes", "backend/ir"}))
    EXPECT_EQ(s.text.find("#include \"backend/driver/"), std::string::npos) << s.path << " includes the driver layer";
}

TEST(Structure, NoKernelFamilyIncludesAnother) {
  const char* families[] = {"softmax", "layernorm", "epilogue", "attention", "matmul"};
  for (const auto& s : sources({"kernels"}))
    for (const char* family : families) {
      const std::string own = std::string("kernels/") + family + "/";
      if (starts_with(s.path, own)) continue;
      EXPECT_EQ(s.text.find("#include \"" + own), std::string::npos) << s.path << " includes " << own;
    }
}

TEST(Structure, EverySourceFileOpensWithItsPurpose) {
  for (const auto& s : sources({"dsl", "backend", "kernels", "bench", "examples", "tests"}))
    EXPECT_TRUE(starts_with(s.text, "//")) << s.path << " does not open with a comment saying what it is";
}
