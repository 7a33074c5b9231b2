// The peers' compiled row kernels timed in this harness: bench/peers_rows.py (CUBINS=DIR) writes each
// Triton one-program-per-row kernel it timed as a CUBIN and a line of DIR/manifest.txt, and
// tilefuse_bench --peer-cubins DIR/manifest.txt loads them and times each beside ours on the same rotated
// buffers, with the same bursts and the same float64 check. What this separates: a difference between the
// kernels from one between the two processes' launch paths and allocations (bench/NOTES.md, "Bursts").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/driver/driver.hpp"

namespace tilefuse::bench {

/// One manifest line: `kernel rows cols dtype warps shared_bytes extra_params symbol cubin_path`, where
/// kernel is softmax or layernorm, extra_params counts the pointer parameters Triton appends after the
/// kernel's own (passed as null), and a relative cubin path is relative to the manifest's folder.
struct PeerCubin {
  std::string kernel, dtype, symbol, path;
  std::int64_t rows = 0, cols = 0;
  int warps = 0, shared_bytes = 0, extra_params = 0;
};

/// The manifest at `path` (read once; every line checked). Throws std::invalid_argument naming the file,
/// the line and what was expected.
void load_peer_cubins(const std::string& path);
/// The manifest's entry for a shape, or null (none loaded, or no kernel of that shape).
const PeerCubin* find_peer_cubin(const std::string& kernel, std::int64_t rows, std::int64_t cols, const std::string& dtype);

/// A peer's kernel loaded from its CUBIN, launched one program per row over device pointers.
class PeerKernel {
 public:
  explicit PeerKernel(const PeerCubin& peer);
  /// softmax: y = softmax(x) over rows of cols.
  void softmax(std::uint64_t x, std::uint64_t y, void* stream) const;
  /// layernorm: y = (x - mean) rstd w + b over rows of cols, eps 1e-5.
  void layernorm(std::uint64_t x, std::uint64_t w, std::uint64_t b, std::uint64_t y, void* stream) const;
  /// The implementation column of its rows.
  static std::string impl() { return "Triton one program per row (its CUBIN, this harness)"; }

 private:
  void launch(void** own, int count, void* stream) const;
  PeerCubin peer_;
  std::unique_ptr<driver::Module> module_;
  void* function_ = nullptr;
};

}  // namespace tilefuse::bench
