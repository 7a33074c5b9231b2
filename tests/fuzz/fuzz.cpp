// The differential fuzzer (fuzz.hpp): generator, runners, comparison and shrinker.
#include "tests/fuzz/fuzz.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "backend/driver/driver.hpp"
#include "backend/interp/interp.hpp"
#include "backend/numerics/float16.hpp"
#include "backend/runtime/buffer.hpp"

namespace tilefuse::fuzz {

using ir::DType;
using ir::Op;

namespace {

constexpr DType kStorable[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr DType kNumbers[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64};

ir::ValueType scalar(DType d, bool pointer = false) { return ir::ValueType{d, pointer, 0, {1, 1}}; }
ir::ValueType tile(DType d, std::int64_t n, bool pointer = false) { return ir::ValueType{d, pointer, 1, {n, 1}}; }
ir::ValueType tile2(DType d, std::int64_t m, std::int64_t n, bool pointer = false) { return ir::ValueType{d, pointer, 2, {m, n}}; }

// splitmix64: the family a seed falls in, independent of the generator's own stream.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Builds one random program into a Case.
class Generator {
 public:
  Generator(std::uint64_t seed, Family family) : rng_(seed), family_(family) {
    c_.seed = seed;
    c_.family = family;
  }

  Case run() {
    if (family_ == Family::tiles) return run_tiles();
    ir::Function& fn = c_.fn;
    fn.name = "fuzz_" + std::to_string(c_.seed);
    static constexpr int kBlocks[] = {32, 64, 128, 256, 512, 1024};
    n_ = kBlocks[pick(6)];
    const int warps = 1 << pick(4);  // 1 to 8
    c_.options.num_warps = warps;
    int programs = 1 + pick(3);
    if (family_ == Family::clusters) {  // a grid of whole clusters of 2 or 4 programs
      programs = chance(2) ? 2 : 4;
      c_.options.cluster_size = chance(2) ? 2 : programs;
    }
    c_.grid = Grid{programs};
    const std::int64_t full = std::int64_t{programs} * n_;
    // The valid length: the whole grid (masks fold away), a ragged tail, or a multiple of 8 short of it.
    const int tail = pick(4);
    length_ = tail == 0 ? full : tail == 1 ? full - 1 - pick(static_cast<int>(std::min<std::int64_t>(n_ - 1, 40)))
                                           : tail == 2 ? full - 8 * (1 + pick(3)) : std::max<std::int64_t>(1, full - n_ / 2);
    if (length_ < 1) length_ = 1;
    masked_everywhere_ = length_ != full || chance(3);

    // Parameters: inputs, outputs, then scalars n (i32), k (i32, a loop's trip count), s (f32).
    const int inputs = 1 + pick(3), outputs = 1 + pick(3);
    add_buffers(inputs, outputs, [&] { return kStorable[pick(5)]; });
    n_param_ = add_scalar_param("n", DType::i32, Arg::of_i32(static_cast<std::int32_t>(length_)));
    k_param_ = add_scalar_param("k", DType::i32, Arg::of_i32(pick(4)));
    s_param_ = add_scalar_param("s", DType::f32, Arg::of_f32(special_float()));

    // The frame every program shares: offsets and the mask of the valid elements.
    const std::vector<ir::ValueId> params = emit_params();
    const auto pid = emit(Op::program_id, scalar(DType::i32), {}, ir::attr::Axis{0});
    const auto base = emit(Op::mul, scalar(DType::i32), {pid, i32(n_)});
    const auto lanes = emit(Op::arange, tile(DType::i32, n_), {});
    offsets_ = emit(Op::add, tile(DType::i32, n_), {splat(base), lanes});
    mask_ = emit(Op::lt, tile(DType::i1, n_), {offsets_, splat(params[n_param_])});
    total_ = params[n_param_];
    return finish(params, inputs, outputs, 12);
  }

 private:
  // The shared tail of every family: the pool's first values, the inputs' loads, `steps` random
  // operations (4 to 3 + most_steps; and one of the family's own, so that each program of a family has
  // one), the stores.
  Case finish(const std::vector<ir::ValueId>& params, int inputs, int outputs, int most_steps) {
    ir::Function& fn = c_.fn;
    params_ = params;
    inputs_ = inputs;
    pool_.push_back(offsets_);
    pool_.push_back(mask_);
    pool_.push_back(splat(params[s_param_]));
    for (int i = 0; i < inputs; ++i) pool_.push_back(load(params[i], fn.params[i].type.dtype));
    const int steps = 4 + pick(most_steps);
    for (int i = 0; i < steps; ++i) step(params);
    if (family_ != Family::rows) family_step(any_number());
    for (int i = 0; i < outputs; ++i) store(params[inputs + i], fn.params[inputs + i].type.dtype);
    c_.options.param_names.clear();
    for (const auto& p : fn.params) c_.options.param_names.push_back(p.name);
    return std::move(c_);
  }

  // 2D tiles: each program owns an m x n block of rows of row-major matrices with `c` columns (the row
  // stride; ragged, equal to n, or wider than n), `n` of whose rows are valid; masks on both edges.
  Case run_tiles() {
    ir::Function& fn = c_.fn;
    fn.name = "fuzz_" + std::to_string(c_.seed);
    static constexpr int kSides[] = {16, 32, 64};
    rank_ = 2;
    m_ = kSides[pick(3)];
    n_ = kSides[pick(3)];
    // Warps: each dot result needs 16 rows and 8 columns per warp, and a carried tile at most 64
    // registers per thread (the emitter's register check).
    const int most = std::min(8, (m_ / 16) * (n_ / 8)), least = std::max(1, m_ * n_ / 2048);
    c_.options.num_warps = std::clamp(1 << pick(4), least, most);
    c_.options.num_stages = 1 + pick(4);
    const int programs = 1 + pick(3);
    c_.grid = Grid{programs};
    const std::int64_t full = std::int64_t{programs} * m_;
    const int tail = pick(3);
    rows_ = tail == 0 ? full : tail == 1 ? full - 1 - pick(std::min(m_ - 1, 20)) : std::max<std::int64_t>(1, full - m_ / 2);
    const int width = pick(3);
    cols_ = width == 0 ? n_ : width == 1 ? std::max(1, n_ - 1 - pick(n_ / 2)) : n_ + 1 + pick(7);
    masked_everywhere_ = rows_ != full || cols_ < n_ || chance(3);
    length_ = rows_ * cols_;

    const int inputs = 1 + pick(3), outputs = 1 + pick(2);
    static constexpr DType kHalves[] = {DType::f16, DType::bf16};
    add_buffers(inputs, outputs, [&] { return chance(2) ? kHalves[pick(2)] : kStorable[pick(5)]; });  // halves often: what dot reads
    n_param_ = add_scalar_param("n", DType::i32, Arg::of_i32(static_cast<std::int32_t>(rows_)));
    k_param_ = add_scalar_param("k", DType::i32, Arg::of_i32(pick(4)));
    s_param_ = add_scalar_param("s", DType::f32, Arg::of_f32(special_float()));
    c_param_ = add_scalar_param("c", DType::i32, Arg::of_i32(static_cast<std::int32_t>(cols_)));

    const std::vector<ir::ValueId> params = emit_params();
    const auto pid = emit(Op::program_id, scalar(DType::i32), {}, ir::attr::Axis{0});
    const auto base = emit(Op::mul, scalar(DType::i32), {pid, i32(m_)});
    const auto rows = emit(Op::add, tile(DType::i32, m_), {emit(Op::splat, tile(DType::i32, m_), {base}), emit(Op::arange, tile(DType::i32, m_), {})});
    rows_2d_ = column(rows, m_, n_);
    cols_2d_ = row(emit(Op::arange, tile(DType::i32, n_), {}), m_, n_);
    offsets_ = emit(Op::add, shaped(DType::i32), {emit(Op::mul, shaped(DType::i32), {rows_2d_, splat(params[c_param_])}), cols_2d_});
    rows_in_ = emit(Op::lt, shaped(DType::i1), {rows_2d_, splat(params[n_param_])});
    mask_ = emit(Op::logical_and, shaped(DType::i1), {rows_in_, emit(Op::lt, shaped(DType::i1), {cols_2d_, splat(params[c_param_])})});
    total_ = emit(Op::mul, scalar(DType::i32), {params[n_param_], params[c_param_]});
    return finish(params, inputs, outputs, 10);
  }

  // A 1D tile of `len` as the column [len, 1] (or row [1, len]) repeated to [rows, cols].
  ir::ValueId column(ir::ValueId x, std::int64_t rows, std::int64_t cols) {
    const DType d = type(x).dtype;
    return emit(Op::broadcast, tile2(d, rows, cols), {emit(Op::expand, tile2(d, rows, 1), {x}, ir::attr::Axis{1})});
  }
  ir::ValueId row(ir::ValueId x, std::int64_t rows, std::int64_t cols) {
    const DType d = type(x).dtype;
    return emit(Op::broadcast, tile2(d, rows, cols), {emit(Op::expand, tile2(d, 1, cols), {x}, ir::attr::Axis{0})});
  }
  ir::ValueType shaped(DType d, bool pointer = false) const {
    return rank_ == 1 ? tile(d, n_, pointer) : tile2(d, m_, n_, pointer);
  }

  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  bool chance(int one_in) { return pick(one_in) == 0; }

  // Values at the edges of each type, and ordinary ones.
  float special_float() {
    static constexpr float kSpecial[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-40f, -3e-39f, 1e30f, -1e30f, 65504.0f, 7e4f,
                                         std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                         std::numeric_limits<float>::quiet_NaN(), 3.4e38f};
    if (chance(8)) return kSpecial[pick(14)];
    return std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng_);
  }
  std::int64_t special_int(DType d) {
    const std::int64_t lo = d == DType::i32 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int64_t>::min();
    const std::int64_t hi = d == DType::i32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
    if (chance(8)) {
      const std::int64_t s[] = {0, 1, -1, lo, hi, lo + 1, hi - 1, 65536, -65536};
      return s[pick(9)];
    }
    return std::uniform_int_distribution<std::int64_t>(-1000, 1000)(rng_);
  }
  void fill(Buffer& b) {
    const int bytes = ir::dtype_bytes(b.dtype);
    b.bytes.assign((b.count + b.shift) * bytes, 0xA5);  // outputs keep the poison
    if (b.output) return;
    for (std::size_t j = 0; j < b.count; ++j) {
      std::uint8_t* p = b.bytes.data() + (b.shift + j) * bytes;
      switch (b.dtype) {
        case DType::f32: { const float f = special_float(); std::memcpy(p, &f, 4); break; }
        case DType::f16: { const std::uint16_t h = float_to_half_bits(special_float()); std::memcpy(p, &h, 2); break; }
        case DType::bf16: { const std::uint16_t h = float_to_bf16_bits(special_float()); std::memcpy(p, &h, 2); break; }
        case DType::i32: { const auto v = static_cast<std::int32_t>(special_int(DType::i32)); std::memcpy(p, &v, 4); break; }
        case DType::i64: { const std::int64_t v = special_int(DType::i64); std::memcpy(p, &v, 8); break; }
        case DType::i1: break;
      }
    }
  }
  // `inputs` then `outputs` buffers of length_ elements, each of the dtype `dtype()` picks (called first, so
  // that a seed's choices come in the same order), some shifted off alignment, inputs filled.
  template <class PickDtype>
  void add_buffers(int inputs, int outputs, PickDtype&& dtype) {
    for (int i = 0; i < inputs + outputs; ++i) {
      Buffer b;
      b.dtype = dtype();
      b.output = i >= inputs;
      b.shift = chance(4) ? 1 + pick(3) : 0;
      b.count = static_cast<std::size_t>(length_);
      fill(b);
      c_.param_buffer.push_back(static_cast<int>(c_.buffers.size()));
      c_.fn.params.push_back(ir::Param{(b.output ? "out" : "in") + std::to_string(i), scalar(b.dtype, true)});
      c_.buffers.push_back(std::move(b));
    }
  }
  // One param instruction per parameter, in order.
  std::vector<ir::ValueId> emit_params() {
    std::vector<ir::ValueId> params;
    for (std::size_t i = 0; i < c_.fn.params.size(); ++i)
      params.push_back(emit(Op::param, c_.fn.params[i].type, {}, ir::attr::Param{int(i)}));
    return params;
  }
  int add_scalar_param(const std::string& name, DType d, Arg value) {
    c_.fn.params.push_back(ir::Param{name, scalar(d)});
    c_.param_buffer.push_back(-1);
    c_.scalars.push_back(value);
    return static_cast<int>(c_.fn.params.size()) - 1;
  }

  ir::ValueId emit(Op op, const ir::ValueType& type, std::vector<ir::ValueId> args, ir::Attribute attr = {}) {
    ir::Instr in;
    in.op = op;
    in.args = std::move(args);
    in.attr = attr;
    in.where = "fuzz:" + std::to_string(c_.seed);
    in.result = c_.fn.add_value(type);
    block_->push_back(std::move(in));
    return block_->back().result;
  }
  // An instruction with no result (a store, a stage write).
  void effect(Op op, std::vector<ir::ValueId> args, ir::Attribute attr) {
    ir::Instr in;
    in.op = op;
    in.args = std::move(args);
    in.attr = attr;
    in.where = "fuzz:" + std::to_string(c_.seed);
    block_->push_back(std::move(in));
  }
  ir::ValueId i32(std::int64_t v) { return emit(Op::constant, scalar(DType::i32), {}, ir::attr::Constant{double(v)}); }
  const ir::ValueType& type(ir::ValueId v) const { return c_.fn.values[v]; }
  ir::ValueId splat(ir::ValueId s) { return emit(Op::splat, shaped(type(s).dtype, type(s).pointer), {s}); }
  ir::ValueId constant(DType d, double v) { return splat(emit(Op::constant, scalar(d), {}, ir::attr::Constant{v})); }
  // The rows family draws from the first three hints, as it always has (its seeds keep their programs);
  // the others from every hint, evict_last included.
  ir::Attribute hint() { return ir::attr::Memory{static_cast<ir::CacheHint>(pick(family_ == Family::rows ? 3 : ir::kCacheHints))}; }

  ir::ValueId load(ir::ValueId ptr, DType d) {
    const auto ptrs = emit(Op::ptr_add, shaped(d, true), {splat(ptr), offsets_});
    if (!masked_everywhere_ && chance(2)) return emit(Op::load, shaped(d), {ptrs}, hint());
    if (chance(2)) return emit(Op::load, shaped(d), {ptrs, mask_, constant(d, 0)}, hint());
    return emit(Op::load, shaped(d), {ptrs, mask_, constant(d, ir::is_float(d) ? special_float() : double(special_int(DType::i32) % 100))}, hint());
  }
  void store(ir::ValueId ptr, DType d) {
    const auto ptrs = emit(Op::ptr_add, shaped(d, true), {splat(ptr), offsets_});
    const auto value = of_dtype(d);
    if (!masked_everywhere_ && chance(2)) effect(Op::store, {ptrs, value}, hint());
    else effect(Op::store, {ptrs, value, mask_}, hint());
  }

  // A pool value of dtype d (cast from another when there is none, or sometimes anyway).
  ir::ValueId of_dtype(DType d) {
    std::vector<ir::ValueId> same;
    for (auto v : pool_)
      if (type(v).dtype == d) same.push_back(v);
    if (!same.empty() && !chance(4)) return same[pick(static_cast<int>(same.size()))];
    const auto from = pool_[pick(static_cast<int>(pool_.size()))];
    if (type(from).dtype == d) return from;
    return emit(Op::cast, shaped(d), {from});
  }
  ir::ValueId any_number() {
    for (int tries = 0; tries < 8; ++tries) {
      const auto v = pool_[pick(static_cast<int>(pool_.size()))];
      if (type(v).dtype != DType::i1) return v;
    }
    return of_dtype(kNumbers[pick(5)]);
  }

  // One random operation on pool values; its result joins the pool.
  void step(const std::vector<ir::ValueId>& params) {
    const auto x = any_number();
    const DType d = type(x).dtype;
    const bool f = ir::is_float(d);
    // The rows family draws from the first ten kinds only, as the generator always has (its seeds keep
    // their programs); the others add their own kinds (family_step).
    switch (pick(family_ == Family::rows ? 10 : 12)) {
      case 0: case 1: {  // binary arithmetic
        static constexpr Op kFloat[] = {Op::add, Op::sub, Op::mul, Op::div, Op::minimum, Op::maximum};
        static constexpr Op kInt[] = {Op::add, Op::sub, Op::mul, Op::minimum, Op::maximum};
        const Op op = f ? kFloat[pick(6)] : kInt[pick(5)];
        pool_.push_back(emit(op, type(x), {x, of_dtype(d)}));
        break;
      }
      case 2: {  // integer division and remainder by a nonzero constant (by zero is an error, tested elsewhere)
        if (f) return;
        const int k = (1 + pick(9)) * (chance(2) ? -1 : 1);
        pool_.push_back(emit(chance(2) ? Op::div : Op::rem, type(x), {x, constant(d, k)}));
        break;
      }
      case 3: {  // unary
        static constexpr Op kFloat[] = {Op::neg, Op::exp, Op::exp2, Op::log, Op::sqrt, Op::rsqrt, Op::abs, Op::erf};
        static constexpr Op kInt[] = {Op::neg, Op::abs};
        pool_.push_back(emit(f ? kFloat[pick(8)] : kInt[pick(2)], type(x), {x}));
        break;
      }
      case 4: {  // comparison, then maybe logic and select
        static constexpr Op kCmp[] = {Op::lt, Op::le, Op::gt, Op::ge, Op::eq, Op::ne};
        auto m = emit(kCmp[pick(6)], shaped(DType::i1), {x, of_dtype(d)});
        if (chance(2)) m = emit(chance(2) ? Op::logical_and : Op::logical_or, shaped(DType::i1), {m, mask_});
        if (chance(4)) m = emit(Op::logical_not, shaped(DType::i1), {m});
        pool_.push_back(m);
        pool_.push_back(emit(Op::select, type(x), {m, x, of_dtype(d)}));
        break;
      }
      case 5: {  // cast to any dtype
        const DType to = kNumbers[pick(5)];
        if (to != d) pool_.push_back(emit(Op::cast, shaped(to), {x}));
        break;
      }
      case 6: {  // reduction to a scalar (2D: along an axis, to a 1D tile), used as a tile again
        if (rank_ == 2) {
          static constexpr Op kAlong[] = {Op::max_along, Op::min_along, Op::sum_along};
          const int axis = pick(2);
          const auto r = emit(kAlong[pick(3)], axis == 1 ? tile(d, m_) : tile(d, n_), {x}, ir::attr::Axis{axis});
          const auto back = axis == 1 ? column(r, m_, n_) : row(r, m_, n_);
          pool_.push_back(emit(chance(2) ? Op::add : Op::maximum, type(x), {x, back}));
          break;
        }
        static constexpr Op kReduce[] = {Op::reduce_max, Op::reduce_min, Op::reduce_sum};
        const auto r = emit(kReduce[pick(3)], scalar(d), {x});
        pool_.push_back(emit(chance(2) ? Op::add : Op::maximum, type(x), {x, splat(r)}));
        break;
      }
      case 7: {  // a loop carrying a tile (and the trip count k from the arguments: 0 to 3)
        if (block_ != &c_.fn.body) return;
        ir::Instr loop;
        loop.op = Op::loop;
        loop.args = {i32(0), params[k_param_], i32(1), x};
        loop.block_args = {c_.fn.add_value(scalar(DType::i32)), c_.fn.add_value(type(x))};
        std::vector<ir::Instr>* outer = block_;
        block_ = &loop.body;
        const auto iv = splat(loop.block_args[0]);
        const auto ivd = d == DType::i32 ? iv : emit(Op::cast, type(x), {iv});
        const auto next = emit(f ? (chance(2) ? Op::add : Op::mul) : Op::add, type(x),
                               {loop.block_args[1], f && chance(2) ? emit(Op::mul, type(x), {ivd, constant(d, 0.5)}) : ivd});
        loop.yields = {next};
        block_ = outer;
        loop.results = {c_.fn.add_value(type(x))};
        const auto result = loop.results[0];
        block_->push_back(std::move(loop));
        pool_.push_back(result);
        break;
      }
      case 8: {  // a second, shifted load of an input (masked by its own bound)
        const int input = pick(static_cast<int>(std::count_if(c_.buffers.begin(), c_.buffers.end(), [](const Buffer& b) { return !b.output; })));
        const DType ld = c_.fn.params[input].type.dtype;
        const auto shifted = emit(Op::add, shaped(DType::i32), {offsets_, constant(DType::i32, 1 + pick(3))});
        const auto ok = emit(Op::lt, shaped(DType::i1), {shifted, splat(total_)});
        const auto ptrs = emit(Op::ptr_add, shaped(ld, true), {splat(params[input]), shifted});
        pool_.push_back(emit(Op::load, shaped(ld), {ptrs, ok, constant(ld, 0)}, hint()));
        break;
      }
      case 10: case 11: family_step(x); break;
      default: {  // arithmetic with the f32 scalar argument or a constant
        if (f) pool_.push_back(emit(Op::mul, type(x), {x, d == DType::f32 && chance(2) ? pool_[2] : constant(d, special_float())}));
        else pool_.push_back(emit(Op::add, type(x), {x, constant(d, double(special_int(DType::i32)))}));
        break;
      }
    }
  }

  // One operation of the program's family: a shared-memory stage, a cluster reduction, or a 2D op.
  void family_step(ir::ValueId x) {
    switch (family_) {
      case Family::rows: break;
      case Family::stages: stage_step(x); break;
      case Family::clusters: cluster_step(x); break;
      case Family::tiles: tile_step(x); break;
    }
  }

  // A stage of 2n elements of x's dtype: written whole (by stores, or by an asynchronous copy from an
  // input of that dtype), then read at an offset from 0 to n, so that threads read what others wrote; or
  // written and read back under the mask (each thread its own elements); or written whole, x scattered
  // to it reversed (some offsets past its end, maybe under the mask) and gathered back at shifted offsets.
  void stage_step(ir::ValueId x) {
    if (block_ != &c_.fn.body) return;
    const DType d = type(x).dtype;
    const int index = static_cast<int>(c_.fn.stages.size());
    c_.fn.stages.push_back(ir::Stage{d, 2 * n_});
    const ir::attr::StageRef at{index};
    const std::vector<int> same = inputs_of(d);
    const int input = same.empty() ? -1 : same.back();
    switch (pick(4)) {
      case 3: {
        effect(Op::stage_store, {i32(0), of_dtype(d)}, at);
        effect(Op::stage_store, {i32(n_), of_dtype(d)}, at);
        const auto lanes = emit(Op::arange, shaped(DType::i32), {});
        const auto reversed = emit(Op::sub, shaped(DType::i32), {splat(i32(n_ - 1 + pick(n_ + n_ / 2 + 1))), lanes});
        if (chance(2)) effect(Op::stage_scatter, {reversed, x}, at);
        else effect(Op::stage_scatter, {reversed, x, mask_}, at);
        const auto shifted = emit(Op::add, shaped(DType::i32), {lanes, splat(i32(pick(2 * n_ + 1)))});
        if (chance(2)) {
          pool_.push_back(emit(Op::stage_gather, shaped(d), {shifted}, at));
        } else {
          const auto m = emit(Op::ne, shaped(DType::i1), {x, of_dtype(d)});
          pool_.push_back(emit(Op::stage_gather, shaped(d), {shifted, m, constant(d, 1)}, at));
        }
        return;
      }
      case 0:
        effect(Op::stage_store, {i32(0), x, mask_}, at);
        pool_.push_back(emit(Op::stage_load, shaped(d), {i32(0), mask_, constant(d, 0)}, at));
        return;
      case 1:
        if (input >= 0) {
          const auto ptrs = emit(Op::ptr_add, shaped(d, true), {splat(params_[input]), offsets_});
          if (!masked_everywhere_ && chance(2)) effect(Op::stage_copy, {i32(0), ptrs}, at);
          else effect(Op::stage_copy, {i32(0), ptrs, mask_}, at);
          break;
        }
        [[fallthrough]];
      default: effect(Op::stage_store, {i32(0), x}, at); break;
    }
    effect(Op::stage_store, {i32(n_), of_dtype(d)}, at);
    const auto offset = i32(pick(n_ + 1));
    if (chance(2)) {
      pool_.push_back(emit(Op::stage_load, shaped(d), {offset}, at));
    } else {
      const auto m = emit(Op::ne, shaped(DType::i1), {x, of_dtype(d)});
      pool_.push_back(emit(Op::stage_load, shaped(d), {offset, m, constant(d, 1)}, at));
    }
  }

  // A program's scalar (x reduced, in f32) combined over its cluster, then used as a tile again.
  void cluster_step(ir::ValueId x) {
    if (block_ != &c_.fn.body) return;
    const auto f = type(x).dtype == DType::f32 ? x : emit(Op::cast, shaped(DType::f32), {x});
    static constexpr Op kReduce[] = {Op::reduce_max, Op::reduce_min, Op::reduce_sum};
    const auto r = emit(kReduce[pick(3)], scalar(DType::f32), {f});
    const auto all = emit(chance(2) ? Op::cluster_max : Op::cluster_sum, scalar(DType::f32), {r});
    pool_.push_back(emit(chance(2) ? Op::add : Op::maximum, shaped(DType::f32), {f, splat(all)}));
  }

  // 2D only: a dot (operands cast to f16 or bf16, maybe an accumulator), a loop of dots over tiles
  // loaded in the loop (Triton's matmul: the copies are pipelined through shared memory), or a
  // transpose of a square tile.
  void tile_step(ir::ValueId x) {
    const DType half = chance(2) ? DType::f16 : DType::bf16;
    switch (pick(3)) {
      case 0: {
        const auto a = of_dtype(half);
        const auto b = m_ == n_ && chance(2) ? (chance(2) ? of_dtype(half) : emit(Op::trans, shaped(half), {of_dtype(half)}))
                                             : square(half, -1);
        if (chance(2)) pool_.push_back(emit(Op::dot, shaped(DType::f32), {a, b, of_dtype(DType::f32)}));
        else pool_.push_back(emit(Op::dot, shaped(DType::f32), {a, b}));
        return;
      }
      case 1: {
        if (block_ != &c_.fn.body) return;
        ir::Instr loop;
        loop.op = Op::loop;
        const auto init = of_dtype(DType::f32);
        loop.args = {i32(0), params_[k_param_], i32(1), init};
        loop.block_args = {c_.fn.add_value(scalar(DType::i32)), c_.fn.add_value(type(init))};
        std::vector<ir::Instr>* outer = block_;
        block_ = &loop.body;
        const auto iv = loop.block_args[0];
        // A: the program's rows, columns shifted by the iteration; B: rows shifted by it.
        const auto cols = row(emit(Op::add, tile(DType::i32, n_), {emit(Op::arange, tile(DType::i32, n_), {}),
                                                                  emit(Op::splat, tile(DType::i32, n_), {iv})}), m_, n_);
        const auto offsets = emit(Op::add, shaped(DType::i32), {emit(Op::mul, shaped(DType::i32), {rows_2d_, splat(params_[c_param_])}), cols});
        const auto in = emit(Op::logical_and, shaped(DType::i1), {rows_in_, emit(Op::lt, shaped(DType::i1), {cols, splat(params_[c_param_])})});
        const int input = input_of(half);
        const DType ld = c_.fn.params[input].type.dtype;
        auto a = emit(Op::load, shaped(ld), {emit(Op::ptr_add, shaped(ld, true), {splat(params_[input]), offsets}), in, constant(ld, 0)}, hint());
        if (ld != half) a = emit(Op::cast, shaped(half), {a});
        const auto next = emit(Op::dot, shaped(DType::f32), {a, square(half, iv), loop.block_args[1]});
        loop.yields = {next};
        block_ = outer;
        loop.results = {c_.fn.add_value(type(init))};
        const auto result = loop.results[0];
        block_->push_back(std::move(loop));
        pool_.push_back(result);
        return;
      }
      default:
        if (m_ == n_) pool_.push_back(emit(Op::trans, type(x), {x}));
        return;
    }
  }

  // An input of dtype d if there is one (else any input).
  int input_of(DType d) {
    const std::vector<int> same = inputs_of(d);
    return same.empty() ? pick(inputs_) : same[pick(static_cast<int>(same.size()))];
  }
  // The inputs of dtype d, in parameter order.
  std::vector<int> inputs_of(DType d) const {
    std::vector<int> same;
    for (int i = 0; i < inputs_; ++i)
      if (c_.fn.params[i].type.dtype == d) same.push_back(i);
    return same;
  }

  // An n x n tile of an input (the first rows, or rows from `shift` on when it is a value), masked on both
  // edges, as dtype d: the right operand of a dot whose left one is m x n.
  ir::ValueId square(DType d, ir::ValueId shift) {
    auto rows1 = emit(Op::arange, tile(DType::i32, n_), {});
    if (shift >= 0) rows1 = emit(Op::add, tile(DType::i32, n_), {rows1, emit(Op::splat, tile(DType::i32, n_), {shift})});
    const auto rows = column(rows1, n_, n_), cols = row(emit(Op::arange, tile(DType::i32, n_), {}), n_, n_);
    const auto sq = [&](DType t, bool pointer = false) { return tile2(t, n_, n_, pointer); };
    const auto to = [&](ir::ValueId s) { return emit(Op::splat, sq(type(s).dtype, type(s).pointer), {s}); };
    const auto offsets = emit(Op::add, sq(DType::i32), {emit(Op::mul, sq(DType::i32), {rows, to(params_[c_param_])}), cols});
    const auto in = emit(Op::logical_and, sq(DType::i1), {emit(Op::lt, sq(DType::i1), {rows, to(params_[n_param_])}),
                                                          emit(Op::lt, sq(DType::i1), {cols, to(params_[c_param_])})});
    const int input = input_of(d);
    const DType ld = c_.fn.params[input].type.dtype;
    const auto zero = to(emit(Op::constant, scalar(ld), {}, ir::attr::Constant{0.0}));
    const auto b = emit(Op::load, sq(ld), {emit(Op::ptr_add, sq(ld, true), {to(params_[input]), offsets}), in, zero}, hint());
    return ld == d ? b : emit(Op::cast, sq(d), {b});
  }

  std::mt19937_64 rng_;
  Family family_ = Family::rows;
  Case c_;
  std::vector<ir::Instr>* block_ = &c_.fn.body;
  std::vector<ir::ValueId> pool_;
  int n_ = 128;
  std::int64_t length_ = 0;
  bool masked_everywhere_ = true;
  int n_param_ = 0, k_param_ = 0, s_param_ = 0, c_param_ = -1;
  ir::ValueId offsets_ = -1, mask_ = -1;
  ir::ValueId total_ = -1;                   ///< the valid elements of each buffer (i32 scalar)
  int rank_ = 1, m_ = 1;                     ///< 2D: tiles are [m_, n_]
  std::int64_t rows_ = 0, cols_ = 0;         ///< 2D: valid rows, and columns (the row stride)
  ir::ValueId rows_2d_ = -1, cols_2d_ = -1, rows_in_ = -1;
  std::vector<ir::ValueId> params_;
  int inputs_ = 0;
};

double element_of(DType d, const std::uint8_t* p, std::int64_t* i) {
  switch (d) {
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); return half_bits_to_float(h); }
    case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_float(h); }
    case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); *i = v; return 0; }
    case DType::i64: std::memcpy(i, p, 8); return 0;
    case DType::i1: return 0;
  }
  return 0;
}

}  // namespace

