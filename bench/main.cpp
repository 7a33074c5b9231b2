// The bench's entry point: Google Benchmark over every family (softmax.cpp, layernorm.cpp, epilogue.cpp)
// and the host costs (host.cpp), then the results table (the README's performance table is built from it).
//
//   tilefuse_bench [--smoke] [--table results.md] [--sweep N [--sweep-seed S]] [tuning flags]
//                  [google benchmark flags]
//
// --sweep N adds N generated shapes for softmax_auto and layernorm_auto (bench/sweep.cpp; filter them with
// --benchmark_filter=sweep) and prints their x-copy distribution at the end.
// Tuning flags set kernels::Tuning for every launch (unset: each kernel's rule; bench/sweep_rows.sh sweeps
// them): --row-elements N, --resident-threads N, --staged-warps N, --stage-bytes N, --carveout P,
// --looped-programs-per-sm K, --looped-cluster K, --staged-cluster K, --looped-groups K, --split-programs-per-sm K, --split-combine-rows K,
// --split-group-bytes N, and the 0|1 switches --help lists.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "backend/nvrtc/nvrtc.hpp"
#include "bench/harness.hpp"
#include "bench/sweep.hpp"
#include "kernels/rows/rules.hpp"

namespace tilefuse::bench {

namespace {

void write_table(const std::string& path) {
  std::ostringstream os;
  // The peak DRAM bandwidth the driver reports (what the rules read: Target::memory_bandwidth), or that it
  // reports none.
  auto bandwidth = [] {
    const std::int64_t b = driver::device().memory_bandwidth;
    if (b <= 0) return std::string(", peak DRAM bandwidth not reported");
    char text[48];
    std::snprintf(text, sizeof text, ", %.2f TB/s peak DRAM", static_cast<double>(b) / 1e12);
    return std::string(text);
  };
  std::string device = run().gpu_skip.empty() ? driver::device().name + " (" + driver::device().arch() + ", " +
                                                std::to_string(driver::device().sm_count) + " SMs" + bandwidth() + ")"
                                          : "no GPU (" + run().gpu_skip + ")";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  os << "Device: " << device << "; date " << date << "; NVRTC " << nvrtc::version()
     << ". Medians of CUDA-event-timed runs"
     << (bench::burst_launches() > 1 ? " (rows, epilogues and the sweep: each run a burst of " + std::to_string(bench::burst_launches()) +
                                          " launches between one pair of events, divided by it; matrix kernels: each launch between its own)"
                                    : std::string(" (each launch between its own pair of events)"))
     << ", inputs rotated past the L2; GB/s counts bytes read + written "
        "(the unfused row counts its own 4x bytes; LayerNorm its w and b and each row's mean and rstd too); x copy = device-copy time of the same bytes / this time.\n\n";
  os << "| kernel | impl | shape | dtype | time (us) | GB/s | x copy | note |\n|---|---|---|---|---:|---:|---:|---|\n";
  char buf[512];
  for (const auto& r : run().rows) {
    // Rounded as the sweep's summary rounds it (to_string's digits cut off at four characters gave 0.28
    // for 0.2894, which the summary printed as 0.29).
    char x_copy[16] = "";
    if (r.x_copy > 0) std::snprintf(x_copy, sizeof x_copy, "%.2f", r.x_copy);
    std::snprintf(buf, sizeof buf, "| %s | %s | %s | %s | %.2f | %s | %s | %s |\n", r.kernel.c_str(), r.impl.c_str(),
                  r.shape.c_str(), r.dtype.c_str(), r.us, r.gbps > 0 ? std::to_string(static_cast<int>(r.gbps)).c_str() : "",
                  x_copy, r.note.c_str());
    os << buf;
  }
  std::fputs(os.str().c_str(), stdout);
  if (!path.empty()) std::ofstream(path) << os.str();
}

// The row variant called `name` (kernels::variant_name); an error names the ones there are.
kernels::RowVariant variant_named(const std::string& name) {
  using V = kernels::RowVariant;
  for (V v : {V::automatic, V::one_program, V::looped, V::split, V::cluster, V::staged, V::resident})
    if (name == kernels::variant_name(v)) return v;
  throw std::invalid_argument("--sweep-variant: expected automatic, one_program, looped, split, cluster, staged or resident, got " + name);
}

// Reads a tuning flag's value into `field`; false when `flag` is not a tuning flag.
bool tuning_flag(const std::string& flag, const char* value, kernels::Tuning& t) {
  const struct {
    const char* name;
    std::optional<int>* field;
  } ints[] = {{"--row-elements", &t.row_elements},
              {"--resident-threads", &t.resident_threads},
              {"--staged-warps", &t.staged_warps},
              {"--carveout", &t.shared_carveout},
              {"--looped-programs-per-sm", &t.looped_programs_per_sm},
              {"--looped-cluster", &t.looped_cluster},
              {"--staged-cluster", &t.staged_cluster},
              {"--looped-groups", &t.looped_groups},
              {"--split-programs-per-sm", &t.split_programs_per_sm},
              {"--split-combine-rows", &t.split_combine_rows}};
  for (const auto& f : ints)
    if (flag == f.name) {
      *f.field = std::stoi(value);
      return true;
    }
  if (flag == "--stage-bytes") {
    t.stage_bytes = std::stoll(value);
    return true;
  }
  if (flag == "--split-group-bytes") {
    t.split_group_bytes = std::stoll(value);
    return true;
  }
  const struct {
    const char* name;
    std::optional<bool>* field;
  } bools[] = {{"--peel", &t.peel}, {"--pack-rows", &t.pack_rows}, {"--stage-rows", &t.stage_rows}, {"--stage-stores", &t.stage_stores},
                 {"--constant-cols", &t.constant_cols}, {"--stride-rows", &t.stride_rows}, {"--rows-ahead", &t.rows_ahead}, {"--stride-stages", &t.stride_stages},
                 {"--overlap-launches", &t.overlap_launches}, {"--shift-affine", &t.shift_affine},
                 {"--keep-rows-in-l2", &t.keep_rows_in_l2}};
  for (const auto& f : bools)
    if (flag == f.name) {
      *f.field = std::stoi(value) != 0;
      return true;
    }
  return false;
}

}  // namespace

}  // namespace tilefuse::bench

