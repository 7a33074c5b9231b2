// Kernel cache: hit/miss counters, disk entries survive a cleared memory cache, damaged entries are
// detected and recompiled, keys separate everything that decides the CUBIN.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "backend/cache/cache.hpp"

using namespace tilefuse;
namespace fs = std::filesystem;

namespace {

const char* kSource = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }\n";

class Cache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilefuse-cache-test-" + std::to_string(std::random_device{}()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::vector<std::string> options_ = nvrtc::options_for("sm_90");
};

}  // namespace

TEST_F(Cache, CountsMissesAndHits) {
  cache::KernelCache c(dir_);
  auto a = c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().compiles, 1u);
  EXPECT_EQ(c.counters().disk_writes, 1u);
  auto b = c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().memory_hits, 1u);
  EXPECT_EQ(a.get(), b.get());
  c.clear_memory();
  auto d = c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().disk_hits, 1u);
  EXPECT_EQ(c.counters().compiles, 1u);
  EXPECT_EQ(d->cubin, a->cubin);
  EXPECT_EQ(d->registers, a->registers);
  EXPECT_EQ(d->log, a->log);
}

// A file where the directory should be: one warning naming the directory and why, then memory only.
TEST_F(Cache, UnusableDirectoryWarnsOnceAndKeepsWorking) {
  { std::ofstream(dir_) << "in the way"; }
  const fs::path inside = dir_ / "cache";
  cache::KernelCache c(inside);
  ::testing::internal::CaptureStderr();
  auto a = c.get(kSource, "k", options_);
  auto b = c.get(std::string(kSource) + "// another\n", "k", options_);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(a && b && !a->cubin.empty());
  EXPECT_NE(err.find("tilefuse: the kernel cache directory " + inside.string() + " cannot take entries"), std::string::npos) << err;
  EXPECT_NE(err.find("kept in memory only"), std::string::npos) << err;
  EXPECT_EQ(err.find("cannot take entries", err.find("cannot take entries") + 1), std::string::npos) << "warned twice:\n" << err;
  EXPECT_EQ(c.counters().disk_writes, 0u);
  EXPECT_EQ(c.counters().compiles, 2u);
  fs::remove(dir_);
}

TEST_F(Cache, SecondCacheOnTheSameDirectoryReadsTheDisk) {
  { cache::KernelCache(dir_).get(kSource, "k", options_); }
  cache::KernelCache c(dir_);
  c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().disk_hits, 1u);
  EXPECT_EQ(c.counters().compiles, 0u);
}

TEST_F(Cache, TruncatedEntryIsRecompiled) {
  cache::KernelCache c(dir_);
  auto a = c.get(kSource, "k", options_);
  const auto path = c.entry_path(cache::make_key(kSource, options_, nvrtc::version()));
  ASSERT_TRUE(fs::exists(path));
  fs::resize_file(path, fs::file_size(path) / 2);
  c.clear_memory();
  auto b = c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().corrupt, 1u);
  EXPECT_EQ(c.counters().compiles, 2u);
  EXPECT_EQ(b->cubin, a->cubin);
  c.clear_memory();
  c.get(kSource, "k", options_);  // the rewritten entry is whole again
  EXPECT_EQ(c.counters().disk_hits, 1u);
}

TEST_F(Cache, FlippedByteIsDetected) {
  cache::KernelCache c(dir_);
  c.get(kSource, "k", options_);
  const auto path = c.entry_path(cache::make_key(kSource, options_, nvrtc::version()));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(path) / 2));
    char ch = 0;
    f.read(&ch, 1);
    ch ^= 0x40;
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    f.write(&ch, 1);
  }
  c.clear_memory();
  c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().corrupt, 1u);
  EXPECT_EQ(c.counters().compiles, 2u);
}

TEST_F(Cache, GarbageFileIsDetected) {
  cache::KernelCache c(dir_);
  fs::create_directories(dir_);
  std::ofstream(c.entry_path(cache::make_key(kSource, options_, nvrtc::version()))) << "not a cache entry";
  c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().corrupt, 1u);
  EXPECT_EQ(c.counters().compiles, 1u);
}

TEST_F(Cache, NoDiskCacheWritesNothing) {
  cache::KernelCache c(std::nullopt);
  c.get(kSource, "k", options_);
  c.clear_memory();
  c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().compiles, 2u);
  EXPECT_EQ(c.counters().disk_writes, 0u);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(Cache, KeySeparatesSourceOptionsAndVersion) {
  const auto k = cache::make_key(kSource, options_, "13.0");
  EXPECT_EQ(k.size(), 32u);
  EXPECT_EQ(k, cache::make_key(kSource, options_, "13.0"));
  EXPECT_NE(k, cache::make_key(std::string(kSource) + " ", options_, "13.0"));
  EXPECT_NE(k, cache::make_key(kSource, nvrtc::options_for("sm_80"), "13.0"));
  EXPECT_NE(k, cache::make_key(kSource, options_, "13.1"));
  // Field boundaries matter: ("ab", "c") and ("a", "bc") differ.
  EXPECT_NE(cache::make_key("x", {"ab", "c"}, "v"), cache::make_key("x", {"a", "bc"}, "v"));
}

TEST_F(Cache, ConcurrentGetsCompileOnceAndAgree) {
  cache::KernelCache c(dir_);
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const nvrtc::Compiled>> got(16);
  for (int i = 0; i < 16; ++i) threads.emplace_back([&, i] { got[i] = c.get(kSource, "k", options_); });
  for (auto& t : threads) t.join();
  for (int i = 1; i < 16; ++i) EXPECT_EQ(got[i].get(), got[0].get());
  const auto n = c.counters();
  EXPECT_EQ(n.memory_hits + n.disk_hits + n.compiles, 16u);
  EXPECT_EQ(n.compiles, 1u);
  // No temporary files are left behind.
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().extension(), ".tfk") << e.path();
}

// Seeing and clearing the cache: entries by kernel, a damaged one flagged, clearing one kernel or all,
// and files that are not the cache's left alone.
TEST_F(Cache, ListsAndClearsEntriesByKernel) {
  const char* other = "extern \"C\" __global__ void j(float* p) { p[threadIdx.x] += 1.0f; }\n";
  cache::KernelCache c(dir_);
  c.get(kSource, "k", options_);
  c.get(other, "j", options_);
  std::ofstream(dir_ / "0123456789abcdef0123456789abcdef.tfk") << "damaged";
  std::ofstream(dir_ / "0123.tmp.1.2") << "left by a writer that died";
  std::ofstream(dir_ / "notes.txt") << "not the cache's";
  auto entries = c.disk_entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_FALSE(entries[0].valid);  // sorted by kernel: the damaged one (no kernel) first
  EXPECT_EQ(entries[1].kernel, "j");
  EXPECT_EQ(entries[2].kernel, "k");
  EXPECT_GT(entries[2].bytes, 1000u);
  EXPECT_EQ(c.counters().corrupt, 0u);  // listing is not reading for use
  EXPECT_EQ(c.memory_entries().size(), 2u);
  EXPECT_EQ(c.clear("j"), 1u);
  EXPECT_EQ(c.memory_entries().size(), 1u);
  ASSERT_EQ(c.disk_entries().size(), 2u);
  EXPECT_EQ(c.clear(), 3u);  // k, the damaged entry and the temporary file
  EXPECT_TRUE(c.disk_entries().empty());
  EXPECT_TRUE(c.memory_entries().empty());
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));
  c.get(kSource, "k", options_);
  EXPECT_EQ(c.counters().compiles, 3u);  // cleared means compiled again
}