std::vector<Arg> Case::arguments(const std::vector<std::uint64_t>& addresses, bool host) const {
  std::vector<Arg> args;
  std::size_t scalar = 0;
  for (std::size_t i = 0; i < param_buffer.size(); ++i) {
    const int b = param_buffer[i];
    if (b < 0) {
      args.push_back(scalars[scalar++]);
      continue;
    }
    const Buffer& buf = buffers[b];
    const std::uint64_t at = addresses[b] + buf.shift * ir::dtype_bytes(buf.dtype);
    args.push_back(host ? Arg::host_memory_of(buf.dtype, reinterpret_cast<void*>(at), buf.count)
                        : Arg::device_memory_of(buf.dtype, at, buf.count));
  }
  return args;
}

const char* family_name(Family f) {
  switch (f) {
    case Family::rows: return "rows";
    case Family::stages: return "stages";
    case Family::clusters: return "clusters";
    case Family::tiles: return "tiles";
  }
  return "?";
}

Family family_of(std::uint64_t seed) {
  static constexpr Family kFamilies[] = {Family::rows, Family::rows, Family::rows, Family::rows,
                                         Family::stages, Family::clusters, Family::tiles, Family::tiles};
  return kFamilies[mix(seed) % 8];
}

Case generate(std::uint64_t seed) { return generate(seed, family_of(seed)); }
Case generate(std::uint64_t seed, Family family) { return Generator(seed, family).run(); }

