// Linear layouts of 1D and 2D tiles (see tile_layout.hpp): construction of the blocked and tensor-core
// layouts, and the layouts that reductions, expand, broadcast and trans give.
#include "backend/passes/analysis/tile_layout.hpp"

#include <algorithm>
#include <stdexcept>

namespace tilefuse::passes {

namespace {

int log2i(int x) {
  int k = 0;
  while ((1 << k) < x) ++k;
  return k;
}

// The coordinate bits of a tile in row-major order from the fastest: the last dimension's, then the first's.
std::vector<Basis> coordinate_bits(int rank, std::array<int, 2> dims) {
  std::vector<Basis> bits;
  const int last = rank - 1;
  for (int b = 0; (1 << b) < dims[last]; ++b) bits.push_back(last == 1 ? Basis{0, 1 << b} : Basis{1 << b, 0});
  if (rank == 2)
    for (int b = 0; (1 << b) < dims[0]; ++b) bits.push_back(Basis{1 << b, 0});
  return bits;
}

bool zero(const Basis& b) { return b[0] == 0 && b[1] == 0; }

}  // namespace

Basis TileLayout2::reg_coord(int e) const {
  Basis c{0, 0};
  for (std::size_t k = 0; k < reg.size(); ++k)
    if (e >> k & 1) {
      c[0] ^= reg[k][0];
      c[1] ^= reg[k][1];
    }
  return c;
}

std::string TileLayout2::str() const {
  std::string s = "[" + std::to_string(dims[0]) + (rank == 2 ? "x" + std::to_string(dims[1]) : "") + "]";
  auto list = [&](const char* name, const std::vector<Basis>& bs) {
    s += std::string(" ") + name;
    for (const Basis& b : bs) s += "(" + std::to_string(b[0]) + "," + std::to_string(b[1]) + ")";
  };
  list("reg", reg);
  list("lane", lane);
  list("warp", warp);
  return s;
}

TileLayout2 blocked_layout(int rank, std::array<int, 2> dims, int vector, int warps, int run) {
  TileLayout2 l;
  l.rank = rank;
  l.dims = rank == 1 ? std::array<int, 2>{dims[0], 1} : dims;
  const std::vector<Basis> bits = coordinate_bits(rank, l.dims);
  std::size_t next = 0;
  auto take = [&] { return next < bits.size() ? bits[next++] : Basis{0, 0}; };
  const int last_dim = rank == 1 ? dims[0] : dims[1];
  const int vector_bits = log2i(std::min(vector, last_dim)), last_bits = log2i(last_dim);
  // Shorter runs: a thread's run, then the lanes on the next columns (at least a vector's worth, as far
  // as the row leaves the thread a vector's worth of its elements: a warp's access is one contiguous piece
  // of each row it touches), then the thread's other vector bits along the last dimension as far as it
  // reaches, then the other lanes. Without, the vector, then the lanes.
  const int run_bits = run > 0 ? std::min(log2i(run), vector_bits) : vector_bits;
  const int spread = vector_bits - run_bits;
  const int in_thread = std::min(spread, std::max(0, last_bits - vector_bits));
  const int lane_cols = spread + std::min(5 - spread, std::max(0, last_bits - vector_bits - in_thread));
  for (int k = 0; k < run_bits; ++k) l.reg.push_back(take());
  for (int k = 0; k < lane_cols; ++k) l.lane.push_back(take());
  for (int k = 0; k < in_thread; ++k) l.reg.push_back(take());
  while (l.lane.size() < 5) l.lane.push_back(take());
  for (int k = 0; k < log2i(warps); ++k) l.warp.push_back(take());
  while (next < bits.size()) l.reg.push_back(take());
  return l;
}

TileLayout2 thread_lines_layout(std::array<int, 2> dims, int axis, int warps) {
  TileLayout2 l;
  l.rank = 2;
  l.dims = dims;
  auto bit = [](int ax, int b) { return ax == 0 ? Basis{1 << b, 0} : Basis{0, 1 << b}; };
  const int other = 1 - axis;
  // Bits of the line each thread holds: all of them where the other axis has a thread for each line,
  // else as many as leave every thread distinct elements (the line's high bits then go to the lowest lanes).
  const int threads_bits = 5 + log2i(warps), axis_bits = log2i(dims[axis]), other_bits = log2i(dims[other]);
  const int in_thread = std::min(axis_bits, std::max(0, axis_bits + other_bits - threads_bits));
  int a = 0, b = 0;
  for (; a < in_thread; ++a) l.reg.push_back(bit(axis, a));
  auto take = [&] {
    if (a < axis_bits) return bit(axis, a++);
    return b < other_bits ? bit(other, b++) : Basis{0, 0};
  };
  for (int k = 0; k < 5; ++k) l.lane.push_back(take());
  for (int k = 0; k < log2i(warps); ++k) l.warp.push_back(take());
  while (a < axis_bits || b < other_bits) l.reg.push_back(take());
  return l;
}

TileLayout2 mma_layout(int m, int n, int warps_m, int warps_n, int warps) {
  if (warps_m * warps_n != warps || m % (16 * warps_m) != 0 || n % (8 * warps_n) != 0)
    throw std::invalid_argument("tilefuse: no tensor-core layout of a " + std::to_string(m) + "x" + std::to_string(n) +
                                " tile over " + std::to_string(warps_m) + "x" + std::to_string(warps_n) + " warps");
  TileLayout2 l;
  l.rank = 2;
  l.dims = {m, n};
  l.mma = true;
  l.warps_m = warps_m;
  l.warps_n = warps_n;
  const int wm = m / warps_m, wn = n / warps_n;  // one warp's rows and columns
  l.reg = {Basis{0, 1}, Basis{8, 0}};           // j: column bit 0; h: row bit 3
  for (int b = 8; b < wn; b *= 2) l.reg.push_back(Basis{0, b});   // ni
  for (int b = 16; b < wm; b *= 2) l.reg.push_back(Basis{b, 0});  // mi
  l.lane = {Basis{0, 2}, Basis{0, 4}, Basis{1, 0}, Basis{2, 0}, Basis{4, 0}};
  for (int b = wm; b < m; b *= 2) l.warp.push_back(Basis{b, 0});
  for (int b = wn; b < n; b *= 2) l.warp.push_back(Basis{0, b});
  return l;
}

TileLayout2 slice_layout(const TileLayout2& l, int axis) {
  TileLayout2 s;
  s.rank = 1;
  const int keep = 1 - axis;
  s.dims = {l.dims[keep], 1};
  auto project = [&](const Basis& b) { return Basis{b[keep], 0}; };
  for (const Basis& b : l.reg)
    if (b[keep] != 0) s.reg.push_back(project(b));
  for (const Basis& b : l.lane) s.lane.push_back(project(b));
  for (const Basis& b : l.warp) s.warp.push_back(project(b));
  s.parent = std::make_shared<const TileLayout2>(l);
  s.axis = axis;
  return s;
}

TileLayout2 expand_layout(const TileLayout2& l, int axis) {
  TileLayout2 x;
  x.rank = 2;
  x.dims = axis == 1 ? std::array<int, 2>{l.dims[0], 1} : std::array<int, 2>{1, l.dims[0]};
  auto lift = [&](const Basis& b) { return axis == 1 ? Basis{b[0], 0} : Basis{0, b[0]}; };
  for (const Basis& b : l.reg) x.reg.push_back(lift(b));
  for (const Basis& b : l.lane) x.lane.push_back(lift(b));
  for (const Basis& b : l.warp) x.warp.push_back(lift(b));
  return x;
}

TileLayout2 squeeze_layout(const TileLayout2& l, std::array<int, 2> from) {
  TileLayout2 s;
  s.rank = 2;
  s.dims = from;
  auto keep = [&](const Basis& b) { return Basis{from[0] == 1 ? 0 : b[0], from[1] == 1 ? 0 : b[1]}; };
  for (const Basis& b : l.reg)
    if (!zero(keep(b))) s.reg.push_back(keep(b));
  for (const Basis& b : l.lane) s.lane.push_back(keep(b));
  for (const Basis& b : l.warp) s.warp.push_back(keep(b));
  return s;
}

TileLayout2 trans_layout(const TileLayout2& l) {
  TileLayout2 t;
  t.rank = 2;
  t.dims = {l.dims[1], l.dims[0]};
  auto swap = [](const Basis& b) { return Basis{b[1], b[0]}; };
  for (const Basis& b : l.reg) t.reg.push_back(swap(b));
  for (const Basis& b : l.lane) t.lane.push_back(swap(b));
  for (const Basis& b : l.warp) t.warp.push_back(swap(b));
  return t;
}

int part_element(const TileLayout2& full, unsigned dropped, int e) {
  int out = 0, bit = 0;
  for (std::size_t k = 0; k < full.reg.size(); ++k) {
    const Basis& b = full.reg[k];
    const bool kept = (!(dropped & 1u) && b[0] != 0) || (!(dropped & 2u) && b[1] != 0);
    if (!kept) continue;
    if (e >> k & 1) out |= 1 << bit;
    ++bit;
  }
  return out;
}

}  // namespace tilefuse::passes
