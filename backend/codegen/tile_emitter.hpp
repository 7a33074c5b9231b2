// The CUDA emitter for programs with 2D tiles. Every tile value lives where the analysis's TileHome says:
// in registers in a linear layout (passes/analysis/tile_layout.hpp), in shared memory (loads that feed
// dots), or nowhere until used (lazy index and mask arithmetic, expand, broadcast), in which case it is
// computed in the layout its use needs. Values move between layouts through shared memory only when the
// layouts differ. The core is tile_emitter.cpp; loads and stores are in tile_memory.cpp, reductions and
// layout conversions in tile_reduce.cpp, and dot on tensor cores in tile_dot.cpp (mma.sync) and
// tile_wgmma.cpp (sm_90's warpgroup MMA).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "backend/codegen/bounds.hpp"
#include "backend/codegen/cuda.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::codegen {

class TileEmitter {
 public:
  TileEmitter(const ir::Function& fn, const passes::Analysis& analysis, const Options& options);
  /// The kernel's whole source; shared_bytes() is valid after it.
  std::string run();
  /// Bytes of dynamic shared memory one program needs.
  std::int64_t shared_bytes() const { return shared_high_ + scratch_bytes_; }
  /// Whether the kernel's dots may run on warpgroup MMA (the analysis allows it and there is a dot): it
  /// then carries the wgmma helpers and fences, and must be compiled for sm_90a.
  bool uses_warpgroup_mma() const { return wgmma_; }
  /// The tensor maps of the kernel's TMA copies, in parameter order; valid after run().
  const std::vector<TensorMap>& tensor_maps() const { return tensor_maps_; }

 private:
  // ---- core (tile_emitter.cpp) ----
  void instr(const ir::Instr& in);
  void check() const;
  void check_registers() const;
  /// Number of a layout among those the kernel uses (declaring its thread's coordinates on first use).
  int layout_id(const passes::TileLayout2& l);
  /// Coordinate `dim` of element `e` (a C expression in e) of layout l for this thread.
  std::string coord(const passes::TileLayout2& l, int dim, const std::string& e = "e");
  /// `e`'s element in the layout that drops dimensions `dropped` of l (a C expression in e).
  std::string part_expr(const passes::TileLayout2& l, unsigned dropped, const std::string& e = "e") const;
  /// The name of value `id` in layout `l` (materializing lazy values, converting others); scalars by name.
  std::string get(ir::ValueId id, const passes::TileLayout2& l);
  /// Element e of value id in layout l, as an operand expression.
  std::string at(ir::ValueId id, const passes::TileLayout2& l, const std::string& e = "e");
  /// Computes the pure value `in` in layout l into a new array `name`.
  void compute(const ir::Instr& in, const passes::TileLayout2& l, const std::string& name);
  /// Declares `name` as an array of l's elements of value id's register type, and assigns each `expr`.
  void assign(ir::ValueId id, const passes::TileLayout2& l, const std::string& name, const std::string& expr);
  /// The layout value `id` is kept in (its home, or the default for lazy values).
  passes::TileLayout2 layout_of(ir::ValueId id) const;
  std::string scalar(const ir::Instr& in);
  void loop(const ir::Instr& in);
  std::string v(ir::ValueId id) const;
  std::string reg_type(ir::ValueId id) const;
  /// A fresh name for a temporary.
  std::string fresh(const std::string& stem) {
    std::string name = stem;  // (appending: GCC 12 warns falsely about stem + std::to_string)
    name += std::to_string(next_name_++);
    return name;
  }
  /// Bytes of shared memory at a new offset, for the kernel's lifetime: 16-byte aligned, or 1024 for
  /// dot operands when dots may run on warpgroup MMA (its swizzled layouts repeat every 1024 bytes).
  std::int64_t allocate(std::int64_t bytes, std::int64_t align = 16);
  /// allocate() for a dot operand's buffer.
  std::int64_t allocate_operand(std::int64_t bytes) { return allocate(bytes, wgmma_ ? 1024 : 16); }
  /// The scratch area (reused by every conversion and reduction) grown to at least `bytes`.
  void need_scratch(std::int64_t bytes) { scratch_bytes_ = std::max(scratch_bytes_, (bytes + 15) / 16 * 16); }
  void barrier() { os_ << "  __syncthreads();\n"; }

