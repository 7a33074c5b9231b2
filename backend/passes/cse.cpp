#include <functional>
#include <map>
#include <tuple>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

ir::Function cse(const ir::Function& fn) {
  ir::Function out = fn;
  std::vector<ir::ValueId> replace(fn.values.size());
  for (std::size_t i = 0; i < replace.size(); ++i) replace[i] = static_cast<ir::ValueId>(i);
  // Key of a pure instruction: everything that decides its value. The result type is part of it because
  // a cast (or constant) differs only by its result dtype.
  using Key = std::tuple<ir::Op, std::vector<ir::ValueId>, std::int64_t, double, std::string>;
  // A loop body sees the expressions computed before it, but what it computes stays inside it.
  std::function<std::vector<ir::Instr>(const std::vector<ir::Instr>&, std::map<Key, ir::ValueId>)> block =
      [&](const std::vector<ir::Instr>& in_block, std::map<Key, ir::ValueId> seen) {
        std::vector<ir::Instr> result;
        for (const ir::Instr& in : in_block) {
          ir::Instr copy = in;
          for (auto& a : copy.args) a = replace[a];
          if (in.op == ir::Op::loop) {
            copy.body = block(in.body, seen);
            for (auto& y : copy.yields) y = replace[y];
          } else if (ir::is_pure(in.op) && in.result >= 0) {
            Key key{in.op, copy.args, in.index, in.number, fn.values[in.result].str()};
            if (auto it = seen.find(key); it != seen.end()) {
              replace[in.result] = it->second;
              continue;
            }
            seen.emplace(std::move(key), in.result);
          }
          result.push_back(std::move(copy));
        }
        return result;
      };
  out.body = block(fn.body, {});
  return out;
}

}  // namespace tilefuse::passes
