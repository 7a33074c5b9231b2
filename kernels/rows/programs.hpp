// Tile-program helpers the row families share (DSL code, traced into their programs): a row held as
// several pieces, the window that reads a row of any alignment in 16-byte runs, narrow rows several to a
// program, and the walks over a row's pieces that mask only its two end pieces (the staged kernels'
// for_row_pieces; the looped and split kernels' for_row_pieces_ahead, pieces loaded one ahead).
#pragma once

#include <optional>
#include <tuple>
#include <utility>

#include "dsl/tl.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

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

/// A row held in registers as PIECES tiles of PIECE columns (with_pieces in kernels/rows/shapes.hpp),
/// read from its start or, with PEEL, from its aligned window (row_window), where its n columns sit at
/// indices [head, head + n) of the pieces laid end to end. Only the pieces that hold the row's ends carry
/// a mask: the last piece's columns past the row (and with PEEL the first piece's before it); every piece
/// between is whole and is read and written without one.
template <class T, int PIECE, int PIECES, bool PEEL>
struct RowPieces {
  tl::Scalar<tl::i32> base, head;  ///< where piece 0 starts in the matrix; the row's first column in it
  tl::Tile<tl::i32, PIECE> idx;    ///< 0 ... PIECE - 1
  tl::Tile<tl::i1, PIECE> first, last;  ///< the row's elements in piece 0 and in piece PIECES - 1

  /// The row that starts at element `start`, n columns; `tail`: the columns of the last piece, n -
  /// (PIECES - 1) * PIECE (without PEEL; a launch parameter, so that a whole last piece is seen as one).
  RowPieces(tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> tail)
      : base(PEEL ? row_window<T>(start).base : start),
        head(PEEL ? start - base : tl::scalar<tl::i32>(0)),
        idx(tl::arange<PIECE>()),
        first(PEEL ? (PIECES == 1 ? (idx >= head) & (idx < head + n) : idx >= head) : idx < tail),
        last(PIECES == 1 ? first : (idx < (PEEL ? head + n - (PIECES - 1) * PIECE : tail))) {}

  /// Piece k's mask, or none where the piece is whole: access(mask...) reads or writes piece k.
  template <class F>
  decltype(auto) masked(int k, F&& access) const {
    if (k == 0 && (PEEL || PIECES == 1)) return access(first);
    if (k + 1 == PIECES) return access(last);
    return access();
  }
  /// Piece k of the row's `t` with its elements off the row set to `other`.
  template <class V, class O>
  V in_row(int k, const V& t, const O& other) const {
    return masked(k, [&](auto... m) -> V {
      if constexpr (sizeof...(m) == 0) return t;
      else return tl::where(m..., t, other);
    });
  }
  /// Element offsets of piece k from the matrix's start.
  tl::Tile<tl::i32, PIECE> at(int k) const { return base + k * PIECE + idx; }
};

/// Rows of C columns (a power of two) of T that one program of the narrow-row kernels holds: 8 KB of
/// them (64 bytes per thread of four warps, the one-program rule), at least one row.
template <class T, int C>
inline constexpr int kRowsPerProgram = 8192 / (C * static_cast<int>(sizeof(tl::host_type_t<T>))) > 1
                                           ? 8192 / (C * static_cast<int>(sizeof(tl::host_type_t<T>)))
                                           : 1;

/// R rows of a matrix as one program of the narrow-row kernels sees them: rows pid * R ... (the last
/// program's rows past the matrix masked off), each read from its start, or with PEEL from its aligned
/// window's (row_window), where its columns sit at window indices [head, head + n).
template <class T, int R, int C, bool PEEL>
struct RowBlock {
  tl::Tile<tl::i32, R> rows, start, head;  ///< head: 0 without PEEL
  tl::Tile<tl::i32, R, C> at;              ///< element offsets of the block's tile from the matrix's start
  tl::Tile<tl::i1, R> row_in;              ///< the row is in the matrix
  tl::Tile<tl::i1, R, C> mask;             ///< the element is one of the matrix's

  RowBlock(tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> n_rows)
      : rows(tl::program_id(0) * R + tl::arange<R>()),
        start(rows * stride),
        head(start - base_of(start)),
        at(base_of(start)(tl::all, tl::none) + tl::arange<C>()(tl::none, tl::all)),
        row_in(rows < n_rows),
        mask(mask_of(row_in, head, n)) {}

