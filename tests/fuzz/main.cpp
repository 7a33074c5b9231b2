// tilefuse_fuzz: the differential fuzzer's driver. Generates --programs cases from --seed on, and for
// each verifies and optimizes the program, generates and NVRTC-compiles the CUDA of the exact
// specialization its launch needs, runs it in the interpreter, and (with a GPU, unless --cpu) runs it
// on the GPU and compares (fuzz::check_on_gpu). An unexplained disagreement is shrunk to the fewest stores
// that still show it and printed with its seed and IR; the run ends with counts per program family. Exit
// status 1 on any failure.
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
  constexpr int kFamilies = 4;
  struct Counts {
    std::atomic<long> generated{0}, compiled{0}, interpreted{0}, overflowed{0}, compared{0}, overflow{0}, division{0}, ordering{0}, zeros{0}, casts{0}, failed{0};
  } counts[kFamilies];
  std::atomic<long> next{0};
  std::mutex print;
  auto worker = [&] {
    for (long k; (k = next++) < programs;) {
      const std::uint64_t s = seed + static_cast<std::uint64_t>(k);
      Counts& n = counts[static_cast<int>(fuzz::family_of(s))];
      ++n.generated;
      std::string failure;
      try {
        fuzz::Case c = fuzz::generate(s);
        Program p(c.fn, c.options);
        const std::vector<std::uint64_t> fake(c.buffers.size(), std::uint64_t{1} << 40);
        p.compile(p.specialize(LaunchConfig{c.grid, Backend::gpu}, c.arguments(fake, false)), "sm_90");
        ++n.compiled;
        std::uint64_t wrapped = 0;
        const fuzz::Memory want = fuzz::run_interpreter(c, p, &wrapped);
        ++n.interpreted;
        n.overflowed += wrapped > 0;
        if (gpu) {
          const fuzz::Outcome o = fuzz::check_on_gpu(c, p, want, wrapped);
          ++n.compared;
          n.overflow += o.verdict == fuzz::Verdict::overflow;
          n.division += o.verdict == fuzz::Verdict::division;
          n.ordering += o.verdict == fuzz::Verdict::ordering;
          n.zeros += o.verdict == fuzz::Verdict::zeros;
          n.casts += o.verdict == fuzz::Verdict::casts;
          if (o.verdict == fuzz::Verdict::failed) {
            const fuzz::Case small = fuzz::shrink(c, [](const fuzz::Case& t) {
              Program q(t.fn, t.options);
              return fuzz::check_on_gpu(t, q).verdict == fuzz::Verdict::failed;
            });
            failure = o.difference + "\nshrunk program:\n" + ir::print(small.fn);
          }
        }
      } catch (const driver::DriverError& e) {
        // A fault on the device (a misaligned or illegal address) ends the CUDA context for the whole
        // process: the cases running now are suspects; stop, so that later ones are not blamed.
        failure = "case " + std::to_string(s) + " (or another case running at the same time; run each alone with --seed S "
                  "--programs 1): " + e.what();
        next = programs;
      } catch (const std::exception& e) {
        failure = "case " + std::to_string(s) + ": " + e.what();
      }
      if (!failure.empty()) {
        ++n.failed;
        std::lock_guard lock(print);
        std::printf("FAIL (%s) %s\n", fuzz::family_name(fuzz::family_of(s)), failure.c_str());
      }
    }
  };
  std::vector<std::thread> pool;
  // One GPU: the GPU runs themselves are serialized by the device; compiling is what the threads spread.
  for (long t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  long failed = 0;
  std::printf("%-9s %9s %9s %11s %9s %9s %9s %9s %9s %9s %9s %9s\n", "family", "programs", "compiled", "interpreted", "wrapped",
              "compared", "overflow", "division", "ordering", "zeros", "casts", "FAILED");
  for (int f = 0; f < kFamilies; ++f) {
    const Counts& n = counts[f];
    std::printf("%-9s %9ld %9ld %11ld %9ld %9ld %9ld %9ld %9ld %9ld %9ld %9ld\n", fuzz::family_name(static_cast<fuzz::Family>(f)),
                n.generated.load(), n.compiled.load(), n.interpreted.load(), n.overflowed.load(), n.compared.load(), n.overflow.load(),
                n.division.load(), n.ordering.load(), n.zeros.load(), n.casts.load(), n.failed.load());
    failed += n.failed;
  }
  std::printf("(compiled: for sm_90; wrapped: the interpreter wrapped a signed-integer result; overflow, division, ordering, "
              "zeros, casts: differed, explained by that signed overflow, by div.full.f32 (the same program agrees with precise division), "
              "by the order of float sums (each differing output also changes in the interpreter with its sums reordered), by the "
              "sign of a zero from a max or min of +0 and -0 (each differing output also changes with the other zero chosen), or by "
              "a truncating cast of a float within its bound (each differing element lies between the interpreter's runs with "
              "float-to-integer casts nudged by 2^-16 down and up); FAILED: unexplained)\n");
  return failed ? 1 : 0;
}
