// Shows and clears tilefuse's disk cache of compiled kernels (the directory TILEFUSE_CACHE_DIR names, else
// $XDG_CACHE_HOME/tilefuse, else ~/.cache/tilefuse).
//
//   kernel_cache [list]                   every entry: kernel, size, key; then the totals per kernel
//   kernel_cache clear [--kernel NAME]    removes every entry (or those of kernel NAME, e.g. tilefuse_softmax_1024)
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include "backend/cache/cache.hpp"

using namespace tilefuse;

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "list";
    std::string kernel;
    for (int i = 2; i < argc; i += 2) {
      if (std::string(argv[i]) != "--kernel" || i + 1 >= argc) throw std::invalid_argument("kernel_cache: unknown flag " + std::string(argv[i]));
      kernel = argv[i + 1];
    }
    cache::KernelCache& c = cache::KernelCache::global();
    if (!c.directory()) {
      std::printf("no disk cache (TILEFUSE_DISABLE_DISK_CACHE=1, or no home directory)\n");
      return 0;
    }
    if (command == "list") {
      const auto entries = c.disk_entries();
      std::map<std::string, std::pair<int, std::uintmax_t>> per_kernel;
      std::uintmax_t total = 0;
      std::printf("%s\n", c.directory()->string().c_str());
      for (const auto& e : entries) {
        if (!kernel.empty() && e.kernel != kernel) continue;
        const std::string name = e.valid ? e.kernel : "(unreadable: older format or damaged)";
        std::printf("  %-40s %10ju bytes  %s\n", name.c_str(), e.bytes, e.key.c_str());
        auto& k = per_kernel[name];
        ++k.first;
        k.second += e.bytes;
        total += e.bytes;
      }
      std::printf("by kernel:\n");
      for (const auto& [name, k] : per_kernel) std::printf("  %-40s %4d entries %10ju bytes\n", name.c_str(), k.first, k.second);
      std::printf("total: %zu entries, %ju bytes\n", entries.size(), total);
    } else if (command == "clear") {
      const std::size_t n = c.clear(kernel);
      std::printf("removed %zu file(s) from %s\n", n, c.directory()->string().c_str());
    } else {
      throw std::invalid_argument("kernel_cache: the command is list or clear, got " + command);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