 private:
  static tl::Tile<tl::i32, R> base_of(const tl::Tile<tl::i32, R>& start) {
    if constexpr (PEEL) return (start / kVectorElements<T>)*kVectorElements<T>;
    else return start;
  }
  static tl::Tile<tl::i1, R, C> mask_of(const tl::Tile<tl::i1, R>& row_in, const tl::Tile<tl::i32, R>& head, tl::Scalar<tl::i32> n) {
    auto cols = tl::arange<C>()(tl::none, tl::all);
    if constexpr (PEEL) return row_in(tl::all, tl::none) & (cols >= head(tl::all, tl::none)) & (cols < (head + n)(tl::all, tl::none));
    else return row_in(tl::all, tl::none) & (cols < n);
  }
};

/// R rows of a contiguous matrix (row stride = n columns) as one program of the narrow-row kernels reads
/// them through shared memory: rows pid * R ... are one run of memory, R * n elements (fewer for the last
/// program), which is read and written 16 bytes at a time from the vector boundary before it, into a
/// stage of R * C elements, and each row is gathered from there into row r of an [R, C] tile. Rows whose
/// width is not a whole number of vectors then move as whole vectors but for the run's two ends, and
/// every row starts at column 0 of the tile, so per-column operands (LayerNorm's w and b) are read
/// aligned. C is a power of two above n, or n itself when n is a power of two (the run then starts on a
/// vector boundary): R * C holds the run's R * n elements and the up to one vector less one before it,
/// for R >= kVectorElements<T> (kRowsPerProgram is at least 16 for tiles up to 512 bytes).
///
/// Every mask is constant over whole vectors but two small ones: the stage is filled with whole vectors
/// of the window, copied without registers (reading a neighbouring program's elements before and after
/// the run is harmless; only the matrix's end bounds it), then the up to one vector less one left before
/// the matrix's end is stored over them from registers; the run goes out as its whole vectors, then its
/// first and last vector (at once where all of it is the run's, else element by element: the rest is a
/// neighbour's). Each row's first stage offset is clamped to where it provably lies, [0, F - C], so
/// that gathers and scatters of the [R, C] tile need no bounds tests.
template <class T, int R, int C>
struct StagedRows {
  static_assert(R >= kVectorElements<T>, "tilefuse kernels: StagedRows needs at least a vector's worth of rows per program.");
  static constexpr int F = R * C;
  static constexpr int V = kVectorElements<T>;
  tl::Stage<T, F> stage;
  tl::Tile<tl::i32, R> rows;      ///< the block's rows in the matrix
  tl::Tile<tl::i1, R> row_in;     ///< the row is in the matrix
  tl::Scalar<tl::i32> base;       ///< the vector boundary at or before the run's first element
  tl::Scalar<tl::i32> head, end;  ///< the run's elements at stage indices [head, end)
  tl::Scalar<tl::i32> filled;     ///< stage elements [0, filled) are the matrix's (F but for the last program)
  tl::Tile<tl::i32, R> first;     ///< stage offset of each row's first element
  tl::Tile<tl::i32, R, C> at;     ///< stage offset of each element of the [R, C] tile
  tl::Tile<tl::i1, R, C> mask;    ///< the element is one of the matrix's
  tl::Tile<tl::i32, F> flat;      ///< stage offsets of the run's window, 0 ... F - 1

  StagedRows(tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> n_rows)
      : rows(tl::program_id(0) * R + tl::arange<R>()),
        row_in(rows < n_rows),
        base((tl::program_id(0) * R * n / V) * V),
        head(tl::program_id(0) * R * n - base),
        end(head + tl::minimum(n_rows - tl::program_id(0) * R, R) * n),
        filled(tl::minimum(n_rows * n - base, F)),
        first(tl::minimum(tl::maximum(head + tl::arange<R>() * n, 0), F - C)),  // never clamped (R >= V)
        at(first(tl::all, tl::none) + tl::arange<C>()(tl::none, tl::all)),
        mask(row_in(tl::all, tl::none) & (tl::arange<C>()(tl::none, tl::all) < n)),
        flat(tl::arange<F>()) {}

