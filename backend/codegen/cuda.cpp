#include "backend/codegen/cuda.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "backend/ir/float16.hpp"
#include "backend/passes/passes.hpp"

namespace tilefuse::codegen {

namespace {

using ir::DType;
using ir::Op;

// Helpers every generated kernel starts with. f16/bf16 live in registers as float and round after
// each op; conversions use PTX cvt so no CUDA headers are needed (NVRTC then compiles with no includes).
constexpr const char* kPrelude = R"(// ---- tilefuse device helpers ----
typedef unsigned short tf_u16;
__device__ __forceinline__ float tf_f16_to_f32(tf_u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ tf_u16 tf_f32_to_f16(float f) { tf_u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float tf_bf16_to_f32(tf_u16 h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ tf_u16 tf_f32_to_bf16(float f) { tf_u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
// The low and high halves of a word of two f16/bf16 widened in place: a bf16 is the top 16 bits of its
// float, so each half costs one shift or mask, with no extraction of the 16-bit part first.
__device__ __forceinline__ float tf_bf16_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float tf_bf16_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float tf_f16_lo(unsigned w) { float f; asm("{.reg .f16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l;}" : "=f"(f) : "r"(w)); return f; }
__device__ __forceinline__ float tf_f16_hi(unsigned w) { float f; asm("{.reg .f16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, h;}" : "=f"(f) : "r"(w)); return f; }
__device__ __forceinline__ float tf_round_f16(float f) { return tf_f16_to_f32(tf_f32_to_f16(f)); }
__device__ __forceinline__ float tf_round_bf16(float f) { return tf_bf16_to_f32(tf_f32_to_bf16(f)); }
__device__ __forceinline__ int tf_f2i(float f) { return __float2int_rz(f); }
// Tile math uses the hardware approximations, as Triton does: exp and exp2 through ex2.approx (relative
// error about 2^-22, plus the rounding of x * log2(e)), tile division through div.full.f32 (2 ulp).
// (.ftz: results below 2^-126 flush to 0, which spares the range scaling around each ex2.)
__device__ __forceinline__ float tf_exp2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ float tf_exp(float x) { return tf_exp2(x * 1.44269504088896341f); }
__device__ __forceinline__ float tf_div(float a, float b) { float y; asm("div.full.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b)); return y; }
__device__ __forceinline__ long long tf_f2ll(float f) { return __float2ll_rz(f); }
// Two floats rounded to f16 or bf16 and packed in one word, low element first: one instruction on sm_80+.
__device__ __forceinline__ unsigned tf_pack_bf16x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned d; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo)); return d;
#else
  return (unsigned)tf_f32_to_bf16(lo) | ((unsigned)tf_f32_to_bf16(hi) << 16);
#endif
}
__device__ __forceinline__ unsigned tf_pack_f16x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned d; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo)); return d;
#else
  return (unsigned)tf_f32_to_f16(lo) | ((unsigned)tf_f32_to_f16(hi) << 16);
#endif
}
// W elements of S moved as one access of W * sizeof(S) bytes (16 bytes: one 128-bit transaction).
template <int Bytes> struct tf_word;
template <> struct tf_word<2> { typedef unsigned short type; };
template <> struct tf_word<4> { typedef unsigned int type; };
template <> struct tf_word<8> { typedef unsigned long long type; };
template <class S, int W> union tf_pack {
  struct alignas(sizeof(S) * W) Raw { typename tf_word<(sizeof(S) * W > 8 ? 8 : sizeof(S) * W)>::type w[(sizeof(S) * W + 7) / 8]; } raw;
  S s[W];
};
// Global accesses with a cache hint H (tl::Cache): 0 as the hardware caches, 1 streaming (ld/st.cs:
// evicted first), 2 L2 only (ld/st.cg).
template <int H, class V> __device__ __forceinline__ V tf_ld(const V* p) {
  if constexpr (H == 1) return __ldcs(p);
  else if constexpr (H == 2) return __ldcg(p);
  else return *p;
}
template <int H, class V> __device__ __forceinline__ void tf_st(V* p, V v) {
  if constexpr (H == 1) __stcs(p, v);
  else if constexpr (H == 2) __stcg(p, v);
  else *p = v;
}
template <class S, int W, int H = 0> __device__ __forceinline__ void tf_load_vec(const S* p, S (&out)[W]) {
  tf_pack<S, W> pk;
  typedef typename tf_pack<S, W>::Raw Raw;
  if constexpr (H == 0) {
    pk.raw = *reinterpret_cast<const Raw*>(p);
  } else if constexpr (sizeof(Raw) == 16) {  // one 128-bit access
    const ulonglong2 v = tf_ld<H>(reinterpret_cast<const ulonglong2*>(p));
    pk.raw.w[0] = v.x; pk.raw.w[1] = v.y;
  } else {
    pk.raw.w[0] = tf_ld<H>(reinterpret_cast<const Raw*>(p)->w);
  }
#pragma unroll
  for (int k = 0; k < W; ++k) out[k] = pk.s[k];
}
template <class S, int W, int H = 0> __device__ __forceinline__ void tf_store_vec(S* p, const S (&in)[W]) {
  tf_pack<S, W> pk;
  typedef typename tf_pack<S, W>::Raw Raw;
#pragma unroll
  for (int k = 0; k < W; ++k) pk.s[k] = in[k];
  if constexpr (H == 0) {
    *reinterpret_cast<Raw*>(p) = pk.raw;
  } else if constexpr (sizeof(Raw) == 16) {
    tf_st<H>(reinterpret_cast<ulonglong2*>(p), make_ulonglong2(pk.raw.w[0], pk.raw.w[1]));
  } else {
    tf_st<H>(reinterpret_cast<Raw*>(p)->w, pk.raw.w[0]);
  }
}
// ---- end of helpers ----
)";

// Emitted only into kernels that draw random numbers (so every other kernel's text stays as it was).
// Philox4x32-10 (Salmon et al., 2011) on counter (offset, 0, 0) and key seed; the first word's top 24
// bits give a float in [0, 1). The interpreter runs the same integer steps, so both draw the same stream.
constexpr const char* kRandPrelude = R"(// ---- tilefuse random numbers ----
__device__ __forceinline__ float tf_rand(unsigned long long seed, long long offset) {
  unsigned c0 = (unsigned)offset, c1 = (unsigned)((unsigned long long)offset >> 32), c2 = 0u, c3 = 0u;
  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
    const unsigned lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (float)(c0 >> 8) * 5.9604644775390625e-08f;
}
)";

// Emitted only into kernels with cluster reductions (sm_90 thread-block clusters): a barrier over the
// cluster's blocks, and a read of the same shared variable in another block of the cluster (distributed
// shared memory: mapa gives that block's address of it).
constexpr const char* kClusterPrelude = R"(// ---- tilefuse thread-block cluster ----
__device__ __forceinline__ void tf_cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void tf_cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ void tf_cluster_sync() { tf_cluster_arrive(); tf_cluster_wait(); }
__device__ __forceinline__ float tf_cluster_read(const float* slot, unsigned rank) {
  unsigned local, remote;
  float v;
  asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(local) : "l"(slot));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
)";

