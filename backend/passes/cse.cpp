#include <map>
#include <tuple>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

ir::Function cse(const ir::Function& fn) {
  ir::Function out;
  out.name = fn.name;
  out.params = fn.params;
  std::vector<ir::ValueId> remap(fn.values.size(), -1);
  // Key of a pure instruction: everything that decides its value. The result type is part of it because
  // a cast (or constant) differs only by its result dtype.
  using Key = std::tuple<ir::Op, std::vector<ir::ValueId>, std::int64_t, double, std::string>;
  std::map<Key, ir::ValueId> seen;
  for (const ir::Instr& in : fn.body) {
    ir::Instr copy = in;
    for (auto& a : copy.args) a = remap.at(a);
    const ir::ValueType* type = in.result >= 0 ? &fn.values[in.result] : nullptr;
    if (ir::is_pure(in.op) && type) {
      Key key{in.op, copy.args, in.index, in.number, type->str()};
      if (auto it = seen.find(key); it != seen.end()) {
        remap[in.result] = it->second;
        continue;
      }
      const ir::ValueId id = out.append(std::move(copy), type);
      seen.emplace(std::move(key), id);
      remap[in.result] = id;
    } else {
      const ir::ValueId id = out.append(std::move(copy), type);
      if (in.result >= 0) remap[in.result] = id;
    }
  }
  return out;
}

}  // namespace tilefuse::passes