Memory run_interpreter(const Case& c, Program& p, std::uint64_t* wrapped) {
  Memory m;
  std::vector<std::uint64_t> at;
  for (const Buffer& b : c.buffers) {
    m.push_back(b.bytes);
    at.push_back(reinterpret_cast<std::uintptr_t>(m.back().data()));
  }
  const auto args = c.arguments(at, true);
  interp::reset_wrapped_operations();
  p.launch(LaunchConfig{c.grid, Backend::interpreter}, args);
  if (wrapped) *wrapped = interp::wrapped_operations();
  return m;
}

Memory run_gpu(const Case& c, Program& p) {
  std::vector<DeviceBytes> device;
  std::vector<std::uint64_t> at;
  for (const Buffer& b : c.buffers) {
    device.emplace_back(std::max<std::size_t>(b.bytes.size(), 1));
    device.back().upload(b.bytes.data(), b.bytes.size());
    at.push_back(device.back().address());
  }
  const auto args = c.arguments(at, false);
  p.launch(LaunchConfig{c.grid, Backend::gpu}, args);
  Memory m;
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    m.emplace_back(c.buffers[i].bytes.size());
    device[i].download(m.back().data(), m.back().size());
  }
  return m;
}

namespace {
// The relative bound within which compare() takes floats of dtype `d` to agree.
double relative_bound(DType d) { return d == DType::f32 ? 1.0 / 1024 : 1.0 / 64; }
}  // namespace