  /// The block's [R, C] tile of `in`, `other` off the matrix.
  template <class P, class O>
  tl::Tile<T, R, C> load(const P& in, const O& other) const {
    auto whole = (filled / V) * V;  // the window's whole vectors inside the matrix
    // What is left of the window before the matrix's end (under a vector, in the last program only) goes
    // through registers, stored over the zeros the copy writes there once the copy has landed: copied,
    // it would race the copy's zeros (two copies into one element land in either order).
    auto tail = tl::arange<V>();
    auto in_tail = tail < filled - whole;
    auto rest = tl::load(in + base + whole + tail, in_tail);
    stage.copy(0, in + base + flat, flat < whole);
    stage.scatter(whole + tail, rest, in_tail);
    return stage.gather(at, mask, other);
  }
  /// Writes the block's [R, C] tile `value` to `out` (its elements off the matrix are dropped).
  template <class P>
  void store(const P& out, const tl::Tile<T, R, C>& value) const {
    stage.scatter(at, value, mask);
    auto whole_end = (end / V) * V;  // vectors [1, whole_end / V) are the run's alone
    tl::store(out + base + flat, stage.gather(flat), (flat >= V) & (flat < whole_end));
    auto ends = [&](tl::Tile<tl::i32, V> idx, tl::Scalar<tl::i32> from) {
      tl::store(out + base + idx, stage.gather(idx), (idx >= from) & (idx < end));
    };
    ends(tl::arange<V>(), head);                                    // the first vector
    ends(whole_end + tl::arange<V>(), tl::maximum(head, V));        // the last, when it is not the first
  }
};

/// The mask of window indices `idx` inside a row's columns [first, end) (a window reads the row from the
/// vector boundary before it): the mask of a row's head piece.
template <class Idx>
auto columns_in(const Idx& idx, tl::Scalar<tl::i32> first, tl::Scalar<tl::i32> end) {
  return (idx >= first) & (idx < end);
}

/// The mask of one piece of a row visited by for_row_pieces: the piece's columns in the row for a piece
/// that holds one of the row's ends, none for a whole piece between them.
template <int PIECE>
struct PieceMask {
  std::optional<tl::Tile<tl::i1, PIECE>> mask;

  /// access(mask) for an end piece, access() for a whole one: a load or store of the piece.
  template <class F>
  decltype(auto) access(F&& f) const {
    if (mask) return f(*mask);
    return f();
  }
  /// `t` with the piece's elements off the row set to `other` (t itself for a whole piece).
  template <class V, class O>
  V in_row(const V& t, const O& other) const {
    if (mask) return V(tl::where(*mask, t, other));
    return t;
  }
};

/// tl::for_range over the PIECE-wide pieces from = 0, PIECE, ... below `end` of a row whose columns sit
/// at [first, end) of its pieces laid end to end (with HEAD: a window's head, first < PIECE; without, the
/// row starts at 0 and `first` is unused). The pieces that hold the row's ends (piece 0 with HEAD, and the
/// last piece where end is not a whole number of pieces) run body(from, mask, c...) with their mask;
/// every piece between runs it with none, so that only two pieces of a row pay for a mask per element
/// (one loop over the whole pieces and at most one iteration each for the ends). body returns the next
/// carried values, a std::tuple like `init`.
template <int PIECE, bool HEAD, class... C, class Body>
std::tuple<C...> for_row_pieces(tl::Scalar<tl::i32> first, tl::Scalar<tl::i32> end, const std::tuple<C...>& init,
                                Body&& body) {
  const auto cols = tl::arange<PIECE>();
  auto visit = [&](tl::Scalar<tl::i32> lo, tl::Scalar<tl::i32> hi, const std::tuple<C...>& c, auto mask_of) {
    return tl::for_range(lo, hi, PIECE, c, [&](tl::Scalar<tl::i32> from, const C&... carried) {
      return body(from, PieceMask<PIECE>{mask_of(from)}, carried...);
    });
  };
  using Mask = std::optional<tl::Tile<tl::i1, PIECE>>;
  auto none = [](tl::Scalar<tl::i32>) { return Mask{}; };
  auto head = [&](tl::Scalar<tl::i32> from) { return Mask{columns_in(from + cols, first, end)}; };
  auto tail = [&](tl::Scalar<tl::i32> from) { return Mask{from + cols < end}; };  // past piece 0: no head
  const auto zero = tl::scalar<tl::i32>(0);
  const auto whole_end = (end / PIECE) * PIECE;  // the end of the last whole piece
  std::tuple<C...> c = init;
  tl::Scalar<tl::i32> middle = zero;
  if constexpr (HEAD) {
    c = visit(zero, tl::minimum(end, PIECE), c, head);  // piece 0, if the row has columns
    middle = tl::scalar<tl::i32>(PIECE);
  }
  c = visit(middle, whole_end, c, none);
  return visit(tl::maximum(whole_end, middle), end, c, tail);  // the ragged last piece, if any
}

