// Tile-program helpers the row families share (DSL code, traced into their programs): the reversed
// piece order of the looped kernels, and the window that reads a row of any alignment in 16-byte runs.
#pragma once

#include "dsl/tl.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

/// For a tile-program loop `for from in [start, end) by BLOCK`: the value t such that `t - from` visits the
/// same BLOCK-wide pieces last to first (t - start is the start of the last piece).
template <int BLOCK>
tl::Scalar<tl::i32> reversed_piece_turn(tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> end) {
  return start + start + ((end - start - 1) / BLOCK) * BLOCK;
}

/// Elements of T in 16 bytes: one vector access.
template <class T>
inline constexpr int kVectorElements = 16 / static_cast<int>(sizeof(tl::host_type_t<T>));

/// A row read through an aligned window: the row that starts at element `start` of a 16-byte aligned
/// buffer is read from `base`, the vector boundary at or before it, and its columns sit at window
/// indices [head, head + n). A row whose width is not a multiple of a vector starts anywhere in a vector;
/// its window keeps whole 16-byte runs for every run inside the row, and only the runs that hold the
/// row's first or last column go element by element (under the masks `idx >= head && idx < head + n`),
/// where reading the row from `start` would leave every access unaligned.
struct RowWindow {
  tl::Scalar<tl::i32> base, head;
};

/// The aligned window of a row of T that starts at element `start` (start >= 0).
template <class T>
RowWindow row_window(tl::Scalar<tl::i32> start) {
  auto base = (start / kVectorElements<T>)*kVectorElements<T>;
  return {base, start - base};
}

/// The mask of window indices `idx` inside a row's columns [first, end): with FIRST (a window that reads
/// the row from the vector boundary before it) bounded below too, else only above.
template <bool FIRST, class Idx>
auto columns_in(const Idx& idx, tl::Scalar<tl::i32> first, tl::Scalar<tl::i32> end) {
  if constexpr (FIRST) return (idx >= first) & (idx < end);
  else return idx < end;
}

}  // namespace tilefuse::kernels
