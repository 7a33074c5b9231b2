// Every README example is built and run by the tests: the README's tile program must be, line for line,
// the one examples/quickstart.cpp compiles (ctest runs it as example_quickstart).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string between(const std::string& text, const std::string& begin, const std::string& end) {
  const auto b = text.find(begin);
  if (b == std::string::npos) return "";
  const auto start = text.find('\n', b) + 1;
  const auto e = text.find(end, start);
  if (e == std::string::npos) return "";
  return text.substr(start, text.rfind('\n', e) + 1 - start);
}

}  // namespace

TEST(Readme, TileProgramIsTheQuickstartExample) {
  const std::string root = TILEFUSE_SOURCE_DIR;
  const std::string example = between(read(root + "/examples/quickstart.cpp"), "// readme-begin", "// readme-end");
  const std::string readme = between(read(root + "/README.md"), "```cpp", "```");
  ASSERT_FALSE(example.empty());
  EXPECT_EQ(readme, example);
}

TEST(Readme, CommandsMatchCi) {
  const std::string root = TILEFUSE_SOURCE_DIR;
  const std::string ci = read(root + "/.ci/run");
  const std::string readme = read(root + "/README.md");
  // The test command CI runs is the one the README gives.
  const std::string test_command = "bash .ci/setup && cmake -S . -B build && cmake --build build -j --target check";
  EXPECT_NE(readme.find(test_command), std::string::npos);
  EXPECT_NE(ci.find(test_command), std::string::npos);
}
