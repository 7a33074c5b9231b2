// The tuner's private operands: copies of a call's input matrix (the caller's is only read) and outputs
// to write, as many sets as rotate the L2, on the call's backend; and set 0's output read back as float64
// for the check against the default configuration.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/runtime/args.hpp"
#include "backend/runtime/target.hpp"
#include "kernels/tune/tuner.hpp"

namespace tilefuse::kernels {

/// Sets of a matrix operand for tuning: in(s) a copy of the caller's input, out(s) an output of the same
/// dtype and size.
class TuneMatrices {
 public:
  /// `sets` copies of `input` (device or host memory) and as many outputs.
  TuneMatrices(const Arg& input, int sets, void* stream);
  ~TuneMatrices();
  TuneMatrices(const TuneMatrices&) = delete;
  TuneMatrices& operator=(const TuneMatrices&) = delete;

  int sets() const { return static_cast<int>(in_.size()); }
  const Arg& in(int s) const { return in_[s]; }
  const Arg& out(int s) const { return out_[s]; }
  /// Fills out(0) with NaN (the bytes 0xff, a NaN in every float dtype).
  void poison();
  /// out(0) as float64.
  std::vector<double> output() const;
  /// `count` more elements of `dtype` on the input's backend, for outputs besides the matrix (LayerNorm's
  /// mean and rstd), kept as long as this object.
  Arg scratch(ir::DType dtype, std::size_t count);

 private:
  struct Storage;
  std::unique_ptr<Storage> storage_;
  std::vector<Arg> in_, out_;
  void* stream_ = nullptr;
};

/// The tuner's run for `kernel` over rows x cols of m's dtype on opt's target: keyed by row_tune_key,
/// rotating over m's sets, poisoning and reading back m's set 0 output, accepting a relative error of
/// `tolerance` against the default's output (fewer runs in the interpreter, timed by the host clock).
TuneRun matrix_tune_run(const char* kernel, std::int64_t rows, std::int64_t cols, const RowOptions& opt, TuneMatrices& m, double tolerance);

/// Operand sets that make the tuner's rotation overflow the L2 for a matrix of `bytes` read and written
/// on `target` (2 to 8; 2 for the interpreter).
int tune_sets(const Target& target, std::int64_t bytes);

}  // namespace tilefuse::kernels
