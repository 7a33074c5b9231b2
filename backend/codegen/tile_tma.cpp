// TMA copies (sm_90): which pipelined loads of a loop the tensor memory accelerator can copy (a block of
// a row-major matrix whose masks are the matrix's bounds), and the copies themselves. One thread issues a
// stage's copies after arriving on the stage's mbarrier with the bytes to expect; every thread waits on
// that mbarrier where it would wait for its own cp.async groups (wait_for). The buffers keep the layout
// the cp.async copies write: rows of 128 bytes with their 16-byte chunks swizzled by the row's low three
// bits, column blocks of 64 elements one after the other, which is what TMA's 128-byte swizzle writes.
// A store of such a block, last in the kernel, goes the other way (tma_store).
#include "backend/codegen/tile_emitter.hpp"

#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;

namespace {

// An index vector start + arange<extent> (start -1: the arange alone).
struct Index {
  ir::ValueId start = -1;
  std::int64_t extent = 0;
  bool operator==(const Index&) const = default;
};

}  // namespace

std::optional<TileEmitter::TmaCopy> TileEmitter::tma_copy(const ir::Instr& load) const {
  if (load.args.size() < 3 || !other_is_plus_zero(load)) return std::nullopt;
  return matrix_block(load.args[0], load.args[1], fn_.values[load.result]);
}

std::optional<TileEmitter::TmaCopy> TileEmitter::matrix_block(ir::ValueId pointer_tile, ir::ValueId mask, const ir::ValueType& t) const {
  if (!opt_.tma || !uses_warpgroup_mma() || opt_.bounds_checks || loop_depth_ != 0 || tensor_maps_.size() >= kMaxTensorMaps)
    return std::nullopt;
  if (t.rank != 2 || ir::dtype_bytes(t.dtype) != 2 || t.dims[1] % 64 != 0 || t.dims[0] % 8 != 0 || t.dims[0] > 256) return std::nullopt;
  auto def = [&](ir::ValueId x) { return x >= 0 ? defs_[x] : nullptr; };
  // x through integer casts and broadcasts.
  auto strip = [&](ir::ValueId x) {
    for (const ir::Instr* d = def(x); d && (d->op == Op::broadcast || (d->op == Op::cast && ir::is_int(fn_.values[x].dtype) &&
                                                                         ir::is_int(fn_.values[d->args[0]].dtype)));
         d = def(x))
      x = d->args[0];
    return x;
  };
  // The parameter value a scalar is (through integer casts and splats), or -1; param_index gives its number.
  auto param_of = [&](ir::ValueId x) -> ir::ValueId {
    x = strip(x);
    if (const ir::Instr* d = def(x); d && d->op == Op::splat) x = strip(d->args[0]);
    const ir::Instr* d = def(x);
    return d && d->op == Op::param && fn_.values[x].rank == 0 ? x : -1;
  };
  auto param_index = [&](ir::ValueId x) { return defs_[x]->as<ir::attr::Param>().index; };
  // A 1D index vector start + arange (either order) or arange alone, start an i32 scalar.
  auto index_of = [&](ir::ValueId x) -> std::optional<Index> {
    x = strip(x);
    const ir::Instr* d = def(x);
    if (!d) return std::nullopt;
    if (d->op == Op::arange) return Index{-1, fn_.values[x].dims[0]};
    if (d->op != Op::add) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const ir::Instr* a = def(strip(d->args[k]));
      const ir::Instr* s = def(strip(d->args[1 - k]));
      if (a && a->op == Op::arange && s && s->op == Op::splat && fn_.values[s->args[0]].dtype == ir::DType::i32)
        return Index{s->args[0], fn_.values[x].dims[0]};
    }
    return std::nullopt;
  };
  // A 2D index running along one dimension: expand of an index vector (through casts and broadcasts).
  auto along = [&](ir::ValueId x) -> std::optional<std::pair<int, Index>> {
    const ir::Instr* d = def(strip(x));
    if (!d || d->op != Op::expand) return std::nullopt;
    const auto ix = index_of(d->args[0]);
    if (!ix) return std::nullopt;
    return std::pair{d->as<ir::attr::Axis>().axis == 1 ? 0 : 1, *ix};
  };
  // The pointer: ptr_adds (through broadcasts) down to a splat of a pointer parameter.
  std::vector<ir::ValueId> offsets;
  ir::ValueId p = pointer_tile;
  ir::ValueId pointer = -1;
  for (;;) {
    p = strip(p);
    const ir::Instr* d = def(p);
    if (!d) return std::nullopt;
    if (d->op == Op::ptr_add) {
      offsets.push_back(d->args[1]);
      p = d->args[0];
      continue;
    }
    if (d->op == Op::splat) pointer = param_of(d->args[0]);
    break;
  }
  if (pointer < 0 || offsets.size() != 2) return std::nullopt;
  // The offsets: row * stride along dimension 0 and col along dimension 1.
  std::optional<Index> row, col;
  ir::ValueId stride = -1;
  for (ir::ValueId o : offsets) {
    const ir::Instr* d = def(strip(o));
    if (!d) return std::nullopt;
    if (d->op == Op::mul) {
      for (int k = 0; k < 2 && !row; ++k)
        if (const auto a = along(d->args[k]); a && a->first == 0 && param_of(d->args[1 - k]) >= 0) {
          row = a->second;
          stride = param_of(d->args[1 - k]);
        }
      if (!row) return std::nullopt;
    } else if (const auto a = along(o); a && a->first == 1 && !col) {
      col = a->second;
    } else {
      return std::nullopt;
    }
  }
  if (!row || !col || row->extent != t.dims[0] || col->extent != t.dims[1]) return std::nullopt;
  // The mask: row < rows and col < stride, both there (anything else: no TMA).
  if (mask < 0) return std::nullopt;
  ir::ValueId rows_bound = -1, cols_bound = -1;
  std::vector<ir::ValueId> terms{mask};
  while (!terms.empty()) {
    const ir::ValueId m = strip(terms.back());
    terms.pop_back();
    const ir::Instr* d = def(m);
    if (!d) return std::nullopt;
    if (d->op == Op::logical_and) {
      terms.push_back(d->args[0]);
      terms.push_back(d->args[1]);
      continue;
    }
    if (d->op != Op::lt) return std::nullopt;
    const auto a = along(d->args[0]);
    const ir::ValueId bound = param_of(d->args[1]);
    if (!a || bound < 0) return std::nullopt;
    if (a->first == 0 && a->second == *row) rows_bound = bound;
    else if (a->first == 1 && a->second == *col) cols_bound = bound;
    else return std::nullopt;
  }
  if (rows_bound < 0 || cols_bound != stride) return std::nullopt;
  for (ir::ValueId q : {rows_bound, cols_bound})
    if (fn_.values[q].dtype != ir::DType::i32 || fn_.values[q].pointer) return std::nullopt;
  // Alignment the specialization proves: the matrix's start on 16 bytes, its rows whole 16-byte vectors.
  if (a_.axis[pointer].divisibility < 16 || a_.axis[stride].divisibility * 2 < 16) return std::nullopt;
  TmaCopy c;
  c.map = TensorMap{param_index(pointer), param_index(rows_bound), param_index(cols_bound), static_cast<int>(t.dims[0]), 64, t.dtype};
  c.row0 = row->start;
  c.col0 = col->start;
  return c;
}

