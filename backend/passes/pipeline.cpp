// The optimization pipeline: verify, then each rewriting pass in order with an optional dump after each,
// then dense numbering and a final verify.
#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

ir::Function optimize(const ir::Function& fn, const DumpHook& dump) {
  ir::verify(fn);
  if (dump) dump("trace", fn);
  ir::Function f = fn;
  const std::pair<const char*, ir::Function (*)(const ir::Function&)> pipeline[] = {
      {"simplify", simplify}, {"cse", cse}, {"dce", dce}, {"hoist_loads", hoist_loads}};
  for (const auto& [name, pass] : pipeline) {
    f = pass(f);
    if (dump) dump(name, f);
  }
  f = renumber(f);  // the passes keep value ids stable; number them densely for the printer and codegen
  ir::verify(f);
  return f;
}

}  // namespace tilefuse::passes