int main(int argc, char** argv) {
  using namespace tilefuse;
  bench::Run& r = bench::run();
  std::string table;
  int sweep = 0;
  std::uint64_t sweep_seed = 1;
  std::vector<char*> rest{argv[0]};
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help") {
        std::printf("tilefuse_bench [--smoke] [--table results.md] [--sweep N [--sweep-seed S] [--sweep-variant V]] [--burst N] [--peer-cubins FILE]\n"
                    "  [tuning flags] [google benchmark flags]\n"
                    "--burst N: the row, epilogue and sweep benchmarks time bursts of N launches between one pair of events\n"
                    "  (default 20; 1: events around each launch); the matrix kernels always time each launch\n"
                    "--peer-cubins FILE: also time the peers' row kernels listed in FILE (bench/peers_rows.py with\n"
                    "  CUBINS=DIR writes DIR/manifest.txt) on the same buffers, each beside ours\n"
                    "--sweep-variant: automatic (default), one_program, looped, split, cluster, staged or resident; shapes the\n"
                    "  variant does not take are skipped\n"
                    "tuning flags (kernels::Tuning; unset: each kernel's rule): --row-elements N, --resident-threads N,\n"
                    "  --staged-warps N, --stage-bytes N, --carveout P, --looped-programs-per-sm K,\n"
                    "  --looped-cluster K, --staged-cluster K, --looped-groups K, --split-programs-per-sm K, --split-combine-rows K, --split-group-bytes N, --peel 0|1, --pack-rows 0|1, --stage-rows 0|1, --stage-stores 0|1,\n"
                    "  --constant-cols 0|1, --stride-rows 0|1, --rows-ahead 0|1, --stride-stages 0|1, --overlap-launches 0|1, --shift-affine 0|1,\n"
                    "  --keep-rows-in-l2 0|1\n\n");
        rest.push_back(argv[i]);
      } else if (a == "--smoke") r.smoke = true;
      else if (a == "--table" && i + 1 < argc) table = argv[++i];
      else if (a == "--sweep" && i + 1 < argc) sweep = std::stoi(argv[++i]);
      else if (a == "--sweep-seed" && i + 1 < argc) sweep_seed = std::stoull(argv[++i]);
      else if (a == "--sweep-variant" && i + 1 < argc) r.sweep_variant = bench::variant_named(argv[++i]);
      else if (a == "--peer-cubins" && i + 1 < argc) bench::load_peer_cubins(argv[++i]);
      else if (a == "--burst" && i + 1 < argc) {
        bench::burst_launches() = std::stoi(argv[++i]);
        if (bench::burst_launches() < 1 || bench::burst_launches() > 1000)
          throw std::invalid_argument("--burst: expected 1 to 1000 launches between a pair of events, got " + std::string(argv[i]));
      }
      else if (a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && i + 1 < argc && bench::tuning_flag(a, argv[i + 1], r.tuning)) ++i;
      else rest.push_back(argv[i]);
    }
    kernels::validate(r.tuning);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilefuse_bench: %s\n", e.what());
    return 2;
  }
  if (!driver::available(&r.gpu_skip) && r.gpu_skip.empty()) r.gpu_skip = "unknown";
  int rc = static_cast<int>(rest.size());
  benchmark::Initialize(&rc, rest.data());
  bench::register_softmax();
  bench::register_layernorm();
  bench::register_epilogue();
  bench::register_matrix();
  bench::register_host_costs();
  if (sweep > 0) bench::register_sweep(sweep, sweep_seed);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  bench::write_table(table);
  bench::print_sweep_summary();
  if (r.failed) std::fprintf(stderr, "tilefuse_bench: a kernel gave a wrong result or the cache missed (see above)\n");
  return r.failed ? 1 : 0;
}
