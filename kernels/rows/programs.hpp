// Tile-program helpers the row families share (DSL code, traced into their programs).
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

}  // namespace tilefuse::kernels
