// The interpreter's memory accesses: global loads and stores through bounds-checked reads and writes, and
// stage copies, stores and loads (a stage access outside the stage is masked off, as on the GPU).
#include "backend/interp/program.hpp"

#include <cmath>
#include <string>

namespace tilefuse::interp::detail {

void Program::load(const ir::Instr& in) {
  const auto& t = type(in.result);
  const int base = arg(in, 0).base;
  const bool masked = in.args.size() >= 2;
  Value& r = make(in);
  const std::size_t n = size(in.result);
  for (std::size_t j = 0; j < n; ++j) {
    const bool on = !masked || ix(in, 1, j) != 0;
    if (ir::is_float(t.dtype)) r.f[j] = on ? read_float(in, base, ix(in, 0, j), t.dtype) : (masked ? fx(in, 2, j) : 0.0);
    else r.i[j] = on ? read_int(in, base, ix(in, 0, j), t.dtype) : (masked ? ix(in, 2, j) : 0);
  }
}

void Program::store(const ir::Instr& in) {
  const auto& pt = type(in.args[0]);
  const int base = arg(in, 0).base;
  const bool masked = in.args.size() == 3;
  const std::size_t n = size(in.args[0]);
  for (std::size_t j = 0; j < n; ++j) {
    if (masked && ix(in, 2, j) == 0) continue;
    if (ir::is_float(pt.dtype)) write(in, base, ix(in, 0, j), pt.dtype, fx(in, 1, j), 0);
    else write(in, base, ix(in, 0, j), pt.dtype, 0, ix(in, 1, j));
  }
}

// Element offset + j of the stage (a scatter: offsets[j]), where the mask allows and inside the stage
// (outside: dropped). Lanes of a scatter that name one element write it in lane order here; on the GPU
// either may win.
void Program::stage_store(const ir::Instr& in) {
  ++stage_epoch_[stage_of(in)];  // the stage's copies have landed
  Value& st = stages_[stage_of(in)];
  const DType dt = fn_.stages[stage_of(in)].dtype;
  const std::int64_t n = fn_.stages[stage_of(in)].size;
  const bool masked = in.args.size() == 3;
  for (std::size_t j = 0; j < size(in.args[1]); ++j) {
    const std::int64_t q = stage_element(in, j);
    if ((masked && ix(in, 2, j) == 0) || q < 0 || q >= n) continue;
    if (ir::is_float(dt)) st.f[q] = round_to(dt, fx(in, 1, j));
    else st.i[q] = wrap(dt, ix(in, 1, j));
  }
}

// Completes at once here; on the GPU it completes before the stage's next access, with the same result,
// unless an earlier copy with no access of the stage since wrote another value into one of its elements
// (a masked-off element's 0 included): the two land in either order there, and this is an error.
void Program::stage_copy(const ir::Instr& in) {
  const int s = stage_of(in);
  Value& st = stages_[s];
  const DType dt = fn_.stages[s].dtype;
  const std::int64_t off = ix(in, 0, 0), n = fn_.stages[s].size;
  const int base = arg(in, 1).base;
  const bool masked = in.args.size() == 3;
  const std::uint32_t epoch = stage_epoch_[s];
  for (std::size_t j = 0; j < size(in.args[1]); ++j) {
    const std::int64_t q = off + static_cast<std::int64_t>(j);
    if (q < 0 || q >= n) continue;
    const bool on = !masked || ix(in, 2, j) != 0;
    const bool pending = copied_in_[s][q] == epoch;
    if (ir::is_float(dt)) {
      const double v = on ? read_float(in, base, ix(in, 1, j), dt) : 0.0;
      if (pending && !(v == st.f[q] || (std::isnan(v) && std::isnan(st.f[q]))))
        race(in, q, std::to_string(st.f[q]), std::to_string(v));
      st.f[q] = v;
    } else {
      const std::int64_t v = on ? read_int(in, base, ix(in, 1, j), dt) : 0;
      if (pending && v != st.i[q]) race(in, q, std::to_string(st.i[q]), std::to_string(v));
      st.i[q] = v;
    }
    copied_in_[s][q] = epoch;
  }
}

void Program::race(const ir::Instr& in, std::int64_t element, const std::string& first, const std::string& second) const {
  fail(in, "copies into element " + std::to_string(element) + " of stage " + std::to_string(stage_of(in)) +
               " with no load or store of the stage between them write " + first + " and then " + second +
               "; on the GPU they land in either order (store the second value from registers: stage.store and scatter "
               "wait for the stage's copies)");
}

// Element offset + j of the stage (a gather: offsets[j]) where the mask allows and inside the stage;
// `other` (0 without a mask) elsewhere.
void Program::stage_load(const ir::Instr& in) {
  ++stage_epoch_[stage_of(in)];  // the stage's copies have landed
  const Value& st = stages_[stage_of(in)];
  const DType dt = fn_.stages[stage_of(in)].dtype;
  const std::int64_t n = fn_.stages[stage_of(in)].size;
  const bool masked = in.args.size() == 3;
  Value& r = make(in);
  for (std::size_t j = 0; j < size(in.result); ++j) {
    const std::int64_t q = stage_element(in, j);
    const bool on = (!masked || ix(in, 1, j) != 0) && q >= 0 && q < n;
    if (ir::is_float(dt)) r.f[j] = on ? st.f[q] : (masked ? fx(in, 2, j) : 0.0);
    else r.i[j] = on ? st.i[q] : (masked ? ix(in, 2, j) : 0);
  }
}

}  // namespace tilefuse::interp::detail