void TileEmitter::tma_prefetch(const std::vector<const ir::Instr*>& loads, const std::string& phase, const std::string& on) {
  std::int64_t bytes = 0;
  for (const ir::Instr* l : loads) bytes += buffers_[piped_.at(l)].bytes();
  const std::string bar = tma_bar_ + "_at + 8 * (" + phase + ")";
  os_ << "  if (tid == 0 && " << on << ") {  // TMA: thread 0 copies the stage, completing on its mbarrier\n";
  os_ << "    tf_mbar_expect(" << bar << ", " << bytes << ");\n";
  for (const ir::Instr* l : loads) {
    const TmaCopy& c = tma_.at(l);
    const Buffer& b = buffers_[piped_.at(l)];
    const std::string row0 = c.row0 < 0 ? "0" : v(c.row0), col0 = c.col0 < 0 ? "0" : v(c.col0);
    for (int j = 0; j < b.cols / 64; ++j)
      os_ << "    tf_tma2d(tf_sbase + " << b.offset << " + (" << phase << ") * " << b.bytes() << " + " << std::int64_t{j} * b.rows * 128
          << ", &tf_map" << c.index << ", " << col0 << (j ? " + " + std::to_string(64 * j) : "") << ", " << row0 << ", " << bar << ");\n";
  }
  os_ << "  }\n";
}

// A store of a block of a row-major matrix (the shape tma_copy takes, masked by the matrix's bounds) as
// the kernel's last global access: the tile goes into shared memory in the swizzled layout TMA reads
// (16-byte chunks of each 128-byte row XORed with the row's low three bits, column blocks of 64 one after
// the other), then thread 0 stores it with one bulk tensor copy per column block, which writes whole
// 128-byte lines and leaves out whatever lies outside the matrix. Thread by thread, the same store wrote
// 4 bytes at a time from the tensor cores' layout, 16 of every 32-byte sector per instruction.
bool TileEmitter::tma_store(const ir::Instr& in) {
  const ir::ValueId value = in.args[1];
  const ir::ValueType& t = fn_.values[value];
  if (in.args.size() < 3) return false;
  auto c = matrix_block(in.args[0], in.args[2], t);
  if (!c) return false;
  // Nothing after it touches global memory: the bulk copy completes after the kernel's own accesses.
  bool seen = false, later = false;
  ir::walk(fn_.body, [&](const ir::Instr& x) {
    if (&x == &in) seen = true;
    else if (seen && op_info(x.op).family == ir::Family::memory) later = true;
  });
  if (later) return false;
  c->index = static_cast<int>(tensor_maps_.size());
  tensor_maps_.push_back(c->map);
  Buffer b;
  b.rows = static_cast<int>(t.dims[0]);
  b.cols = static_cast<int>(t.dims[1]);
  b.offset = allocate_operand(b.bytes());
  if (reads_pending_) {
    barrier();
    reads_pending_ = false;
  }
  const passes::TileLayout2 l = layout_of(value);
  const std::string x = get(value, l);
  os_ << "  // TMA store: the tile into shared memory as 64-column blocks of 128-byte swizzled rows, then thread 0\n"
      << "  // copies each block to the matrix (tf_map" << c->index << "), leaving out what lies outside it\n";
  write_buffer(b, l, x, t.dtype, std::min(register_run(l), 8));
  os_ << "  tf_fence_async_shared();  // the copy engine reads what these threads wrote\n";
  barrier();
  const std::string row0 = c->row0 < 0 ? "0" : v(c->row0), col0 = c->col0 < 0 ? "0" : v(c->col0);
  os_ << "  if (tid == 0) {\n";
  for (int j = 0; j < b.cols / 64; ++j)
    os_ << "    tf_tma2d_store(&tf_map" << c->index << ", " << col0 << (j ? " + " + std::to_string(64 * j) : "") << ", " << row0 << ", tf_sbase + "
        << b.offset + std::int64_t{j} * b.rows * 128 << ");\n";
  os_ << "    tf_tma_store_wait();  // (the block's shared memory must outlive the copies' reads of it)\n";
  os_ << "  }\n";
  return true;
}

}  // namespace tilefuse::codegen