/// The columns one program of the staged kernels holds: program pid handles columns [start, start +
/// chunk) of row pid / splits (one program per row when splits is 1, else a thread-block cluster per row),
/// at most STAGE of them (the launcher guarantees it; saying so lets the compiler drop the stage bounds
/// tests). They are copied into a stage from `base`, with PEEL the vector boundary before them
/// (row_window), so that rows that are not whole vectors move 16 bytes at a time; their columns then sit
/// at stage indices [head, end).
template <class T, int STAGE, int PIECE, bool PEEL>
struct StagedChunk {
  tl::Scalar<tl::i32> pid, row, start;  ///< the program, its row, the row's column at stage index head
  tl::Tile<tl::i32, PIECE> cols;        ///< 0 ... PIECE - 1
  tl::Scalar<tl::i32> base, head, end;  ///< where stage element 0 is read from; the columns' stage indices

  /// Program pid's chunk: row first_row + pid / splits (a launch may cover a wave of rows from first_row).
  static StagedChunk of(tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits,
                        tl::Scalar<tl::i32> first_row) {
    auto pid = tl::program_id(0);
    auto row = first_row + pid / splits;
    auto start = (pid % splits) * chunk;
    auto valid = tl::minimum(tl::maximum(tl::minimum(chunk, n - start), 0), STAGE);
    auto cols = tl::arange<PIECE>();
    auto zero = tl::scalar<tl::i32>(0);
    auto [base, head] = PEEL ? row_window<T>(row * stride + start) : RowWindow{row * stride + start, zero};
    auto end = PEEL ? tl::minimum(head + valid, STAGE) : valid;
    return StagedChunk{pid, row, start, cols, base, head, end};
  }
  /// Program pid's chunk of row `row` (pid % splits), empty past the matrix's n_rows rows (no piece to
  /// copy, read or write): for programs that stride over rows.
  static StagedChunk at(tl::Scalar<tl::i32> row, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk,
                        tl::Scalar<tl::i32> splits, tl::Scalar<tl::i32> n_rows) {
    auto pid = tl::program_id(0);
    auto start = (pid % splits) * chunk;
    auto zero = tl::scalar<tl::i32>(0);
    auto valid = tl::where(row < n_rows, tl::minimum(tl::maximum(tl::minimum(chunk, n - start), 0), STAGE), zero);
    auto cols = tl::arange<PIECE>();
    auto [base, head] = PEEL ? row_window<T>(row * stride + start) : RowWindow{row * stride + start, zero};
    auto end = PEEL ? tl::where(valid > 0, tl::minimum(head + valid, STAGE), zero) : valid;
    return StagedChunk{pid, row, start, cols, base, head, end};
  }
  /// for_row_pieces over the chunk's pieces: only those that hold its ends are masked.
  template <class... C, class Body>
  std::tuple<C...> pieces(const std::tuple<C...>& init, Body&& body) const {
    return for_row_pieces<PIECE, PEEL>(head, end, init, body);
  }
  /// Copies the chunk of `in` into `stage` (asynchronously: all of it in flight at once, taking no
  /// registers); stage elements off the row read 0.
  void copy(const tl::Stage<T, STAGE>& stage, tl::Ptr<T> in) const {
    pieces(std::tuple<>{}, [&](auto from, const PieceMask<PIECE>& in_row) {
      in_row.access([&](const auto&... mask) { stage.copy(from, in + base + from + cols, mask...); });
      return std::tuple<>{};
    });
  }
};

/// The staged kernels' rows through two stages in turn: programs (or clusters of `splits` programs, every
/// program of one taking the same rows) striding over the matrix's n_rows rows, cluster c of G taking rows
/// c, c + G, ... two at a time; each row's StagedChunk (`at(row)`) is copied from `in` into one stage while
/// `body(chunk, stage)` reads the row before from the other, so a program keeps a chunk in flight through
/// the passes and barriers of the one before. A chunk past the matrix is empty (StagedChunk::at).
template <class T, int STAGE, class At, class Body>
void for_rows_in_turn(tl::Ptr<T> in, tl::Scalar<tl::i32> splits, tl::Scalar<tl::i32> n_rows, At&& at, Body&& body) {
  const auto cluster = tl::program_id(0) / splits, clusters = tl::num_programs(0) / splits;
  tl::Stage<T, STAGE> a, b;
  at(cluster).copy(a, in);
  tl::for_range(cluster, n_rows, clusters * 2, [&](tl::Scalar<tl::i32> row) {
    const auto next = at(row + clusters);
    next.copy(b, in);
    body(at(row), a);
    at(row + clusters * 2).copy(a, in);
    body(next, b);
  });
}

