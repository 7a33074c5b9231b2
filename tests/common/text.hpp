// Text helpers for tests: what generated code contains, and what an error says.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <string>

namespace tilefuse::test {

/// How many times `what` occurs in `s` (overlapping occurrences counted).
inline std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

/// The message of the exception `f` throws, or "" when it throws none.
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace tilefuse::test