std::string compare(const Case& c, const Memory& want, const Memory& got, std::vector<int>* differing) {
  std::string first;
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    const Buffer& buf = c.buffers[b];
    if (!buf.output) continue;
    const int bytes = ir::dtype_bytes(buf.dtype);
    const bool is_float = ir::is_float(buf.dtype);
    double scale = 1;
    if (is_float)
      for (std::size_t j = 0; j < buf.count; ++j) {
        std::int64_t unused;
        const double w = element_of(buf.dtype, want[b].data() + (buf.shift + j) * bytes, &unused);
        if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
      }
    const double rtol = relative_bound(buf.dtype);
    for (std::size_t j = 0; j < buf.bytes.size() / bytes; ++j) {
      const std::uint8_t* pw = want[b].data() + j * bytes;
      const std::uint8_t* pg = got[b].data() + j * bytes;
      const bool inside = j >= buf.shift && j < buf.shift + buf.count;
      std::string why;
      if (!inside || !is_float) {
        if (std::memcmp(pw, pg, bytes) != 0) why = inside ? "integers differ" : "written outside the argument";
      } else {
        std::int64_t unused;
        const double w = element_of(buf.dtype, pw, &unused), g = element_of(buf.dtype, pg, &unused);
        const bool same_class = (std::isnan(w) && std::isnan(g)) || (std::isinf(w) && w == g) || (std::isfinite(w) && std::isfinite(g));
        if (!same_class) why = "different classes (NaN, infinity, finite)";
        else if (std::isfinite(w) && std::abs(w - g) > rtol * std::max(std::abs(w), std::abs(g)) && std::abs(w - g) > rtol * 1e-3 * scale)
          why = "floats differ beyond the bounds";
      }
      if (!why.empty()) {
        std::int64_t iw = 0, ig = 0;
        const double w = element_of(buf.dtype, pw, &iw), g = element_of(buf.dtype, pg, &ig);
        const bool fl = is_float && inside;
        const std::string text = "case " + std::to_string(c.seed) + ": argument " + c.fn.params[b].name + " (" + ir::dtype_name(buf.dtype) +
                                 ") element " + std::to_string(static_cast<std::int64_t>(j) - static_cast<std::int64_t>(buf.shift)) +
                                 ": interpreter " + (fl ? std::to_string(w) : std::to_string(iw)) + ", GPU " +
                                 (fl ? std::to_string(g) : std::to_string(ig)) + ": " + why;
        if (!differing) return text;
        if (first.empty()) first = text;
        differing->push_back(static_cast<int>(b));
        break;
      }
    }
  }
  return first;
}