// Emitted only into kernels that copy into stages: a copy of 4, 8 or 16 bytes from global to shared
// memory that does not wait for the data (cp.async, sm_80 and later; `on` false writes zeros and reads
// nothing), and the wait for all of this thread's copies.
constexpr const char* kCopyPrelude = R"(// ---- tilefuse asynchronous copies ----
template <int Bytes> struct alignas(Bytes) tf_chunk { unsigned w[Bytes / 4]; };
template <int Bytes> __device__ __forceinline__ void tf_copy_async(void* dst, const void* src, bool on) {
#if __CUDA_ARCH__ >= 800
  unsigned d;
  asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(d) : "l"(dst));
  if (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src), "r"(on ? 16 : 0) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(d), "l"(src), "n"(Bytes), "r"(on ? Bytes : 0) : "memory");
#else
  tf_chunk<Bytes> c = {};
  if (on) c = *reinterpret_cast<const tf_chunk<Bytes>*>(src);
  *reinterpret_cast<tf_chunk<Bytes>*>(dst) = c;
#endif
}
__device__ __forceinline__ void tf_copy_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
)";

// Register type of a value's elements.
std::string reg_type(const ir::ValueType& t) {
  if (t.pointer) {
    switch (t.dtype) {
      case DType::f32: return "float*";
      case DType::f16:
      case DType::bf16: return "tf_u16*";
      case DType::i32: return "int*";
      case DType::i64: return "long long*";
      case DType::i1: return "bool*";
    }
  }
  switch (t.dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::i1: return "bool";
  }
  return "?";
}

// Memory (storage) type of one element.
std::string storage_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16:
    case DType::bf16: return "tf_u16";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::i1: return "bool";
  }
  return "?";
}

// Storage -> register conversion expression.
std::string from_storage(DType t, const std::string& x) {
  if (t == DType::f16) return "tf_f16_to_f32(" + x + ")";
  if (t == DType::bf16) return "tf_bf16_to_f32(" + x + ")";
  return x;
}

// Register -> storage conversion expression.
std::string to_storage(DType t, const std::string& x) {
  if (t == DType::f16) return "tf_f32_to_f16(" + x + ")";
  if (t == DType::bf16) return "tf_f32_to_bf16(" + x + ")";
  return x;
}

// Element `half` (0: low, 1: high) of a word `w` holding two f16/bf16, widened to float.
std::string from_word(DType t, const std::string& w, int half) {
  return std::string(t == DType::bf16 ? "tf_bf16_" : "tf_f16_") + (half ? "hi(" : "lo(") + w + ")";
}

// A float computed in f32 rounded to the value's dtype.
std::string rounded(DType t, const std::string& x) {
  if (t == DType::f16) return "tf_round_f16(" + x + ")";
  if (t == DType::bf16) return "tf_round_bf16(" + x + ")";
  return x;
}

std::string float_literal(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(v)) return v < 0 ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s + "f";
}

std::string literal(DType t, double v) {
  switch (t) {
    case DType::f32: return float_literal(v);
    case DType::f16: return float_literal(round_to_half(static_cast<float>(v)));
    case DType::bf16: return float_literal(round_to_bf16(static_cast<float>(v)));
    case DType::i32: return std::to_string(static_cast<std::int32_t>(static_cast<std::int64_t>(v)));
    case DType::i64: return std::to_string(static_cast<std::int64_t>(v)) + "ll";
    case DType::i1: return v != 0 ? "true" : "false";
  }
  return "?";
}

std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "k_" + out;
  return out;
}