/// The pieces of a row that a program walks (the looped and split-row kernels): the BLOCK-column pieces
/// from `start` (a whole number of pieces from the window's or chunk's start) below `end`, of which the
/// row's columns are [first, end) (with HEAD: a window's head may sit in the piece at `start`; without,
/// `first` is unused). As for_row_pieces, only the two end pieces (the one at `start` with HEAD, a ragged
/// last one) are masked; the whole pieces between go in one loop, each loaded one piece ahead, so that a
/// program waits on one piece while it computes the one before. `load(from, mask)` reads the piece at
/// `from` (a look-ahead past the whole pieces gets a mask that is false throughout and reads nothing);
/// `body(from, piece, in_row, c...)` gets it with its PieceMask and returns the next carried values. With
/// REVERSED the pieces go last to first (the end piece past the whole ones first): a second pass then
/// rereads first what the first pass read last, the likeliest to be still in L2.
template <int BLOCK, bool HEAD, bool REVERSED = false, class Load, class... C, class Body>
std::tuple<C...> for_row_pieces_ahead(tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> first, tl::Scalar<tl::i32> end,
                                      Load&& load, const std::tuple<C...>& init, Body&& body) {
  const auto cols = tl::arange<BLOCK>();
  using Mask = tl::Tile<tl::i1, BLOCK>;
  const auto whole_lo = HEAD ? start + BLOCK : start;                  // the first whole piece
  const auto whole_end = start + ((end - start) / BLOCK) * BLOCK;     // and the end of the last
  const auto tail_at = tl::maximum(whole_end, whole_lo);              // a ragged last piece, if any
  // One iteration at most: the piece at [lo, hi) with its mask.
  auto end_piece = [&](tl::Scalar<tl::i32> lo, tl::Scalar<tl::i32> hi, auto mask_of, const std::tuple<C...>& c) {
    return tl::for_range(lo, hi, BLOCK, c, [&](tl::Scalar<tl::i32> from, const C&... carried) {
      const Mask mask = mask_of(from);
      return body(from, load(from, mask), PieceMask<BLOCK>{mask}, carried...);
    });
  };
  auto head = [&](const std::tuple<C...>& c) {
    if constexpr (HEAD) return end_piece(start, tl::minimum(end, start + BLOCK), [&](auto from) { return columns_in(from + cols, first, end); }, c);
    else return c;
  };
  auto tail = [&](const std::tuple<C...>& c) { return end_piece(tail_at, end, [&](auto from) { return from + cols < end; }, c); };
  // Whole piece k of the loop (k = whole_lo, whole_lo + BLOCK, ...) starts at at(k); its look-ahead is
  // masked off past the whole pieces (a mask constant over each run: both ends are whole pieces apart).
  const auto turn = whole_lo + whole_end - BLOCK;
  auto at = [&](tl::Scalar<tl::i32> k) {
    if constexpr (REVERSED) return turn - k;
    else return k;
  };
  auto ahead = [&](tl::Scalar<tl::i32> k) {
    if constexpr (REVERSED) return load(at(k), at(k) + cols >= whole_lo);
    else return load(k, k + cols < whole_end);
  };
  // The reversed pass issues its first whole piece's load before its first end piece; the forward pass
  // after its head piece: issued before it, ptxas held both at once (LayerNorm's looped kernel of windows
  // went from 76 to 109 registers, its split partials from 63 to 80).
  std::optional<decltype(ahead(whole_lo))> early;
  if constexpr (REVERSED) early = ahead(whole_lo);
  std::tuple<C...> c = REVERSED ? tail(init) : head(init);
  auto first_whole = early ? *early : ahead(whole_lo);
  auto out = std::apply(
      [&](const auto&... c0) {
        return tl::for_range(whole_lo, whole_end, BLOCK, std::tuple{c0..., first_whole}, [&](tl::Scalar<tl::i32> k, decltype(c0)... cs, auto piece) {
          auto next = ahead(k + BLOCK);
          return std::tuple_cat(body(at(k), piece, PieceMask<BLOCK>{}, cs...), std::tuple{next});
        });
      },
      c);
  c = [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tuple<C...>{std::get<I>(out)...}; }(std::index_sequence_for<C...>{});
  return REVERSED ? head(c) : tail(c);
}

}  // namespace tilefuse::kernels
