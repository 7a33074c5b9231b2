// The device tier's fixture: every test skips cleanly (GTEST_SKIP) when there is no GPU, and draws fresh
// seeds that it prints with any failure so that a failing input can be replayed.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "backend/driver/driver.hpp"

namespace tilefuse::test {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!driver::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  }
  /// A fresh 64-bit seed per check.
  static std::uint64_t fresh_seed() { return (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}(); }
};

}  // namespace tilefuse::test
