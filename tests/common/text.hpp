// Text helpers for tests that look into generated code.
#pragma once

#include <cstddef>
#include <string>

namespace tilefuse::test {

/// How many times `what` occurs in `s` (overlapping occurrences counted).
inline std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace tilefuse::test
