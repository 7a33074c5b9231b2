// IR passes. Each rewriting pass is a free function Function -> Function; analyses return facts that
// code generation reads. optimize() runs the rewriting passes in order.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/ir/ir.hpp"

namespace tilefuse::passes {

/// Common subexpression elimination: pure instructions with equal op, operands and attributes are
/// computed once (values are renumbered densely).
ir::Function cse(const ir::Function& fn);

/// Dead code elimination: drops pure instructions whose results nothing uses.
ir::Function dce(const ir::Function& fn);

/// Folds arithmetic on constants and removes identities (x + 0, x * 1, casts to the same dtype).
ir::Function simplify(const ir::Function& fn);

/// Moves every load as early as its operands allow (never above a store), so that loads issue before the
/// barriers of reductions and their latency overlaps the rest of the program.
ir::Function hoist_loads(const ir::Function& fn);

/// Called with the pass name and the IR after each pass.
using DumpHook = std::function<void(const std::string& pass, const ir::Function& fn)>;

/// verify, simplify, cse, dce, hoist_loads, verify; `dump` (if set) sees the IR after each pass.
ir::Function optimize(const ir::Function& fn, const DumpHook& dump = {});

/// How a 1D tile of n elements is spread over a program's threads: thread t holds `per_thread` elements
/// in runs of `vector` contiguous ones; element e of thread t is tile index
/// (e / vector) * threads * vector + t * vector + e % vector. When n < threads, threads t >= n hold none.
struct TileLayout {
  int n = 1;
  int threads = 1;
  int per_thread = 1;
  int vector = 1;
};

/// Layout choice for every 1D tile size in `fn` with `threads` threads: runs as long as the widest 16-byte
/// access among the loads and stores of that size allows.
std::map<std::int64_t, TileLayout> choose_layouts(const ir::Function& fn, int threads);

/// What is known about an integer or pointer value: runs of `contiguity` consecutive elements each step by
/// one, and the first element of each run is divisible by `divisibility` (for pointers: its byte address);
/// `uniform` values are equal across the whole tile (scalars, splats).
struct AxisInfo {
  std::int64_t contiguity = 1;
  std::int64_t divisibility = 1;
  bool uniform = false;
  /// Known range of an integer value (every element), when `bounded`.
  bool bounded = false;
  std::int64_t min = 0, max = 0;
  /// A comparison that holds for every element (an index tile against a bound it never reaches).
  bool always_true = false;
  /// Elements are equal within aligned blocks of `constancy` (a power of two): `index < bound` with the
  /// bound a multiple of the block is all true or all false over each such block.
  std::int64_t constancy = 1;
  /// The scalar whose value every element repeats (a scalar itself, or a splat of it); -1 for others.
  ir::ValueId source = -1;
  /// When `below` >= 0: every element is at most the scalar `below` minus `headroom` (a loop's induction
  /// variable against its end, and that plus a bounded non-negative tile), so `x < below` holds when
  /// headroom >= 1.
  ir::ValueId below = -1;
  std::int64_t headroom = 0;
};

/// AxisInfo for every value, given the divisibility (integers) or byte alignment (pointers) of each parameter.
/// An integer parameter's divisibility above 16 also bounds it from below: the runtime records more than 16
/// only for positive arguments (see Specialization), so such an argument is at least its divisibility.
std::vector<AxisInfo> analyze_axis_info(const ir::Function& fn, const std::vector<int>& param_divisibility);

}  // namespace tilefuse::passes