  // ---- tile_memory.cpp ----
  /// A stage gather or scatter, each lane at its own offset (16-byte runs where the offsets are provably
  /// contiguous and aligned), after a barrier unless it only reads after reads.
  void stage_indexed(const ir::Instr& in);
  /// A stage copy from global memory (tl::Stage::copy) of a 1D pointer tile: asynchronous runs of 4 to
  /// 16 bytes where the pointers are provably contiguous and aligned (zero-filled where masked off), else
  /// element by element; the stage's next access waits for them.
  void stage_copy(const ir::Instr& in);
  /// Before an access of stage k: waits for this thread's copies into it, if any are in flight (the
  /// barrier that publishes them to the other threads follows, as after any write).
  void wait_for_copies(int k);
  void load(const ir::Instr& in);
  void store(const ir::Instr& in);
  /// Elements per access of a load or store of `ptr` (masked by `mask`, -1: none) in layout l.
  int vector_width(const passes::TileLayout2& l, ir::ValueId ptr, ir::ValueId mask, ir::DType dt) const;
  /// Elements of layout l's last dimension that one thread holds in consecutive registers (a run).
  static int register_run(const passes::TileLayout2& l);
  /// Elements per access the pointer tile alone allows (contiguous, aligned, in one thread's registers).
  int pointer_width(const passes::TileLayout2& l, ir::ValueId ptr, ir::DType dt) const;
  /// "m[e0] && m[e0 + 1] && ..." over a run of W of mask `mask` in layout l.
  std::string every_lane(ir::ValueId mask, const passes::TileLayout2& l, int W);
  void shared_load(const ir::Instr& in);
  /// The condition that holds for one holder of each element of layout l ("" when each is held once):
  /// the lanes and warps whose bits select no coordinate are copies.
  static std::string owner_guard(const passes::TileLayout2& l);
  /// Emits the copies of load `in` into buffer `b` at `phase` (its stage; "" for one), each only where
  /// `guard` holds ("": always), and commits them as one group.
  void copy_into(const ir::Instr& in, int buffer, const std::string& phase, const std::string& guard = "");
  /// Waits for the copies into shared buffer `buffer` (and the barrier that publishes them), if pending.
  void wait_for(int buffer);

  // ---- tile_reduce.cpp ----
  void reduce_along(const ir::Instr& in);
  void reduce_scalar(const ir::Instr& in);
  /// Combines `r` (the elements of layout `s`, or one for a scalar when s is null: partial results) across the lanes and warps whose bases
  /// in `full` have a component in the dimensions `dims` (bit d: dimension d).
  void combine(const ir::Instr& in, const passes::TileLayout2& full, unsigned dims, const passes::TileLayout2* s,
               const std::string& r, const std::string& type);
  /// value id (held as `from` in layout a) copied through shared memory into layout b as `to`.
  void convert(ir::ValueId id, const std::string& from, const passes::TileLayout2& a, const passes::TileLayout2& b,
               const std::string& to);

  // ---- tile_dot.cpp ----
  void dot(const ir::Instr& in);
  /// Whether dot `in`'s A operand is a tensor-core result of the same warps (packed from registers).
  bool a_from_registers(const ir::Instr& in) const;
  /// The shared buffer a dot operand is (or will be) read from: its row length in elements, and whether
  /// the operand is the buffer's transpose (a register operand: written untransposed, its own shape).
  std::pair<int, bool> operand_form(ir::ValueId id) const;

  /// Whether masked load `load`'s `other` (its third operand) is +0, what copies write where the mask is off.
  bool other_is_plus_zero(const ir::Instr& load) const;

  // ---- tile_tma.cpp ----
  /// A pipelined load copied by TMA: its tensor map (tensor_maps_ index) and the block's first row and
  /// column (scalars; -1: 0).
  struct TmaCopy {
    TensorMap map;
    int index = -1;
    ir::ValueId row0 = -1, col0 = -1;
  };
  /// How `load` (a pipelined load of a loop at depth 0 in a kernel on warpgroup MMA) is copied by TMA, if
  /// it can be: its pointer is `p + row * stride + col` over a pointer parameter p, with row = r0 +
  /// arange over the tile's rows and col = c0 + arange over its columns; its mask is `row < rows` and
  /// `col < stride` (rows and stride i32 parameters), its `other` +0 (what TMA writes outside the
  /// matrix); p is 16-byte aligned and a row a whole number of 16-byte vectors (the specialization says
  /// so); the tile is 16-bit elements, its columns a multiple of 64 (boxes of 128-byte rows, the swizzle
  /// the buffer already has), its rows a multiple of 8 up to 256.
  std::optional<TmaCopy> tma_copy(const ir::Instr& load) const;
  /// The block of a row-major matrix that `pointer_tile` (a 2D pointer tile of type t's shape) addresses
  /// under `mask`, as tma_copy describes it (also the checks of the kernel and the tile it names there),
  /// if TMA can move it.
  std::optional<TmaCopy> matrix_block(ir::ValueId pointer_tile, ir::ValueId mask, const ir::ValueType& t) const;
  /// Emits store `in` as a TMA store if it can be one (a block tma_copy would take, outside loops, the
  /// last global access of the kernel) and says whether it did.
  bool tma_store(const ir::Instr& in);
  /// Emits the TMA copies of `loads` (all in tma_) into stage `phase` of their buffers, issued by thread
  /// 0 when `on`, completing on the stage's mbarrier of the current loop (tma_bar_).
  void tma_prefetch(const std::vector<const ir::Instr*>& loads, const std::string& phase, const std::string& on);