namespace {

// The interpreter's run of the case with one of its test hooks (interp::set_reordered_sums,
// interp::set_cast_nudge) set to `on` for the run and back to `off` after it, also when the run throws.
template <class Value>
Memory run_interpreter_with(const Case& c, Program& p, void (*set)(Value), Value on, Value off) {
  set(on);
  try {
    Memory m = run_interpreter(c, p);
    set(off);
    return m;
  } catch (...) {
    set(off);
    throw;
  }
}

// Whether every output element where `got` differs from `want` lies between the interpreter's runs with
// float-to-integer casts nudged down and up (floats: or within compare()'s relative bound of `want`).
bool between_nudged_casts(const Case& c, Program& p, const Memory& want, const Memory& got) {
  const Memory lo = run_interpreter_with(c, p, interp::set_cast_nudge, -1, 0), hi = run_interpreter_with(c, p, interp::set_cast_nudge, 1, 0);
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    const Buffer& buf = c.buffers[b];
    if (!buf.output) continue;
    const int bytes = ir::dtype_bytes(buf.dtype);
    const double rtol = relative_bound(buf.dtype);
    for (std::size_t j = 0; j < buf.bytes.size() / bytes; ++j) {
      const std::size_t at = j * bytes;
      if (std::memcmp(want[b].data() + at, got[b].data() + at, bytes) == 0) continue;
      if (std::memcmp(lo[b].data() + at, got[b].data() + at, bytes) == 0 || std::memcmp(hi[b].data() + at, got[b].data() + at, bytes) == 0)
        continue;
      if (j < buf.shift || j >= buf.shift + buf.count || buf.dtype == DType::i1) return false;
      std::int64_t iw = 0, ig = 0, il = 0, ih = 0;
      const double w = element_of(buf.dtype, want[b].data() + at, &iw), g = element_of(buf.dtype, got[b].data() + at, &ig);
      const double l = element_of(buf.dtype, lo[b].data() + at, &il), h = element_of(buf.dtype, hi[b].data() + at, &ih);
      if (ir::is_float(buf.dtype)) {
        const bool near = std::isfinite(w) && std::isfinite(g) && std::abs(w - g) <= rtol * std::max(std::abs(w), std::abs(g));
        if (!near && !(g >= std::min({w, l, h}) && g <= std::max({w, l, h}))) return false;
      } else if (ig < std::min({iw, il, ih}) || ig > std::max({iw, il, ih})) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

Outcome check_on_gpu(const Case& c, Program& p) {
  std::uint64_t wrapped = 0;
  const Memory want = run_interpreter(c, p, &wrapped);
  return check_on_gpu(c, p, want, wrapped);
}

Outcome check_on_gpu(const Case& c, Program& p, const Memory& want, std::uint64_t wrapped) {
  Outcome o;
  const Memory got = run_gpu(c, p);
  o.difference = compare(c, want, got);
  if (o.difference.empty()) return o;
  if (wrapped > 0) {
    o.verdict = Verdict::overflow;
    return o;
  }
  KernelOptions precise = c.options;
  precise.precise_division = true;
  Program q(c.fn, precise);
  if (compare(c, want, run_gpu(c, q)).empty()) {
    o.verdict = Verdict::division;
    return o;
  }
  std::vector<int> on_gpu;
  compare(c, want, got, &on_gpu);
  // Whether every output that differs on the GPU also changes in the interpreter with a test hook on.
  auto changes_with = [&](void (*set)(bool)) {
    std::vector<int> changed;
    compare(c, want, run_interpreter_with(c, p, set, true, false), &changed);
    bool all = !on_gpu.empty();
    for (int b : on_gpu) all = all && std::find(changed.begin(), changed.end(), b) != changed.end();
    return all;
  };
  if (changes_with(interp::set_reordered_sums)) {
    o.verdict = Verdict::ordering;
    return o;
  }
  if (changes_with(interp::set_other_zeros)) {
    o.verdict = Verdict::zeros;
    return o;
  }
  o.verdict = between_nudged_casts(c, p, want, got) ? Verdict::casts : Verdict::failed;
  return o;
}

Case shrink(const Case& c, const std::function<bool(const Case&)>& still_fails) {
  Case best = c;
  for (std::size_t i = 0; i < best.fn.body.size();) {
    if (best.fn.body[i].op != Op::store) {
      ++i;
      continue;
    }
    Case trial = best;
    trial.fn.body.erase(trial.fn.body.begin() + static_cast<std::ptrdiff_t>(i));
    bool fails = false;
    try {
      fails = still_fails(trial);
    } catch (...) {
      fails = false;
    }
    if (fails) best = std::move(trial);
    else ++i;
  }
  return best;
}

}  // namespace tilefuse::fuzz
