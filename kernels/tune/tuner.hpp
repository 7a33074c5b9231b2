// The autotuner of the sample row kernels. Each kernel family declares its configuration space (a variant
// and tuning knobs per candidate: softmax_space, layernorm_space); the tuner times every candidate on the
// device (CUDA events, warm-up, the median of many runs, operand sets rotated past the L2), checks every
// candidate's output against the default configuration's before accepting it, and keeps the fastest
// accepted configuration per (kernel, shape bucket, dtype, architecture) in memory and on disk beside the
// kernel cache (written whole or not at all, checksummed). Tuning happens when asked: an explicit call
// (tune_softmax, tune_layernorm, the `tune` example), or on a bucket's first call when RowOptions::tune is
// TuneMode::first_use; TuneMode::cached only reads what was tuned. The default, TuneMode::off, never
// times anything. The variant table's rules are the default and the tuner's first candidate.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/runtime/args.hpp"
#include "backend/runtime/target.hpp"
#include "kernels/rows/options.hpp"

namespace tilefuse::kernels {

/// One configuration of a row kernel: the variant (automatic: the table's rules) and its tuning knobs.
struct RowConfig {
  RowVariant variant = RowVariant::automatic;
  Tuning tuning;
};

/// A family's configuration space as its tuner lists it: the rules first (RowVariant::automatic on the
/// caller's tuning), then each candidate, a variant on that tuning with an edit.
class RowSpace {
 public:
  explicit RowSpace(const Tuning& base) : base_(base), configs_{{RowVariant::automatic, base}} {}
  /// `variant` on the caller's tuning as `edit(Tuning&)` changes it.
  template <class Edit>
  void add(RowVariant variant, Edit&& edit) {
    RowConfig c{variant, base_};
    edit(c.tuning);
    configs_.push_back(c);
  }
  /// `variant` on the caller's tuning.
  void add(RowVariant variant) { configs_.push_back({variant, base_}); }
  std::vector<RowConfig> configs() && { return std::move(configs_); }

 private:
  Tuning base_;
  std::vector<RowConfig> configs_;
};

/// Row elements per thread (Tuning::row_elements) the tuners try for one program per row of `cols` besides
/// the rule's: 8, 16 and 32; past kWideRowElements columns 16, 32 and 64 (pieces at 32 warps, or one
/// tile at 16 warps).
std::vector<int> one_program_elements(std::int64_t cols);

/// The one-program configurations of packed narrow rows of `cols` elements of `element_bytes` besides the
/// rule's (none for rows too wide to pack): packed (Tuning::pack_rows, also where the rule gives aligned
/// rows of 512-byte tiles a program each) with the width an argument (Tuning::constant_cols false: the
/// rule compiles it in, and the family's own space already packs rows the rule does not); and for rows
/// that are not whole 16-byte vectors, staged the other way than the rule (Tuning::stage_rows), and, read
/// row by row, written through shared memory (Tuning::stage_stores). Each of the last two wins on some
/// shapes and loses on others (bench/NOTES.md, "Narrow rows copied into the stage").
void narrow_row_configs(RowSpace& space, std::int64_t cols, int element_bytes, const Tuning& base, bool column_operands);

/// Adds to `space` the looped kernel with each row shared by clusters of 1, 2, 4 and 8 programs
/// (Tuning::looped_cluster) on a `target` with clusters, each where every program of the cluster gets at
/// least one `block`-column piece of a row of `cols`, and with each row shared by a resident group of the
/// L2's count (Tuning::looped_groups = 1) where a row holds two pieces, with or without clusters.
void looped_cluster_configs(RowSpace& space, const Target& target, std::int64_t cols, std::int64_t block);

/// A configuration as text ("looped looped_programs_per_sm=2"), as records and reports write it.
std::string describe(const RowConfig& config);
/// The configuration describe() wrote; nothing for text it did not write.
std::optional<RowConfig> parse_config(const std::string& text);

/// The key of a row-kernel shape: the kernel, rows and columns rounded up to powers of two, dtype and
/// architecture ("softmax r4096 c1024 bf16 sm_90").
std::string row_tune_key(const char* kernel, std::int64_t rows, std::int64_t cols, ir::DType dtype, const Target& target);

/// What the tuner measured for one candidate.
struct TunedCandidate {
  std::string config;    ///< describe() of the candidate
  double us = 0;         ///< median time
  double error = 0;      ///< relative error of its output against the default's
  bool accepted = false; ///< ran, and its output matched the default's within the tolerance
  std::string why;       ///< when not accepted: the error or the exception
};

/// A tuning run, or a configuration found tuned before.
struct TuneReport {
  std::string key;
  RowConfig best;         ///< the fastest accepted candidate (the default when none beats it)
  double default_us = 0;  ///< the default configuration's time
  double best_us = 0;     ///< the best's time
  std::vector<TunedCandidate> candidates;  ///< in the order timed, the default first
};

/// A configuration tuned before for `key`: from memory, else from its record on disk (then kept in memory);
/// nothing when there is none or its record does not read back whole.
std::optional<RowConfig> tuned_config(const std::string& key);
/// Forgets the configurations held in memory; the disk keeps them (what a restart does).
void forget_tuned_in_memory();
/// Removes every tuned configuration, in memory and on disk; returns the records removed.
std::size_t clear_tuned();

/// `opt` with `config`'s tuning knobs and the tuner off: how a configuration runs.
RowOptions options_of(const RowOptions& opt, const RowConfig& config);

/// The configuration the automatic choice of `kernel` runs for rows x cols of `dtype` under opt.tune: one
/// tuned before for the shape's bucket, else (TuneMode::first_use) what tune_now() finds; nothing when
/// opt.tune is off or nothing was tuned.
std::optional<RowConfig> tuned_for(const char* kernel, std::int64_t rows, std::int64_t cols, ir::DType dtype, const RowOptions& opt,
                                   const std::function<TuneReport()>& tune_now);

/// A candidate for tune(): its configuration, and run(set), which launches it on operand set `set`.
struct TuneCandidate {
  RowConfig config;
  std::function<void(int set)> run;
};

/// What tune() is given besides the candidates.
struct TuneRun {
  std::string key;
  Backend backend = Backend::gpu;
  void* stream = nullptr;
  int sets = 2;              ///< operand sets run(set) rotates over (enough to overflow the L2)
  int warmup = 10, runs = 50;
  double tolerance = 1e-5;   ///< relative error against the default's output that a candidate may have
  std::function<void()> poison;                 ///< fills set 0's outputs with NaN
  std::function<std::vector<double>()> output;  ///< set 0's outputs, as float64
};

/// Tunes: runs each candidate once on set 0 (outputs poisoned first) and checks its output against the
/// first candidate's (the default, which must run), then times each accepted one; keeps the fastest under
/// run.key in memory and on disk, and reports every candidate.
TuneReport tune(const TuneRun& run, std::span<const TuneCandidate> candidates);

}  // namespace tilefuse::kernels
