// Every README example is built and run by the tests: the README's tile program must be, line for line,
// the one examples/quickstart.cpp compiles (ctest runs it as example_quickstart).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "backend/knobs/knobs.hpp"

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

TEST(Readme, TuningSnippetIsTheTuneExamples) {
  const std::string root = TILEFUSE_SOURCE_DIR;
  const std::string example = between(read(root + "/examples/tune.cpp"), "// readme-tune-begin", "// readme-tune-end");
  // The example's lines are indented two spaces inside their function.
  std::string unindented;
  std::istringstream lines(example);
  for (std::string line; std::getline(lines, line);) unindented += (line.rfind("  ", 0) == 0 ? line.substr(2) : line) + "\n";
  const std::string readme = read(root + "/README.md");
  const auto section = readme.find("### Tuning");
  ASSERT_NE(section, std::string::npos);
  ASSERT_FALSE(unindented.empty());
  EXPECT_EQ(between(readme.substr(section), "```cpp", "```"), unindented);
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

TEST(Readme, EnvironmentTableIsTheKnobsTable) {
  // Every environment variable tilefuse reads is in backend/knobs; the README lists exactly those, in order,
  // as | `NAME` | values | effect |.
  const std::string readme = read(std::string(TILEFUSE_SOURCE_DIR) + "/README.md");
  const auto start = readme.find("\n## Environment");
  ASSERT_NE(start, std::string::npos);
  const std::string section = readme.substr(start, readme.find("\n## ", start + 1) - start);
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(section);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    for (std::size_t at = 2; at < line.size();) {
      const auto bar = line.find(" |", at);
      cells.push_back(line.substr(at, bar - at));
      at = bar + 3;
    }
    rows.push_back(cells);
  }
  const auto knobs = tilefuse::knobs::table();
  ASSERT_EQ(rows.size(), knobs.size()) << section;
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 3u) << section;
    EXPECT_EQ(rows[i][0], std::string("`") + knobs[i].name + "`");
    EXPECT_EQ(rows[i][1], knobs[i].values) << knobs[i].name;
    EXPECT_EQ(rows[i][2], knobs[i].effect) << knobs[i].name;
  }
}