  // ---- tile_wgmma.cpp ----
  /// dot on warpgroup MMA when warpgroup_fits (false: emitted nothing).
  bool warpgroup_dot(const ir::Instr& in);
  /// Whether dot `in` runs on warpgroup MMA: its result's warp grid is whole warpgroups and wgmma can read
  /// its operands' buffers.
  bool warpgroup_fits(const ir::Instr& in) const;
  /// The dots of loop `loop`'s body that can leave their wgmmas in flight into the next iteration: on
  /// warpgroup MMA, accumulating into a carried value that nothing else reads and yielding it back, with
  /// operands copied ahead by the loop or from outside it. Needs three stages or more.
  std::vector<const ir::Instr*> deferrable_dots(const ir::Instr& loop, const std::vector<const ir::Instr*>& piped) const;
  /// The generated function that issues one wgmma of shape m64 x n x k16 (A from shared memory, or from
  /// registers when a_regs; trans_a / trans_b: the operand is M- / N-major), defined once per kernel.
  std::string wgmma_helper(int n, ir::DType dt, bool a_regs, bool trans_a, bool trans_b);

  /// A tile in shared memory as a dot operand: `rows` x `cols` 16-bit elements, row-major with 16-byte
  /// chunks swizzled within each 8-row group so that ldmatrix reads are free of bank conflicts. In
  /// kernels with warpgroup MMA, rows wider than 64 elements are split into column blocks of 64 (each
  /// row-major): the canonical 128-byte swizzled layout wgmma reads (swizzled()).
  struct Buffer {
    static constexpr int kTmaPending = -4;  ///< group of a buffer the current iteration's TMA copies fill
    std::int64_t offset = 0;
    int rows = 0, cols = 0;
    int group = -1;  ///< its last commit group of copies (-1: none pending; -2: written by plain stores; kTmaPending: TMA copies)
    std::string phase;  ///< pipelined: the variable naming the stage a loop iteration reads ("" for one)
    std::int64_t bytes() const { return std::int64_t{rows} * cols * 2; }
  };
  /// The buffer a value lives in, and whether the value is its transpose.
  struct View {
    int buffer = -1;
    bool transposed = false;
  };
  /// The byte offset expression of (row, 16-byte chunk) in a buffer: chunk c of row r lies in column
  /// block c / (R / 16), R = the block's row bytes, at chunk (c % (R / 16)) ^ (the swizzle of r).
  std::string swizzled(const Buffer& b, const std::string& row, const std::string& chunk, const std::string& phase) const;
  std::string swizzled(const Buffer& b, const std::string& row, const std::string& chunk) const { return swizzled(b, row, chunk, b.phase); }
  /// Writes x (a tile in layout l, its elements of dtype dt) into buffer `b` at its swizzled places, in
  /// runs of W elements (a run of consecutive registers, within one 16-byte chunk), each element by its
  /// first holder only.
  void write_buffer(const Buffer& b, const passes::TileLayout2& l, const std::string& x, ir::DType dt, int W);
  /// Loads of a loop's body that are copied ahead (they feed only dots and depend on nothing but the
  /// induction variable and values from outside the loop).
  std::vector<const ir::Instr*> pipelined_loads(const ir::Instr& loop) const;
  /// By value: whether `loop`'s body defines it (its carried values and induction variable excluded).
  std::vector<bool> body_values(const ir::Instr& loop) const;
  /// Emits the copies of the pipelined `loads` for the iteration whose induction variable is `iv` (when
  /// it is below the loop's end), into stage `phase`: the body's scalars and tiles they need are computed
  /// again with the loop's variable set to iv (nothing the body computed for its own iteration is reused).
  /// Scopes of memo_ at and above `memo_floor` (the body's) are set aside meanwhile.
  void prefetch(const ir::Instr& loop, const std::vector<const ir::Instr*>& loads, const std::string& iv, const std::string& phase,
                std::size_t memo_floor);
  /// Emits the loop body's copies ahead if they are still to come at this loop depth (after the body's
  /// first barrier, or at its end).
  void emit_pending_prefetch();
  /// The shared-memory view of a dot operand, writing register operands into a buffer first.
  View operand_view(ir::ValueId id);
  /// The views of dot `in`'s operands {A, B} (A's left empty when `a_regs`: packed from registers), once
  /// the copies into them have landed.
  std::pair<View, View> dot_operands(const ir::Instr& in, bool a_regs);
  /// Declares dot `in`'s f32 result array `r` in its layout, set to its accumulator operand (or zero).
  void dot_result(const ir::Instr& in, const std::string& r);
  /// Fragment register q (0 to 3) of a 16x16 block of dot `in`'s register A operand at k step `kt`, packed
  /// from its f32 source; `first_tile` (text ending in " + ", or "") offsets the block's 8-column tiles.
  std::string a_fragment(const ir::Instr& in, int q, const std::string& first_tile);

