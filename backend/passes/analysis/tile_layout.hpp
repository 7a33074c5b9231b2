// How the elements of a 1D or 2D tile spread over a program's registers, lanes and warps, as a linear
// map (Triton's linear layouts): each bit of a thread's element number, lane and warp selects one
// coordinate bit of the tile, or none (the element is then held twice). Tile dimensions are powers of
// two, so a layout is a short list of bases; code generation reads coordinates from it and moves values
// between layouts through shared memory only when two layouts differ.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilefuse::passes {

/// One basis vector: the coordinate (dimension 0, dimension 1) a set bit contributes; {0, 0}: none.
using Basis = std::array<int, 2>;

/// A linear layout of a tile of rank 1 ([n]) or 2 ([rows, cols]).
struct TileLayout2 {
  int rank = 1;
  std::array<int, 2> dims{1, 1};  ///< dims[0] only for rank 1
  std::vector<Basis> reg;         ///< bit k of a thread's element number e
  std::vector<Basis> lane;        ///< bit k of the lane (5 bits)
  std::vector<Basis> warp;        ///< bit k of the warp (log2 of warps per program)
  /// When this layout came from reducing `parent` along `axis`: the parent, so that broadcasting back
  /// into it needs no data movement.
  std::shared_ptr<const TileLayout2> parent;
  int axis = -1;
  /// The layout a dot's result takes (tensor-core accumulator fragments): its warp grid.
  bool mma = false;
  int warps_m = 1, warps_n = 1;

  /// Elements each thread holds.
  int per_thread() const { return 1 << reg.size(); }
  /// Coordinate of element e's bits alone (the part a thread's lane and warp do not add).
  Basis reg_coord(int e) const;
  /// Same mapping (bases and shape; how it was made does not matter).
  bool same(const TileLayout2& o) const { return rank == o.rank && dims == o.dims && reg == o.reg && lane == o.lane && warp == o.warp; }
  /// Printed form for comments and memo keys, e.g. "[64x128] reg(0,1)(0,2) lane... warp...".
  std::string str() const;
};

/// A blocked layout of a tile (rank 1: [n]; rank 2: [rows, cols]) over `warps` warps: runs of `vector`
/// contiguous elements along the last dimension per thread, lanes then warps next in row-major order,
/// and the rest in registers. It is the layout of loads and stores: each warp covers whole runs of rows.
/// With `run` < `vector` (an access that moves only `run` elements at once), a thread holds a run and the
/// lowest lanes the next runs of the row, as many as leave each thread a vector's worth of a row's
/// elements (at least a vector's worth of lanes, at most 32), then the thread's other vector bits go along
/// the last dimension as far as it reaches: a warp's element-by-element access is one contiguous piece of
/// each row it touches (64 bytes of a row of halves 256 columns wide, not four 16-byte pieces 128 bytes
/// apart), and each thread holds as many elements of a row and a row takes as many lanes as with whole
/// vectors (its reductions cost the same shuffles); a narrower row trades some of its lanes for rows.
TileLayout2 blocked_layout(int rank, std::array<int, 2> dims, int vector, int warps, int run = 0);

/// A layout of a 2D tile in which each thread holds whole lines along `axis`, or as much of one as leaves
/// every thread elements of its own: the axis's low coordinate bits in registers, its remaining bits on
/// the lowest lanes, then the other axis over the lanes and warps (the rest of it in registers). Where
/// the other axis has a thread for each line, a reduction along `axis` stays within each thread (no
/// shuffles); else it takes one shuffle per bit of the line on the lanes. Meant for tiles gathered from
/// a stage, whose accesses need not be coalesced; a tile of fewer elements than threads leaves lanes
/// holding copies.
TileLayout2 thread_lines_layout(std::array<int, 2> dims, int axis, int warps);

/// The layout of a dot's [m, n] f32 result on tensor cores (mma.sync m16n8k16 accumulator fragments):
/// warps_m * warps_n == warps; each warp holds (m / warps_m) x (n / warps_n); element e of a thread is
/// ((mi * NI + ni) * 2 + h) * 2 + j: row mi * 16 + lane / 4 + 8 h, column ni * 8 + 2 (lane % 4) + j.
TileLayout2 mma_layout(int m, int n, int warps_m, int warps_n, int warps);

/// The 1D layout of what a reduction of `l` (2D) along `axis` gives: the other axis's coordinates; the
/// registers that held the reduced axis are gone, its lanes and warps hold copies.
TileLayout2 slice_layout(const TileLayout2& l, int axis);
/// The 2D layout [n, 1] (axis 1) or [1, n] (axis 0) holding the 1D layout `l` (Triton's expand_dims).
TileLayout2 expand_layout(const TileLayout2& l, int axis);
/// The layout of the 2D tile with shape `from` (a dimension of 1) that broadcasts into `l` with no data
/// movement: `l` with the broadcast dimensions' bases dropped.
TileLayout2 squeeze_layout(const TileLayout2& l, std::array<int, 2> from);
/// The layout of the transpose of a 2D tile held in `l`.
TileLayout2 trans_layout(const TileLayout2& l);

/// For element e of a thread in layout `full`: the element of the layout that drops the dimensions in
/// `dropped` (bit d: dimension d; slice_layout and squeeze_layout of `full`) holding the same value.
int part_element(const TileLayout2& full, unsigned dropped, int e);

}  // namespace tilefuse::passes