class Emitter {
 public:
  Emitter(const ir::Function& fn, const Options& opt)
      : fn_(fn), opt_(opt), threads_(32 * opt.num_warps), packed_(opt.programs_per_block > 1),
        layouts_(passes::choose_layouts(fn, threads_)),
        axis_(passes::analyze_axis_info(fn, opt.divisibility)), def_(fn.values.size(), nullptr) {
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      if (in.result >= 0) def_[in.result] = &in;
    });
    only_stored_ = values_only_stored();
    stage_owned_ = stages_owned();
  }

  std::string run() {
    check();
    find_pointer_roots();
    os_ << "// tilefuse kernel '" << fn_.name << "': " << opt_.num_warps << " warps (" << threads_
        << " threads) per program, "
        << (packed_ ? std::to_string(opt_.programs_per_block) + " programs (one warp each) per thread block.\n"
                    : std::string("one program per thread block.\n"));
    for (const auto& [n, l] : layouts_)
      os_ << "// layout of " << n << "-element tiles: " << l.per_thread << " per thread in runs of " << l.vector
          << (l.n < threads_ ? " (threads past the tile hold none)" : "") << "\n";
    os_ << kPrelude << "\n";
    if (any_of_ops(fn_.body, [](Op op) { return op == Op::rand; })) os_ << kRandPrelude << "\n";
    ir::walk(fn_.body, [&](const ir::Instr& in) { cluster_reductions_left_ += ir::is_cluster_reduction(in.op) ? 1 : 0; });
    const bool cluster = cluster_reductions_left_ > 0 && opt_.cluster_size > 1;
    if (cluster) os_ << kClusterPrelude << "\n";
    if (copies_in(fn_.body)) os_ << kCopyPrelude << "\n";
    signature();
    if (packed_) {
      // Warp w of the block runs program blockIdx.x * P + w; the grid's last block may hold fewer programs.
      os_ << "  const int tid = threadIdx.x & 31;\n";
      os_ << "  const int tf_program_x = (int)blockIdx.x * " << opt_.programs_per_block << " + (int)(threadIdx.x >> 5);\n";
      os_ << "  if (tf_program_x >= tf_num_programs_x) return;\n";
    } else {
      os_ << "  const int tid = threadIdx.x;\n";
    }
    if (uses_reduction() && opt_.num_warps > 1) os_ << "  const int lane = tid & 31;\n  const int warp = tid >> 5;\n";
    for (const auto& [n, l] : layouts_)
      if (l.n < threads_) os_ << "  const bool live" << n << " = tid < " << n << ";\n";
    declare_stages();
    for (const ir::Instr& in : fn_.body) instr(in);
    // The other blocks may still read this block's slots: it leaves only when all have passed their last read.
    if (cluster) os_ << "  tf_cluster_wait();\n";
    os_ << "}\n";
    return os_.str();
  }

 private:
  void check() const {
    if (opt_.programs_per_block < 1 || opt_.programs_per_block > 32 || (packed_ && opt_.num_warps != 1))
      throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': programs_per_block must be 1, or up "
                                  "to 32 for one-warp programs");
    if (opt_.num_warps < 1 || opt_.num_warps > 32 || (opt_.num_warps & (opt_.num_warps - 1)))
      throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': num_warps must be a power of two "
                                  "from 1 to 32, got " + std::to_string(opt_.num_warps));
    for (const auto& t : fn_.values)
      if (t.rank > 1)
        throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': 2D tiles are not supported yet");
  }

  // Whether an instruction of `block` (loop bodies included) has an op for which pred(op) holds.
  template <class Pred>
  static bool any_of_ops(const std::vector<ir::Instr>& block, Pred pred) {
    bool any = false;
    ir::walk(block, [&](const ir::Instr& in) { any = any || pred(in.op); });
    return any;
  }

  bool uses_reduction() const { return any_of_ops(fn_.body, ir::is_reduction); }

  // Parameter each pointer value derives from (-1 for non-pointers), and which parameters are written.
  void find_pointer_roots() {
    root_.assign(fn_.values.size(), -1);
    written_.assign(fn_.params.size(), false);
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      if (in.op == Op::param) root_[in.result] = in.index;
      else if ((in.op == Op::ptr_add || in.op == Op::splat) && fn_.values[in.result].pointer) root_[in.result] = root_[in.args[0]];
      else if (in.op == Op::store && root_[in.args[0]] >= 0) written_[root_[in.args[0]]] = true;
      else if (in.op == Op::store) written_.assign(written_.size(), true);  // through a carried pointer: any
    });
  }

  // Register type of a value; pointers into parameters nothing stores through are const.
  std::string value_type(ir::ValueId id) const {
    const auto& t = fn_.values[id];
    return t.pointer && root_[id] >= 0 && !written_[root_[id]] ? "const " + reg_type(t) : reg_type(t);
  }

  void signature() {
    os_ << "extern \"C\" __global__ void __launch_bounds__(" << threads_ * opt_.programs_per_block;
    if (opt_.min_programs_per_sm > 0)
      os_ << ", " << std::max(1, std::min({32, 2048 / (threads_ * opt_.programs_per_block),  // what an SM can hold
                                             (opt_.min_programs_per_sm + opt_.programs_per_block - 1) / opt_.programs_per_block}));
    os_ << ") ";
    if (opt_.cluster_size > 1) os_ << "__cluster_dims__(" << opt_.cluster_size << ", 1, 1) ";
    os_ << kernel_symbol(fn_) << "(";
    for (std::size_t i = 0; i < fn_.params.size(); ++i) {
      const auto& p = fn_.params[i];
      std::string type = reg_type(p.type);
      if (p.type.pointer && !written_[i]) type = "const " + type;
      os_ << (i ? ", " : "") << type << " a_" << identifier(p.name);
    }
    if (packed_) os_ << (fn_.params.empty() ? "" : ", ") << "int tf_num_programs_x";
    os_ << ") {\n";
  }

  const passes::TileLayout& layout(const ir::ValueType& t) const { return layouts_.at(t.dims[0]); }
  int per_thread(const ir::ValueType& t) const { return t.rank == 0 ? 1 : layout(t).per_thread; }

  // Tile index held by element `e` of this thread (an unrolled loop variable).
  std::string index_expr(const passes::TileLayout& l, const std::string& e = "e") const {
    const int tv = l.threads * l.vector;
    if (l.per_thread == 1) return "tid";
    if (l.vector == l.per_thread) return "tid * " + std::to_string(l.vector) + " + " + e;
    return "(" + e + " / " + std::to_string(l.vector) + ") * " + std::to_string(tv) + " + tid * " + std::to_string(l.vector) +
           " + " + e + " % " + std::to_string(l.vector);
  }

  std::string live(const ir::ValueType& t) const {
    return t.rank == 1 && layout(t).n < threads_ ? "live" + std::to_string(t.dims[0]) : "";
  }

  std::string v(ir::ValueId id) const {
    std::string name = "v";  // (appending: GCC 12 warns falsely about "v" + std::to_string)
    name += std::to_string(id);
    return name;
  }
  // Operand as seen inside the element loop.
  std::string at(ir::ValueId id) const { return fn_.values[id].rank == 0 ? v(id) : v(id) + "[e]"; }

  // Declares the result and emits `result = expr` for every element (or once for scalars).
  void elementwise(const ir::Instr& in, const std::string& expr) {
    const auto& t = fn_.values[in.result];
    if (t.rank == 0) {
      os_ << "  " << value_type(in.result) << " const " << v(in.result) << " = " << expr << ";\n";
      return;
    }
    os_ << "  " << value_type(in.result) << " " << v(in.result) << "[" << per_thread(t) << "];\n";
    os_ << "#pragma unroll\n  for (int e = 0; e < " << per_thread(t) << "; ++e) " << v(in.result) << "[e] = " << expr
        << ";\n";
  }

  // A comparison tile. When it is constant over each run of the layout (an index against a bound that
  // is a multiple of the run), every lane of a run compares the run's first elements: the compiler then
  // keeps one predicate per run instead of one register per element.
  void compare(const ir::Instr& in, const std::string& op) {
    if (known_true(in.result)) return elementwise(in, "true");
    const auto& t = fn_.values[in.result];
    const int R = t.rank > 0 ? layout(t).vector : 1;
    if (R == 1 || axis_[in.result].constancy < R) return elementwise(in, at(in.args[0]) + " " + op + " " + at(in.args[1]));
    auto first = [&](ir::ValueId id) {
      return fn_.values[id].rank == 0 ? v(id) : v(id) + "[e - e % " + std::to_string(R) + "]";
    };
    elementwise(in, first(in.args[0]) + " " + op + " " + first(in.args[1]));
  }

  // Whether mask `m` is all true or all false over each aligned run of W lanes.
  bool mask_constant_over(ir::ValueId m, int W) const { return m >= 0 && axis_[m].constancy >= W; }

  // Declares `id` (non-const: loops assign it) and copies `from` into it.
  void declare_copy(ir::ValueId id, ir::ValueId from) {
    const auto& t = fn_.values[id];
    if (t.rank == 0) {
      os_ << "  " << value_type(id) << " " << v(id) << " = " << v(from) << ";\n";
      return;
    }
    const int E = per_thread(t);
    os_ << "  " << value_type(id) << " " << v(id) << "[" << E << "];\n#pragma unroll\n  for (int e = 0; e < " << E
        << "; ++e) " << v(id) << "[e] = " << v(from) << "[e];\n";
  }

  // for (iv = lo; iv < hi; iv += step) with the carried values in variables named after the block
  // arguments; yields go through temporaries first, so that carried values swap correctly.
  void loop(const ir::Instr& in) {
    // Copies from before a loop that accesses stages but does not copy are waited for once, before it.
    if (copies_pending_ && !copies_in(in.body) && stage_accesses_in(in.body)) {
      os_ << "  tf_copy_wait();\n";
      copies_pending_ = false;
    }
    const std::size_t carried = in.block_args.size() - 1;
    for (std::size_t k = 0; k < carried; ++k) declare_copy(in.block_args[k + 1], in.args[k + 3]);
    os_ << "  for (int " << v(in.block_args[0]) << " = " << v(in.args[0]) << "; " << v(in.block_args[0]) << " < "
        << v(in.args[1]) << "; " << v(in.block_args[0]) << " += " << v(in.args[2]) << ") {\n";
    std::ostringstream body;
    std::swap(os_, body);
    ++loop_depth_;
    // A copy in the body may still be in flight when the next iteration starts, and when the loop ends.
    const bool body_copies = copies_in(in.body);
    copies_pending_ = copies_pending_ || body_copies;
    for (const ir::Instr& b : in.body) instr(b);
    copies_pending_ = copies_pending_ || body_copies;
    os_ << "  // yield" << (in.yields.empty() ? "" : " %") ;
    for (std::size_t k = 0; k < carried; ++k) os_ << (k ? ", %" : "") << in.yields[k];
    os_ << "\n";
    for (std::size_t k = 0; k < carried; ++k) {
      const auto& t = fn_.values[in.yields[k]];
      const std::string tmp = "tf_next_" + v(in.block_args[k + 1]);
      if (t.rank == 0) {
        os_ << "  const " << value_type(in.yields[k]) << " " << tmp << " = " << v(in.yields[k]) << ";\n";
      } else {
        os_ << "  " << value_type(in.yields[k]) << " " << tmp << "[" << per_thread(t) << "];\n#pragma unroll\n  for (int e = 0; e < "
            << per_thread(t) << "; ++e) " << tmp << "[e] = " << v(in.yields[k]) << "[e];\n";
      }
    }
    for (std::size_t k = 0; k < carried; ++k) {
      const auto& t = fn_.values[in.yields[k]];
      const std::string tmp = "tf_next_" + v(in.block_args[k + 1]);
      if (t.rank == 0) os_ << "  " << v(in.block_args[k + 1]) << " = " << tmp << ";\n";
      else
        os_ << "#pragma unroll\n  for (int e = 0; e < " << per_thread(t) << "; ++e) " << v(in.block_args[k + 1])
            << "[e] = " << tmp << "[e];\n";
    }
    --loop_depth_;
    std::swap(os_, body);
    // Indent the body one level.
    std::istringstream lines(body.str());
    for (std::string line; std::getline(lines, line);)
      os_ << (line.rfind("#pragma", 0) == 0 ? "" : "  ") << line << "\n";
    os_ << "  }\n";
    for (std::size_t k = 0; k < carried; ++k) declare_copy(in.results[k], in.block_args[k + 1]);
  }

  void instr(const ir::Instr& in) {
    os_ << "  // " << ir::print(fn_, in);
    if (!in.where.empty()) os_ << "   [" << in.where << "]";
    os_ << "\n";
    const ir::ValueType* t = in.result >= 0 ? &fn_.values[in.result] : nullptr;
    auto a = [&](std::size_t i) { return at(in.args.at(i)); };
    const bool fl = t && ir::is_float(t->dtype) && !t->pointer;
    switch (in.op) {
      case Op::param:
        os_ << "  " << value_type(in.result) << " const " << v(in.result) << " = a_"
            << identifier(fn_.params[in.index].name) << ";\n";
        break;
      case Op::program_id:
        os_ << "  const int " << v(in.result) << " = "
            << (packed_ && in.index == 0 ? std::string("tf_program_x") : std::string("(int)blockIdx.") + "xyz"[in.index]) << ";\n";
        break;
      case Op::num_programs:
        os_ << "  const int " << v(in.result) << " = "
            << (packed_ && in.index == 0 ? std::string("tf_num_programs_x") : std::string("(int)gridDim.") + "xyz"[in.index])
            << ";\n";
        break;
      case Op::arange: elementwise(in, index_expr(layout(*t))); break;
      case Op::constant: elementwise(in, literal(t->dtype, in.number)); break;
      case Op::splat: elementwise(in, v(in.args[0])); break;
      case Op::add: elementwise(in, rounded(t->dtype, a(0) + " + " + a(1))); break;
      case Op::sub: elementwise(in, rounded(t->dtype, a(0) + " - " + a(1))); break;
      case Op::mul: elementwise(in, rounded(t->dtype, a(0) + " * " + a(1))); break;
      case Op::div:
        // Scalars divide exactly (once per program); tiles use the 2-ulp full-range division.
        elementwise(in, rounded(t->dtype, fl && t->rank > 0 ? "tf_div(" + a(0) + ", " + a(1) + ")" : a(0) + " / " + a(1)));
        break;
      case Op::rem: elementwise(in, a(0) + " % " + a(1)); break;
      case Op::minimum: elementwise(in, fl ? "fminf(" + a(0) + ", " + a(1) + ")" : "min(" + a(0) + ", " + a(1) + ")"); break;
      case Op::maximum: elementwise(in, fl ? "fmaxf(" + a(0) + ", " + a(1) + ")" : "max(" + a(0) + ", " + a(1) + ")"); break;
      case Op::neg: elementwise(in, "-" + a(0)); break;
      case Op::exp: elementwise(in, rounded(t->dtype, "tf_exp(" + a(0) + ")")); break;
      case Op::exp2: elementwise(in, rounded(t->dtype, "tf_exp2(" + a(0) + ")")); break;
      case Op::log: elementwise(in, rounded(t->dtype, "logf(" + a(0) + ")")); break;
      case Op::sqrt: elementwise(in, rounded(t->dtype, "sqrtf(" + a(0) + ")")); break;
      case Op::rsqrt: elementwise(in, rounded(t->dtype, "rsqrtf(" + a(0) + ")")); break;
      case Op::erf: elementwise(in, rounded(t->dtype, "erff(" + a(0) + ")")); break;
      case Op::rand:
        elementwise(in, "tf_rand((unsigned long long)(long long)" + a(0) + ", (long long)" + a(1) + ")");
        break;
      case Op::abs:
        elementwise(in, fl ? "fabsf(" + a(0) + ")" : (t->dtype == DType::i64 ? "llabs(" : "abs(") + a(0) + ")");
        break;
      case Op::lt: compare(in, "<"); break;
      case Op::le: compare(in, "<="); break;
      case Op::gt: compare(in, ">"); break;
      case Op::ge: compare(in, ">="); break;
      case Op::eq: elementwise(in, a(0) + " == " + a(1)); break;
      case Op::ne: elementwise(in, a(0) + " != " + a(1)); break;
      case Op::logical_and: elementwise(in, a(0) + " && " + a(1)); break;
      case Op::logical_or: elementwise(in, a(0) + " || " + a(1)); break;
      case Op::logical_not: elementwise(in, "!" + a(0)); break;
      case Op::select: elementwise(in, known_true(in.args[0]) ? a(1) : a(0) + " ? " + a(1) + " : " + a(2)); break;
      case Op::cast: cast(in); break;
      case Op::ptr_add: elementwise(in, a(0) + " + " + a(1)); break;
      case Op::load: load(in); break;
      case Op::store: store(in); break;
      case Op::reduce_max:
      case Op::reduce_min:
      case Op::reduce_sum: reduce(in); break;
      case Op::loop: loop(in); break;
      case Op::cluster_max:
      case Op::cluster_sum: cluster_reduce(in); break;
      case Op::stage_store:
      case Op::stage_load: stage_access(in); break;
      case Op::stage_copy: stage_copy(in); break;
    }
  }

  // Stores the run of W elements of register tile `val` at e0 to `addr` as one access: halves are rounded
  // and packed two to a word (one conversion per pair), everything else converted element by element.
  void store_run(const std::string& indent, DType dt, int W, const std::string& val, const std::string& addr, int hint = 0) {
    const std::string H = hint_arg(hint);
    const bool narrow = dt == DType::f16 || dt == DType::bf16;
    if (narrow && W >= 2) {
      os_ << indent << "unsigned raw[" << W / 2 << "];\n";
      os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W / 2 << "; ++k) raw[k] = "
          << (dt == DType::bf16 ? "tf_pack_bf16x2(" : "tf_pack_f16x2(") << val << "[e0 + 2 * k], " << val << "[e0 + 2 * k + 1]);\n";
      os_ << indent << "tf_store_vec<unsigned, " << W / 2 << H << ">(reinterpret_cast<unsigned*>(" << addr << "), raw);\n";
      return;
    }
    const std::string S = storage_type(dt);
    os_ << indent << S << " raw[" << W << "];\n";
    os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W << "; ++k) raw[k] = " << to_storage(dt, val + "[e0 + k]")
        << ";\n";
    os_ << indent << "tf_store_vec<" << S << ", " << W << H << ">(" << addr << ", raw);\n";
  }

  // Loads the run of W elements at `addr` into register tile `r` at e0 as one access: halves as W / 2
  // words, each widened in place (see from_word), everything else element by element.
  void load_run(const std::string& indent, DType dt, int W, const std::string& addr, const std::string& r) {
    if ((dt == DType::f16 || dt == DType::bf16) && W >= 2) {
      os_ << indent << "unsigned raw[" << W / 2 << "];\n";
      os_ << indent << "tf_load_vec<unsigned, " << W / 2 << ">(reinterpret_cast<const unsigned*>(" << addr << "), raw);\n";
      os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W / 2 << "; ++k) { " << r
          << "[e0 + 2 * k] = " << from_word(dt, "raw[k]", 0) << "; " << r << "[e0 + 2 * k + 1] = " << from_word(dt, "raw[k]", 1)
          << "; }\n";
      return;
    }
    const std::string S = storage_type(dt);
    os_ << indent << S << " raw[" << W << "];\n";
    os_ << indent << "tf_load_vec<" << S << ", " << W << ">(" << addr << ", raw);\n";
    os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W << "; ++k) " << r << "[e0 + k] = "
        << from_storage(dt, "raw[k]") << ";\n";
  }

  static bool stage_accesses_in(const std::vector<ir::Instr>& block) { return any_of_ops(block, ir::is_stage_access); }

  static bool copies_in(const std::vector<ir::Instr>& block) {
    return any_of_ops(block, [](Op op) { return op == Op::stage_copy; });
  }

  // The barrier before an access of a stage whose elements threads share (none for an owned stage).
  void stage_barrier(const ir::Instr& in) {
    if (!stage_owned_[in.index]) os_ << "  " << (packed_ ? "__syncwarp()" : "__syncthreads()") << ";\n";
  }

  // Before a stage access: this thread's copies must have landed (and, for a stage read across threads,
  // everyone's: the barrier follows the wait).
  void stage_sync(const ir::Instr& in) {
    if (copies_pending_) {
      os_ << "  tf_copy_wait();\n";
      copies_pending_ = false;
    }
    stage_barrier(in);
  }

  // Which part of a stage a tile access at `offset` touches: `inside` when the offset keeps the whole tile
  // in [0, N); `whole` when the tile is wholly inside or outside (an offset divisible by P, N a multiple of
  // P), tested once by `tile_in`; else each element is tested (element_in).
  struct StageBounds {
    bool inside = false, whole = false;
    std::string tile_in;
  };
  StageBounds stage_bounds(const ir::Instr& in, std::int64_t P) const {
    const std::int64_t N = fn_.stages.at(in.index).size;
    const passes::AxisInfo& oi = axis_[in.args[0]];
    StageBounds b;
    b.inside = oi.bounded && oi.min >= 0 && oi.max <= N - P;
    b.whole = oi.divisibility >= P && N % P == 0;
    if (!b.inside && b.whole) b.tile_in = "(unsigned)" + v(in.args[0]) + " < " + std::to_string(N) + "u";
    return b;
  }
  std::string element_in(const ir::Instr& in, const StageBounds& b, const passes::TileLayout& l, const std::string& e) const {
    if (b.inside || b.whole) return "";
    return "(unsigned)(" + v(in.args[0]) + " + " + index_expr(l, e) + ") < " + std::to_string(fn_.stages.at(in.index).size) + "u";
  }
  static std::string all_of(const std::vector<std::string>& parts) {
    std::string c;
    for (const auto& p : parts)
      if (!p.empty()) c += (c.empty() ? "" : " && ") + p;
    return c;
  }

  // Global memory into a stage: runs of 4, 8 or 16 bytes as asynchronous copies (a run outside the mask
  // writes zeros), anything narrower or unaligned element by element (synchronously).
  void stage_copy(const ir::Instr& in) {
    // No wait for earlier copies: they target other elements (two copies into one element with no access
    // of the stage between them land in either order, as documented for tl::Stage::copy).
    stage_barrier(in);
    const ir::Stage& st = fn_.stages.at(in.index);
    const auto& pt = fn_.values[in.args[1]];
    const auto& l = layout(pt);
    const std::string off = v(in.args[0]), base = "tf_stage" + std::to_string(in.index), p = v(in.args[1]);
    const std::string S = storage_type(st.dtype);
    const bool masked = in.args.size() == 3 && !known_true(in.args[2]);
    const StageBounds b = stage_bounds(in, pt.dims[0]);
    const int bytes = ir::dtype_bytes(st.dtype);
    int W = std::min(vector_width(in.args[1]), l.vector);
    while (W > 1 && axis_[in.args[0]].divisibility < W) W /= 2;
    if (!b.inside && !b.whole) W = 1;
    if (masked && !mask_constant_over(in.args[2], W)) W = 1;
    const int E = l.per_thread;
    if (W * bytes < 4) {
      const std::string c = all_of({live(pt), b.tile_in, element_in(in, b, l, "e")});
      const std::string value = masked ? v(in.args[2]) + "[e] ? *" + p + "[e] : (" + S + ")0" : "*" + p + "[e]";
      os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) " << (c.empty() ? "" : "if (" + c + ") ") << base
          << "[" << off << " + " << index_expr(l) << "] = " << value << ";\n";
      return;
    }
    const std::string c = all_of({live(pt), b.tile_in, element_in(in, b, l, "e0")});
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ")";
    if (!c.empty()) os_ << " if (" << c << ")";
    os_ << " tf_copy_async<" << W * bytes << ">(" << base << " + " << off << " + " << index_expr(l, "e0") << ", " << p
        << "[e0], " << (masked ? v(in.args[2]) + "[e0]" : std::string("true")) << ");\n";
    copies_pending_ = true;
  }

  // Stages live in the block's dynamic shared memory (the runtime passes ir::stage_bytes per program, times
  // the programs a block packs), each 16-byte aligned so that runs move as 16-byte accesses.
  void declare_stages() {
    if (fn_.stages.empty()) return;
    const std::int64_t per_program = ir::stage_bytes(fn_.stages);
    os_ << "  extern __shared__ __align__(16) unsigned char tf_shared[];\n";
    const std::string program_base = packed_ ? " + (threadIdx.x >> 5) * " + std::to_string(per_program) : "";
    for (std::size_t k = 0; k < fn_.stages.size(); ++k) {
      const ir::Stage& st = fn_.stages[k];
      const std::string S = storage_type(st.dtype);
      os_ << "  // stage @" << k << ": " << ir::dtype_name(st.dtype) << "[" << st.size << "], "
          << (stage_owned_[k] ? "each thread reads back only what it wrote (no barriers)"
                              : "read across threads (a barrier before each access)")
          << "\n";
      os_ << "  " << S << "* const tf_stage" << k << " = reinterpret_cast<" << S << "*>(tf_shared + "
          << ir::stage_offset(fn_.stages, k) << program_base << ");\n";
    }
  }

  // Whether every access of each stage moves tiles of one size P at offsets divisible by P: element q of
  // the stage is then always element q % P of a tile, held by the same thread in every access.
  std::vector<bool> stages_owned() const {
    std::vector<bool> owned(fn_.stages.size(), true);
    std::vector<std::int64_t> piece(fn_.stages.size(), 0);
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      if (!ir::is_stage_access(in.op)) return;
      const std::int64_t P = fn_.values[in.op == Op::stage_load ? in.result : in.args[1]].dims[0];
      if (piece[in.index] == 0) piece[in.index] = P;
      if (piece[in.index] != P || axis_[in.args[0]].divisibility < P) owned[in.index] = false;
    });
    return owned;
  }

  void stage_access(const ir::Instr& in) {
    const bool store = in.op == Op::stage_store;
    const ir::Stage& st = fn_.stages.at(in.index);
    const ir::ValueId tile = store ? in.args[1] : in.result;
    const auto& t = fn_.values[tile];
    const auto& l = layout(t);
    const std::int64_t P = t.dims[0];
    const std::string off = v(in.args[0]), base = "tf_stage" + std::to_string(in.index);
    const std::string S = storage_type(st.dtype);
    const std::size_t mask_at = store ? 2 : 1;
    const bool masked = in.args.size() > mask_at && !known_true(in.args[mask_at]);
    const ir::ValueId mask = masked ? in.args[mask_at] : -1;
    stage_sync(in);
    // Elements outside [0, N) are masked off (see stage_bounds).
    const StageBounds b = stage_bounds(in, P);
    auto cond = [&](const std::string& e) {
      return all_of({live(t), b.tile_in, element_in(in, b, l, e), masked ? v(mask) + "[" + e + "]" : ""});
    };
    const int E = l.per_thread;
    const int bytes = ir::dtype_bytes(st.dtype);
    int W = l.vector;
    while (W > 1 && (W * bytes > 16 || axis_[in.args[0]].divisibility < W)) W /= 2;
    if (!b.inside && !b.whole) W = 1;  // the bounds test is per element
    if (masked && !mask_constant_over(mask, W)) W = 1;
    const std::string r = store ? "" : v(in.result);
    const std::string other = store ? "" : masked ? v(in.args[2]) + "[e]" : literal(t.dtype, 0);
    if (!store) os_ << "  " << reg_type(t) << " " << r << "[" << E << "];\n";
    if (W == 1) {
      const std::string c = cond("e");
      const std::string addr = base + "[" + off + " + " + index_expr(l) + "]";
      os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) ";
      if (store) os_ << (c.empty() ? "" : "if (" + c + ") ") << addr << " = " << to_storage(st.dtype, v(in.args[1]) + "[e]") << ";\n";
      else os_ << r << "[e] = " << (c.empty() ? from_storage(st.dtype, addr) : c + " ? " + from_storage(st.dtype, addr) + " : " + other) << ";\n";
      return;
    }
    const std::string c = cond("e0");
    const std::string in_run = c.empty() ? "    " : "      ";
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ") {\n";
    if (!c.empty()) os_ << "    if (" << c << ") {\n";
    const std::string addr = base + " + " + off + " + " + index_expr(l, "e0");
    if (store) {
      store_run(in_run, st.dtype, W, v(in.args[1]), addr);
    } else {
      load_run(in_run, st.dtype, W, addr, r);
    }
    if (!c.empty()) {
      os_ << "    }";
      if (!store)
        os_ << " else {\n#pragma unroll\n      for (int e = e0; e < e0 + " << W << "; ++e) " << r << "[e] = " << other
            << ";\n    }";
      os_ << "\n";
    }
    os_ << "  }\n";
  }

  // Every thread holds the program's scalar; thread 0 publishes it in a shared slot, and after a cluster
  // barrier every thread combines the slots of all blocks in rank order (as the interpreter does). A block
  // must outlive every read of its slots: it arrives once after its last read and waits at its end.
  void cluster_reduce(const ir::Instr& in) {
    const std::string r = v(in.result), x = v(in.args[0]);
    const int C = opt_.cluster_size;
    if (C <= 1) {
      os_ << "  const float " << r << " = " << x << ";  // a cluster of one program\n";
      return;
    }
    const std::string slot = "tf_cluster" + std::to_string(in.result);
    const bool max = in.op == Op::cluster_max;
    os_ << "  float " << r << ";\n  {\n";
    os_ << "    __shared__ float " << slot << ";\n";
    os_ << "    if (tid == 0) " << slot << " = " << x << ";\n";
    os_ << "    tf_cluster_sync();\n";
    os_ << "    float acc = tf_cluster_read(&" << slot << ", 0u);\n";
    os_ << "#pragma unroll\n    for (unsigned rank = 1; rank < " << C << "u; ++rank) acc = "
        << (max ? "fmaxf(acc, tf_cluster_read(&" + slot + ", rank))" : "acc + tf_cluster_read(&" + slot + ", rank)") << ";\n";
    // Each reduction has its own slot, so no barrier is needed before the next one writes; after the last
    // read, the block only announces it is done (the matching wait ends the kernel).
    if (--cluster_reductions_left_ == 0) os_ << "    tf_cluster_arrive();\n";
    os_ << "    " << r << " = acc;\n  }\n";
  }

  // A cast to f16/bf16 whose every use stores it keeps the f32 value: the store rounds it once (RN of
  // the value equals RN of its RN), which spares a conversion and a widening per element.
  void cast(const ir::Instr& in) {
    const DType from = fn_.values[in.args[0]].dtype, to = fn_.values[in.result].dtype;
    if (ir::is_float(from) && (to == DType::f16 || to == DType::bf16) && only_stored_[in.result])
      return elementwise(in, at(in.args[0]) + "  /* rounded by its stores */");
    elementwise(in, cast_expr(from, to, at(in.args[0])));
  }

  // Values whose every use is the value operand of a store or stage_store (not its pointer, mask or
  // offset; not a loop's carried value or yield).
  std::vector<bool> values_only_stored() const {
    std::vector<int> uses(fn_.values.size(), 0), stored(fn_.values.size(), 0);
    auto count = [&](ir::ValueId id) { if (id >= 0) ++uses[id]; };
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      for (std::size_t k = 0; k < in.args.size(); ++k) {
        count(in.args[k]);
        if (k == 1 && (in.op == Op::store || in.op == Op::stage_store)) ++stored[in.args[k]];
      }
      for (auto id : in.block_args) count(id);
      for (auto id : in.yields) count(id);
      for (auto id : in.results) count(id);
    });
    std::vector<bool> only(fn_.values.size(), false);
    for (std::size_t id = 0; id < only.size(); ++id) only[id] = uses[id] > 0 && uses[id] == stored[id];
    return only;
  }

  static std::string cast_expr(DType from, DType to, const std::string& x) {
    if (from == to) return x;
    if (ir::is_float(to)) {
      if (ir::is_float(from)) return rounded(to, x);  // values are already floats in registers
      return rounded(to, "(float)" + x);
    }
    if (to == DType::i1) return x + " != 0";
    if (ir::is_float(from)) return to == DType::i32 ? "tf_f2i(" + x + ")" : "tf_f2ll(" + x + ")";
    return to == DType::i32 ? "(int)" + x : "(long long)" + x;
  }

  // Elements per vector access of a load or store through pointer tile `ptr` (1 when not provable).
  int vector_width(ir::ValueId ptr) const {
    const auto& pt = fn_.values[ptr];
    if (pt.rank == 0) return 1;
    const auto& l = layout(pt);
    const int bytes = ir::dtype_bytes(pt.dtype);
    const auto& info = axis_[ptr];
    int w = l.vector;
    while (w > 1 && (w * bytes > 16 || info.contiguity < w || info.divisibility < w * bytes)) w /= 2;
    return w;
  }

  // Whether a mask holds everywhere for this specialization (e.g. arange<N> < n with n a positive multiple
  // of N): masked accesses and selects under it are emitted without the mask.
  bool known_true(ir::ValueId mask) const { return axis_[mask].always_true; }

  // The cache hint of a global load or store (masks take none), and what it adds to tf_load_vec's or
  // tf_store_vec's template arguments.
  static int hint_of(const ir::Instr& in, DType dt) { return dt == DType::i1 ? 0 : static_cast<int>(in.index); }
  static std::string hint_arg(int hint) { return hint ? ", " + std::to_string(hint) : ""; }
  // The element at address `addr` (of storage type S) read with cache hint `hint`.
  static std::string read(const std::string& S, const std::string& addr, int hint) {
    return hint ? "tf_ld<" + std::to_string(hint) + ", " + S + ">(" + addr + ")" : "*" + addr;
  }
  // `value` (of storage type S) written to `addr` with cache hint `hint`.
  static std::string write(const std::string& S, const std::string& addr, const std::string& value, int hint) {
    return hint ? "tf_st<" + std::to_string(hint) + ", " + S + ">(" + addr + ", " + value + ")" : "*" + addr + " = " + value;
  }

  void load(const ir::Instr& in) {
    const auto& t = fn_.values[in.result];
    const std::string p = v(in.args[0]);
    const bool masked = in.args.size() >= 2 && !known_true(in.args[1]);
    const std::string S = storage_type(t.dtype);
    const int hint = hint_of(in, t.dtype);
    if (t.rank == 0) {
      const std::string value = from_storage(t.dtype, read(S, p, hint));
      os_ << "  const " << reg_type(t) << " " << v(in.result) << " = "
          << (masked ? v(in.args[1]) + " ? " + value + " : " + v(in.args[2]) : value) << ";\n";
      return;
    }
    const int E = per_thread(t);
    const int W = vector_width(in.args[0]);
    const std::string lv = live(t);
    auto pred = [&](const std::string& idx) {
      std::string s = lv;
      if (masked) s += (s.empty() ? "" : " && ") + v(in.args[1]) + "[" + idx + "]";
      return s;
    };
    const std::string r = v(in.result);
    os_ << "  " << reg_type(t) << " " << r << "[" << E << "];\n";
    const std::string other = masked ? v(in.args[2]) + "[e]" : literal(t.dtype, 0);
    if (W == 1) {
      const std::string cond = pred("e");
      const std::string value = from_storage(t.dtype, read(S, p + "[e]", hint));
      os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) " << r << "[e] = "
          << (cond.empty() ? value : cond + " ? " + value + " : " + other) << ";\n";
      return;
    }
    // Vector path: a run of W elements is contiguous and aligned; take it in one access when every lane of
    // the run is in the mask, else element by element (the ragged tail of a row). Halves are gathered raw
    // for every run first and widened afterwards: widening inside the run's branch would wait for each
    // access before issuing the next, one memory round trip per run instead of one per tile.
    // Halves are gathered as words of two (W is even here) and widened in place.
    const bool narrow = t.dtype == DType::f16 || t.dtype == DType::bf16;
    const std::string dst = narrow ? "raw" + std::to_string(in.result) : r;
    const std::string conv_other = narrow ? to_storage(t.dtype, other) : other;
    auto element = [&](const std::string& addr) { return narrow ? addr : from_storage(t.dtype, addr); };
    if (narrow) os_ << "  unsigned " << dst << "[" << E / 2 << "];\n";
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ") {\n";
    const std::string all = run_in_mask(pred, masked ? in.args[1] : -1, W);
    const std::string in_run = all.empty() ? "    " : "      ";  // the run's body, inside the mask test if any
    if (!all.empty()) os_ << "    if (" << all << ") {\n";
    if (narrow) {
      os_ << in_run << "unsigned raw[" << W / 2 << "];\n";
      os_ << in_run << "tf_load_vec<unsigned, " << W / 2 << hint_arg(hint) << ">(reinterpret_cast<const unsigned*>(" << p << "[e0]), raw);\n";
      os_ << "#pragma unroll\n" << in_run << "for (int k = 0; k < " << W / 2 << "; ++k) " << dst << "[e0 / 2 + k] = raw[k];\n";
    } else {
      os_ << in_run << S << " raw[" << W << "];\n";
      os_ << in_run << "tf_load_vec<" << S << ", " << W << hint_arg(hint) << ">(" << p << "[e0], raw);\n";
      os_ << "#pragma unroll\n" << in_run << "for (int k = 0; k < " << W << "; ++k) " << dst << "[e0 + k] = raw[k];\n";
    }
    if (all.empty()) {
      os_ << "  }\n";
    } else {
      os_ << "    } else {\n";
      const std::string cond = pred("e");
      // A mask constant over the run is false on all of it here: the run takes `other` without loading.
      const std::string value = masked && mask_constant_over(in.args[1], W) ? conv_other
                                : cond.empty() ? element(read(S, p + "[e]", hint))
                                               : cond + " ? " + element(read(S, p + "[e]", hint)) + " : " + conv_other;
      if (narrow) {
        os_ << "#pragma unroll\n      for (int e2 = e0; e2 < e0 + " << W << "; e2 += 2) {\n";
        os_ << "        unsigned word = 0;\n";
        os_ << "#pragma unroll\n        for (int h = 0; h < 2; ++h) { const int e = e2 + h; const tf_u16 half = " << value
            << "; word |= (unsigned)half << (16 * h); }\n";
        os_ << "        " << dst << "[e2 / 2] = word;\n      }\n";
      } else {
        os_ << "#pragma unroll\n      for (int e = e0; e < e0 + " << W << "; ++e) " << dst << "[e] = " << value << ";\n";
      }
      os_ << "    }\n  }\n";
    }
    if (narrow)
      os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; e += 2) { " << r << "[e] = " << from_word(t.dtype, dst + "[e / 2]", 0)
          << "; " << r << "[e + 1] = " << from_word(t.dtype, dst + "[e / 2]", 1) << "; }\n";
  }

  // Whether every lane of the run at e0 is in the mask: one test of the run's last lane when the mask is
  // `contiguous < uniform` (an arange-based index against a bound: the last lane is the largest), else
  // every lane's flag.
  template <class Pred>
  std::string run_in_mask(Pred pred, ir::ValueId mask, int W) const {
    if (mask >= 0 && W > 1) {
      if (mask_constant_over(mask, W)) return pred("e0");
      const ir::Instr* def = def_[mask];
      if (def && def->op == Op::lt && axis_[def->args[0]].contiguity >= W && axis_[def->args[1]].uniform)
        return pred("e0 + " + std::to_string(W - 1));
    }
    return pred_all(pred, W);
  }

  // "m[e0] && m[e0 + 1] && ..." over a run of W, or "" when nothing is masked.
  template <class Pred>
  static std::string pred_all(Pred pred, int W) {
    std::string all;
    for (int k = 0; k < W; ++k) {
      const std::string c = pred(k ? "e0 + " + std::to_string(k) : std::string("e0"));
      if (c.empty()) return pred("e0");  // nothing but (maybe) the uniform live flag
      all += (k ? " && " : "") + c;
    }
    return all;
  }

  void store(const ir::Instr& in) {
    const auto& pt = fn_.values[in.args[0]];
    const std::string p = v(in.args[0]);
    const bool masked = in.args.size() == 3 && !known_true(in.args[2]);
    const DType dt = pt.dtype;
    const std::string S = storage_type(dt);
    const int hint = hint_of(in, dt);
    if (pt.rank == 0) {
      // Every thread holds the scalar; one writes it.
      os_ << "  if (tid == 0" << (masked ? " && " + v(in.args[2]) : "") << ") " << write(S, p, to_storage(dt, v(in.args[1])), hint)
          << ";\n";
      return;
    }
    const int E = layout(pt).per_thread;
    const int W = vector_width(in.args[0]);
    const std::string lv = live(pt);
    auto pred = [&](const std::string& idx) {
      std::string s = lv;
      if (masked) s += (s.empty() ? "" : " && ") + v(in.args[2]) + "[" + idx + "]";
      return s;
    };
    const std::string val = v(in.args[1]);
    if (W == 1) {
      const std::string cond = pred("e");
      os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) " << (cond.empty() ? "" : "if (" + cond + ") ")
          << write(S, p + "[e]", to_storage(dt, val + "[e]"), hint) << ";\n";
      return;
    }
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ") {\n";
    const std::string all = run_in_mask(pred, masked ? in.args[2] : -1, W);
    const std::string in_run = all.empty() ? "    " : "      ";
    if (!all.empty()) os_ << "    if (" << all << ") {\n";
    store_run(in_run, dt, W, val, p + "[e0]", hint);
    if (all.empty()) {
      os_ << "  }\n";
      return;
    }
    if (masked && mask_constant_over(in.args[2], W)) {  // the run is wholly outside the mask: nothing to write
      os_ << "    }\n  }\n";
      return;
    }
    const std::string cond = pred("e");
    os_ << "    } else {\n#pragma unroll\n      for (int e = e0; e < e0 + " << W << "; ++e) "
        << (cond.empty() ? "" : "if (" + cond + ") ") << write(S, p + "[e]", to_storage(dt, val + "[e]"), hint) << ";\n";
    os_ << "    }\n  }\n";
  }

  void reduce(const ir::Instr& in) {
    const auto& src = fn_.values[in.args[0]];
    const auto& t = fn_.values[in.result];
    const bool fl = ir::is_float(t.dtype);
    const std::string R = reg_type(t);
    std::string ident, comb;
    switch (in.op) {
      case Op::reduce_max:
        ident = fl ? "__int_as_float(0xff800000)" : (t.dtype == DType::i32 ? "(-2147483647 - 1)" : "(-9223372036854775807ll - 1)");
        comb = fl ? "fmaxf(A, B)" : "max(A, B)";
        break;
      case Op::reduce_min:
        ident = fl ? "__int_as_float(0x7f800000)" : (t.dtype == DType::i32 ? "2147483647" : "9223372036854775807ll");
        comb = fl ? "fminf(A, B)" : "min(A, B)";
        break;
      default:
        ident = fl ? "0.0f" : (t.dtype == DType::i64 ? "0ll" : "0");
        comb = "A + B";
        break;
    }
    auto combine = [&](const std::string& x, const std::string& y) {
      std::string c = comb;
      c.replace(c.find('A'), 1, x);
      c.replace(c.find('B'), 1, y);
      return c;
    };
    const int E = per_thread(src);
    const std::string lv = live(src);
    const std::string r = v(in.result);
    const std::string x = v(in.args[0]) + "[e]";
    const std::string red = "tf_red" + std::to_string(in.result);
    os_ << "  " << R << " " << r << ";\n  {\n";
    os_ << "    " << R << " acc = " << ident << ";\n";
    os_ << "#pragma unroll\n    for (int e = 0; e < " << E << "; ++e) acc = "
        << combine("acc", lv.empty() ? x : "(" + lv + " ? " + x + " : " + ident + ")") << ";\n";
    os_ << "#pragma unroll\n    for (int offset = 16; offset > 0; offset >>= 1) acc = "
        << combine("acc", "__shfl_xor_sync(0xffffffffu, acc, offset)") << ";\n";
    if (opt_.num_warps > 1) {
      // Each warp's total goes through shared memory; every thread then combines all of them, which
      // leaves the result in every thread. One slot array per reduction: no barrier is needed after it.
      os_ << "    __shared__ " << R << " " << red << "[" << opt_.num_warps << "];\n";
      os_ << "    if (lane == 0) " << red << "[warp] = acc;\n    __syncthreads();\n";
      os_ << "    acc = " << red << "[0];\n";
      os_ << "#pragma unroll\n    for (int w = 1; w < " << opt_.num_warps << "; ++w) acc = "
          << combine("acc", red + "[w]") << ";\n";
      // In a loop the next iteration writes the same slots: wait until every thread has read them.
      if (loop_depth_ > 0) os_ << "    __syncthreads();\n";
    }
    os_ << "    " << r << " = " << rounded(t.dtype, "acc") << ";\n  }\n";
  }

  const ir::Function& fn_;
  const Options& opt_;
  int threads_;
  bool packed_;
  int cluster_reductions_left_ = 0;  // cluster reductions not yet emitted (the last one arrives at the exit barrier)
  std::map<std::int64_t, passes::TileLayout> layouts_;
  std::vector<passes::AxisInfo> axis_;
  std::vector<const ir::Instr*> def_;  // the instruction defining each value (null for loop block arguments)
  int loop_depth_ = 0;
  std::vector<bool> stage_owned_;
  std::vector<bool> only_stored_;  // see values_only_stored  // per stage: every thread reads back only what it wrote (stages_owned)
  bool copies_pending_ = false;    // a stage copy may be in flight at this point of the emitted code
  std::vector<std::int64_t> root_;
  std::vector<bool> written_;
  std::ostringstream os_;
};

}  // namespace

std::string kernel_symbol(const ir::Function& fn) { return "tilefuse_" + identifier(fn.name); }

std::string cuda_source(const ir::Function& fn, const Options& options) { return Emitter(fn, options).run(); }

}  // namespace tilefuse::codegen
