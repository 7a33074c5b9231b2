// Debug bounds checks (Options::bounds_checks, TILEFUSE_DEBUG_BOUNDS=1): the emitters pass each global
// access's address through checked(), which wraps it in the prelude's tf_bounds (prelude/bounds.cuh) with
// the argument it derives from, the run's width and a site number, and records the site for the runtime's
// message. With checks off, checked() returns the address unchanged and nothing else is emitted.
#pragma once

#include <string>
#include <vector>

#include "backend/codegen/cuda.hpp"

namespace tilefuse::codegen {

class BoundsChecks {
 public:
  BoundsChecks(const ir::Function& fn, const passes::Analysis& a, bool on) : fn_(fn), a_(a), on_(on) {}
  /// Whether accesses are checked.
  bool on() const { return on_; }
  /// `addr`, an element pointer expression of pointer value `ptr` touching `width` elements, checked for
  /// the access `in` when `active` (a C condition: lanes the mask turns off touch nothing).
  std::string checked(const std::string& addr, const ir::Instr& in, ir::ValueId ptr, int width, const std::string& active = "true");
  /// The checked accesses, by site number.
  const std::vector<AccessSite>& sites() const { return sites_; }
  /// What the kernel's source needs before its signature: the TfCounts struct (empty with checks off).
  std::string declarations() const;

 private:
  const ir::Function& fn_;
  const passes::Analysis& a_;
  bool on_;
  std::vector<AccessSite> sites_;
};

/// The trailing parameters of a bounds-checked kernel's signature (", TfCounts tf_counts, TfFault* tf_fault").
std::string bounds_parameters(bool on);

}  // namespace tilefuse::codegen
