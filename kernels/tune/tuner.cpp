// The tuner's store, its text form of configurations, and the timing and checking of candidates (see
// tuner.hpp).
#include "kernels/tune/tuner.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "backend/cache/cache.hpp"
#include "backend/knobs/knobs.hpp"
#include "backend/runtime/timing.hpp"
#include "kernels/rows/rules.hpp"

namespace tilefuse::kernels {

namespace {

std::mutex& store_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, RowConfig>& in_memory() {
  static std::map<std::string, RowConfig> m;
  return m;
}

// Records live in knobs::tune_dir() (tuned/ in the kernel cache's directory), one per key, named by the
// key's hash.
std::optional<std::filesystem::path> record_dir() { return knobs::tune_dir(); }
std::optional<std::filesystem::path> record_path(const std::string& key) {
  auto dir = record_dir();
  if (!dir) return std::nullopt;
  return *dir / (cache::make_key(key, {}, "tuned") + ".rec");
}

std::int64_t bucket(std::int64_t n) {
  std::int64_t b = 1;
  while (b < n) b *= 2;
  return b;
}

// The knobs of Tuning by name, for describe() and parse_config().
struct Knob {
  const char* name;
  std::function<std::optional<std::int64_t>(const Tuning&)> get;
  std::function<void(Tuning&, std::int64_t)> set;
};
const std::vector<Knob>& knobs() {
  static const std::vector<Knob> k = {
      {"row_elements", [](const Tuning& t) { return t.row_elements ? std::optional<std::int64_t>(*t.row_elements) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.row_elements = static_cast<int>(v); }},
      {"resident_threads", [](const Tuning& t) { return t.resident_threads ? std::optional<std::int64_t>(*t.resident_threads) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.resident_threads = static_cast<int>(v); }},
      {"staged_warps", [](const Tuning& t) { return t.staged_warps ? std::optional<std::int64_t>(*t.staged_warps) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.staged_warps = static_cast<int>(v); }},
      {"stage_bytes", [](const Tuning& t) { return t.stage_bytes; }, [](Tuning& t, std::int64_t v) { t.stage_bytes = v; }},
      {"shared_carveout", [](const Tuning& t) { return t.shared_carveout ? std::optional<std::int64_t>(*t.shared_carveout) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.shared_carveout = static_cast<int>(v); }},
      {"looped_programs_per_sm",
       [](const Tuning& t) { return t.looped_programs_per_sm ? std::optional<std::int64_t>(*t.looped_programs_per_sm) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.looped_programs_per_sm = static_cast<int>(v); }},
      {"looped_cluster", [](const Tuning& t) { return t.looped_cluster ? std::optional<std::int64_t>(*t.looped_cluster) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.looped_cluster = static_cast<int>(v); }},
      {"staged_cluster", [](const Tuning& t) { return t.staged_cluster ? std::optional<std::int64_t>(*t.staged_cluster) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.staged_cluster = static_cast<int>(v); }},
      {"looped_groups", [](const Tuning& t) { return t.looped_groups ? std::optional<std::int64_t>(*t.looped_groups) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.looped_groups = static_cast<int>(v); }},
      {"split_programs_per_sm",
       [](const Tuning& t) { return t.split_programs_per_sm ? std::optional<std::int64_t>(*t.split_programs_per_sm) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.split_programs_per_sm = static_cast<int>(v); }},
      {"split_group_bytes", [](const Tuning& t) { return t.split_group_bytes; }, [](Tuning& t, std::int64_t v) { t.split_group_bytes = v; }},
      {"split_combine_rows",
       [](const Tuning& t) { return t.split_combine_rows ? std::optional<std::int64_t>(*t.split_combine_rows) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.split_combine_rows = static_cast<int>(v); }},
      {"peel", [](const Tuning& t) { return t.peel ? std::optional<std::int64_t>(*t.peel) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.peel = v != 0; }},
      {"pack_rows", [](const Tuning& t) { return t.pack_rows ? std::optional<std::int64_t>(*t.pack_rows) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.pack_rows = v != 0; }},
      {"stage_rows", [](const Tuning& t) { return t.stage_rows ? std::optional<std::int64_t>(*t.stage_rows) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.stage_rows = v != 0; }},
      {"stage_stores", [](const Tuning& t) { return t.stage_stores ? std::optional<std::int64_t>(*t.stage_stores) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.stage_stores = v != 0; }},
      {"constant_cols", [](const Tuning& t) { return t.constant_cols ? std::optional<std::int64_t>(*t.constant_cols) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.constant_cols = v != 0; }},
      {"stride_rows", [](const Tuning& t) { return t.stride_rows ? std::optional<std::int64_t>(*t.stride_rows) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.stride_rows = v != 0; }},
      {"rows_ahead", [](const Tuning& t) { return t.rows_ahead ? std::optional<std::int64_t>(*t.rows_ahead) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.rows_ahead = v != 0; }},
      {"stride_stages", [](const Tuning& t) { return t.stride_stages ? std::optional<std::int64_t>(*t.stride_stages) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.stride_stages = v != 0; }},
      {"shift_affine", [](const Tuning& t) { return t.shift_affine ? std::optional<std::int64_t>(*t.shift_affine) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.shift_affine = v != 0; }},
      {"keep_rows_in_l2", [](const Tuning& t) { return t.keep_rows_in_l2 ? std::optional<std::int64_t>(*t.keep_rows_in_l2) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.keep_rows_in_l2 = v != 0; }},
      {"overlap_launches", [](const Tuning& t) { return t.overlap_launches ? std::optional<std::int64_t>(*t.overlap_launches) : std::nullopt; },
       [](Tuning& t, std::int64_t v) { t.overlap_launches = v != 0; }},
  };
  return k;
}

void keep(const std::string& key, const RowConfig& config) {
  {
    const std::lock_guard<std::mutex> lock(store_mutex());
    in_memory()[key] = config;
  }
  if (auto path = record_path(key)) cache::write_record(*path, key + "\n" + describe(config) + "\n");
}

}  // namespace

void looped_cluster_configs(RowSpace& space, const Target& target, std::int64_t cols, std::int64_t block) {
  if (target.clusters)
    for (int k : {1, 2, 4, 8})
      if (cols >= k * block) space.add(RowVariant::looped, [&](Tuning& t) { t.looped_cluster = k; });
  // Resident groups of the L2's count (a cooperative launch: no clusters needed): ahead of split on some
  // few-rows shapes, behind on most (bench/NOTES.md, "Looped rows over resident groups"), so the tuner,
  // not the rule, takes them.
  if (cols >= 2 * block) space.add(RowVariant::looped, [&](Tuning& t) { t.looped_groups = 1; });
}

std::vector<int> one_program_elements(std::int64_t cols) {
  if (cols > kWideRowElements) return {16, 32, 64};
  return {8, 16, 32};
}

void narrow_row_configs(RowSpace& space, std::int64_t cols, int element_bytes, const Tuning& base, bool column_operands) {
  if (!packable_rows(cols, element_bytes)) return;
  space.add(RowVariant::one_program, [&](Tuning& t) {
    t.pack_rows = true;
    t.constant_cols = false;
  });
  if (whole_vectors(cols, element_bytes)) return;
  const bool staged = staged_rows(base, cols, element_bytes, column_operands);
  space.add(RowVariant::one_program, [&](Tuning& t) {
    t.pack_rows = true;
    t.stage_rows = !staged;
  });
  if (!staged)
    space.add(RowVariant::one_program, [&](Tuning& t) {
      t.pack_rows = true;
      t.stage_stores = true;
    });
}

std::string describe(const RowConfig& config) {
  std::string s = variant_name(config.variant);
  for (const Knob& k : knobs())
    if (auto v = k.get(config.tuning)) s += std::string(" ") + k.name + "=" + std::to_string(*v);
  return s;
}

std::optional<RowConfig> parse_config(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  RowConfig c;
  bool found = false;
  for (auto v : {RowVariant::automatic, RowVariant::one_program, RowVariant::looped, RowVariant::split, RowVariant::cluster,
                 RowVariant::staged, RowVariant::resident})
    if (word == variant_name(v)) {
      c.variant = v;
      found = true;
    }
  if (!found) return std::nullopt;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string name = word.substr(0, eq);
    std::int64_t value = 0;
    try {
      value = std::stoll(word.substr(eq + 1));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    bool known = false;
    for (const Knob& k : knobs())
      if (name == k.name) {
        k.set(c.tuning, value);
        known = true;
      }
    if (!known) return std::nullopt;
  }
  try {
    validate(c.tuning);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return c;
}

std::string row_tune_key(const char* kernel, std::int64_t rows, std::int64_t cols, ir::DType dtype, const Target& target) {
  return std::string(kernel) + " r" + std::to_string(bucket(rows)) + " c" + std::to_string(bucket(cols)) + " " + ir::dtype_name(dtype) +
         " " + target.arch;
}

std::optional<RowConfig> tuned_config(const std::string& key) {
  {
    const std::lock_guard<std::mutex> lock(store_mutex());
    if (auto it = in_memory().find(key); it != in_memory().end()) return it->second;
  }
  const auto path = record_path(key);
  if (!path) return std::nullopt;
  const auto payload = cache::read_record(*path);
  if (!payload) return std::nullopt;
  // The record names its key (two keys could share a hash) and the configuration.
  const auto newline = payload->find('\n');
  if (newline == std::string::npos || payload->substr(0, newline) != key) return std::nullopt;
  auto config = parse_config(payload->substr(newline + 1));
  if (!config) return std::nullopt;
  const std::lock_guard<std::mutex> lock(store_mutex());
  in_memory()[key] = *config;
  return config;
}

void forget_tuned_in_memory() {
  const std::lock_guard<std::mutex> lock(store_mutex());
  in_memory().clear();
}

std::size_t clear_tuned() {
  forget_tuned_in_memory();
  const auto dir = record_dir();
  if (!dir) return 0;
  std::error_code ec;
  std::size_t removed = 0;
  for (const auto& f : std::filesystem::directory_iterator(*dir, ec))
    if (f.path().extension() == ".rec" || f.path().filename().string().find(".rec.tmp.") != std::string::npos)
      removed += std::filesystem::remove(f.path(), ec) ? 1 : 0;
  return removed;
}

RowOptions options_of(const RowOptions& opt, const RowConfig& config) {
  RowOptions o = opt;
  o.tuning = config.tuning;
  o.tune = TuneMode::off;
  return o;
}

std::optional<RowConfig> tuned_for(const char* kernel, std::int64_t rows, std::int64_t cols, ir::DType dtype, const RowOptions& opt,
                                   const std::function<TuneReport()>& tune_now) {
  if (opt.tune == TuneMode::off) return std::nullopt;
  if (auto c = tuned_config(row_tune_key(kernel, rows, cols, dtype, tilefuse::target(opt.backend)))) return c;
  if (opt.tune == TuneMode::first_use) return tune_now().best;
  return std::nullopt;
}

TuneReport tune(const TuneRun& run, std::span<const TuneCandidate> candidates) {
  if (candidates.empty()) throw std::invalid_argument("tilefuse tuner: " + run.key + ": no candidates");
  TuneReport report;
  report.key = run.key;
  std::vector<double> reference;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const TuneCandidate& c = candidates[i];
    TunedCandidate r;
    r.config = describe(c.config);
    try {
      run.poison();
      c.run(0);
      const std::vector<double> out = run.output();
      if (i == 0) {
        reference = out;
      } else {
        // Relative error in the norm of the difference, NaN where either is NaN and they differ.
        double num = 0, den = 0;
        bool mismatch = out.size() != reference.size();
        for (std::size_t k = 0; !mismatch && k < out.size(); ++k) {
          if (std::isnan(out[k]) || std::isnan(reference[k])) {
            mismatch = std::isnan(out[k]) != std::isnan(reference[k]);
            continue;
          }
          if (std::isinf(out[k]) || std::isinf(reference[k])) {
            mismatch = out[k] != reference[k];
            continue;
          }
          num += (out[k] - reference[k]) * (out[k] - reference[k]);
          den += reference[k] * reference[k];
        }
        r.error = mismatch ? std::numeric_limits<double>::infinity() : std::sqrt(num / std::max(den, 1e-300));
        if (!(r.error <= run.tolerance)) {
          r.why = "output differs from the default's: relative error " + std::to_string(r.error);
          report.candidates.push_back(r);
          continue;
        }
      }
      r.us = median_launch_us(run.backend, run.stream, [&](int k) { c.run(k % run.sets); }, run.warmup, run.runs);
      r.accepted = true;
    } catch (const std::exception& e) {
      if (i == 0) throw;  // the default must run
      r.why = e.what();
      report.candidates.push_back(r);
      continue;
    }
    if (i == 0) report.default_us = r.us;
    if (r.us < best) {
      best = r.us;
      report.best = c.config;
      report.best_us = r.us;
    }
    report.candidates.push_back(r);
  }
  keep(run.key, report.best);
  return report;
}

}  // namespace tilefuse::kernels
