// IR passes. Each rewriting pass is a free function Function -> Function in a file of its own, built on
// the shared Rewriter; optimize() runs them in order. The analyses code generation reads live in
// backend/passes/analysis/.
#pragma once

#include <functional>
#include <string>

#include "backend/ir/ir.hpp"

namespace tilefuse::passes {

/// Common subexpression elimination: pure instructions with equal op, operands and attribute are
/// computed once.
ir::Function cse(const ir::Function& fn);

/// Dead code elimination: drops pure instructions whose results nothing uses.
ir::Function dce(const ir::Function& fn);

/// Folds arithmetic on constants and removes identities (x + 0, x * 1, casts to the same dtype).
ir::Function simplify(const ir::Function& fn);

/// Moves every load as early as its operands allow (never above a store or a gdc_wait), so that loads issue before the
/// barriers of reductions and their latency overlaps the rest of the program.
ir::Function hoist_loads(const ir::Function& fn);

/// The same function with values numbered 0, 1, ... in order of definition (passes leave gaps).
ir::Function renumber(const ir::Function& fn);

/// Called with the pass name and the IR after each pass.
using DumpHook = std::function<void(const std::string& pass, const ir::Function& fn)>;

/// verify, simplify, cse, dce, hoist_loads, renumber, verify; `dump` (if set) sees the IR after each
/// rewriting pass.
ir::Function optimize(const ir::Function& fn, const DumpHook& dump = {});

}  // namespace tilefuse::passes
