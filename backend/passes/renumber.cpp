// Renumbering: the same function with values numbered 0, 1, ... in order of definition (the other passes
// keep ids stable and leave gaps), so the printer and the code generator see dense names.
#include "backend/passes/passes.hpp"
#include "backend/passes/rewriter.hpp"

namespace tilefuse::passes {

ir::Function renumber(const ir::Function& fn) {
  struct Dense : Rewriter {
    Dense() : Rewriter(Numbering::dense) {}
  };
  return Dense().run(fn);
}

}  // namespace tilefuse::passes
