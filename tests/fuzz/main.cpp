// tilefuse_fuzz: the differential fuzzer's driver. Generates --programs cases from --seed on, and for
// each verifies and optimizes the program, generates and NVRTC-compiles the CUDA of the exact
// specialization its launch needs, runs it in the interpreter, and (with a GPU, unless --cpu) runs it
// on the GPU and compares. A disagreement is shrunk to the fewest stores that still show it and printed
// with its seed and IR; the run ends with counts. Exit status 1 on any failure.
//
//   tilefuse_fuzz [--programs 10000] [--seed 1] [--threads 16] [--cpu]
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/driver/driver.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace tilefuse;

int main(int argc, char** argv) {
  long programs = 10000, threads = std::max(1u, std::thread::hardware_concurrency());
  std::uint64_t seed = 1;
  bool cpu_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cpu") cpu_only = true;
    else if (a == "--programs" && i + 1 < argc) programs = std::stol(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::stoull(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::stol(argv[++i]);
    else {
      std::fprintf(stderr, "tilefuse_fuzz: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  std::string why;
  const bool gpu = !cpu_only && driver::available(&why);
  std::printf("tilefuse_fuzz: %ld programs from seed %llu, %s\n", programs, static_cast<unsigned long long>(seed),
              gpu ? "interpreter vs GPU" : ("CPU only: verify, compile, interpret" + (cpu_only ? std::string() : " (" + why + ")")).c_str());
  std::atomic<long> next{0}, compiled{0}, interpreted{0}, compared{0}, failed{0}, overflowed{0}, explained{0};
  std::mutex print;
  auto worker = [&] {
    for (long k; (k = next++) < programs;) {
      const std::uint64_t s = seed + static_cast<std::uint64_t>(k);
      std::string failure;
      try {
        fuzz::Case c = fuzz::generate(s);
        Program p(c.fn, c.options);
        const std::vector<std::uint64_t> fake(c.buffers.size(), std::uint64_t{1} << 40);
        p.compile(p.specialize(LaunchConfig{c.grid, Backend::gpu}, c.arguments(fake, false)), "sm_90");
        ++compiled;
        std::uint64_t wrapped = 0;
        const fuzz::Memory want = fuzz::run_interpreter(c, p, &wrapped);
        ++interpreted;
        overflowed += wrapped > 0;
        if (gpu) {
          failure = fuzz::compare(c, want, fuzz::run_gpu(c, p));
          ++compared;
          if (!failure.empty() && wrapped > 0) {
            // Explained: signed overflow is undefined in the generated CUDA (C++), wrapped in the interpreter.
            ++explained;
            failure.clear();
          }
          if (!failure.empty()) {
            const fuzz::Case small = fuzz::shrink(c, [](const fuzz::Case& t) {
              Program q(t.fn, t.options);
              return !fuzz::compare(t, fuzz::run_interpreter(t, q), fuzz::run_gpu(t, q)).empty();
            });
            failure += "\nshrunk program:\n" + ir::print(small.fn);
          }
        }
      } catch (const std::exception& e) {
        failure = "case " + std::to_string(s) + ": " + e.what();
      }
      if (!failure.empty()) {
        ++failed;
        std::lock_guard lock(print);
        std::printf("FAIL %s\n", failure.c_str());
      }
    }
  };
  std::vector<std::thread> pool;
  // One GPU: the GPU runs themselves are serialized by the device; compiling is what the threads spread.
  for (long t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  std::printf("tilefuse_fuzz: %ld programs, %ld compiled for sm_90, %ld interpreted (%ld with signed-integer overflow), %ld compared "
              "with the GPU, %ld disagreed where signed overflow explains it, %ld failed (unexplained)\n",
              programs, compiled.load(), interpreted.load(), overflowed.load(), compared.load(), explained.load(), failed.load());
  return failed ? 1 : 0;
}