  const ir::Function& fn_;
  const passes::Analysis& a_;
  const Options& opt_;
  int threads_;
  int warps_;
  std::ostringstream os_;                       // the body
  std::ostringstream coords_;                   // per-layout thread coordinates, declared at the top
  std::vector<const ir::Instr*> defs_;          // by value: its defining instruction (null for block args)
  std::vector<std::vector<const ir::Instr*>> users_;  // by value: the instructions that read it (yields: the loop)
  /// A cast of a tensor-core result to f16/bf16 whose only uses are dots' A operands: never materialized,
  /// the dots pack the f32 values straight into fragments (the packing rounds the same way).
  bool packed_by_dot(ir::ValueId id) const;
  /// A half tile (f16, bf16) loaded or gathered only to be written unchanged by one store or stage
  /// scatter of its dtype (StagedRows' runs into and out of a stage): held as its storage words, with no
  /// widening on the way in and no rounding on the way out.
  bool moved_as_words(ir::ValueId id) const;
  /// `element` (of `value`'s registers) as the storage word a store or scatter of `dtype` writes: the
  /// element itself where the value is moved as words, else its rounding.
  std::string word_of(ir::ValueId value, ir::DType dtype, const std::string& element) const;
  /// The registers of a load or gather's `result` and what they keep of the storage word `word` read: the
  /// word where the result is moved as words, else its widening.
  std::string declare_loaded(ir::ValueId result, int per_thread) const;
  std::string kept_of(ir::ValueId result, ir::DType dtype, const std::string& word) const;
  std::vector<passes::TileLayout2> layouts_;
  std::vector<std::map<std::string, std::string>> memo_;  // scope stack: "value@layout" -> name
  std::map<ir::ValueId, View> views_;           // values in shared memory
  std::map<const ir::Instr*, int> piped_;       // pipelined loads -> their buffer
  std::map<const ir::Instr*, TmaCopy> tma_;     // pipelined loads copied by TMA
  std::vector<TensorMap> tensor_maps_;          // their tensor maps, in parameter order
  std::string tma_bar_;                         // the current loop's mbarriers (one per stage), "" for none
  int loops_ = 0;                               // loops emitted (names their stage variables)
  std::vector<Buffer> buffers_;
  int groups_committed_ = 0;                    // cp.async commit groups issued so far (in emission order)
  bool reads_pending_ = false;                  // shared buffers read since the last barrier
  /// How a stage was last accessed at this point of the emitted code (a barrier goes before an access
  /// unless both are reads or both copies, or the stage was never accessed).
  enum class StageUse : std::uint8_t { none, read, write, copied, unknown };
  std::vector<std::int64_t> stage_at_;          // byte offset of each stage in shared memory
  std::vector<StageUse> stage_last_;
  std::vector<bool> stage_copying_;             // stage copies issued and not yet waited for
  std::int64_t shared_top_ = 0;                 // next free byte (buffers of finished loops are free again)
  std::int64_t shared_high_ = 0;                // the most ever in use: where the scratch area starts
  std::int64_t scratch_bytes_ = 0;
  int next_name_ = 0;
  int loop_depth_ = 0;
  // A loop body's copies for a later iteration, issued after the body's first barrier (which every thread
  // reaches only once done with the previous iteration's reads): one barrier per iteration, not two.
  std::function<void()> pending_prefetch_;
  int pending_prefetch_depth_ = -1;
  const std::vector<bool>* prefetch_fresh_ = nullptr;  // while prefetching: the loop body's values, computed anew
  bool wgmma_ = false;                          // uses_warpgroup_mma()
  std::set<const ir::Instr*> deferred_;         // dots whose wgmmas stay in flight across iterations (deferrable_dots)
  std::map<std::string, std::string> wgmma_helpers_;  // name -> definition, of the wgmma shapes the kernel issues

 public:
  BoundsChecks bounds_;  // debug bounds checks (off unless Options::bounds_checks); its sites go to Generated
};

}  // namespace tilefuse::codegen
