// What the matrix launchers (attention, matmul) share: the Kernel of a tile program for a warp count and
// stage count, made and traced on first use, and whether a launch's dots run on warpgroup MMA (which
// block shapes suit depends on it). Internal to the kernels library: the public headers do not include it.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/runtime/target.hpp"
#include "dsl/kernel.hpp"

namespace tilefuse::kernels {

/// The kernel of program Fn with `warps` warps and `stages` stages of copies ahead (KernelOptions::num_stages),
/// named `name` with parameters `params`, traced on first use.
template <auto Fn>
Program& matrix_program(const char* name, int warps, std::initializer_list<std::string> params, int stages = 2) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::unique_ptr<Kernel<Fn>>> kernels;
  const std::lock_guard lock(mutex);
  auto& k = kernels[{warps, stages}];
  if (!k) {
    KernelOptions o{warps, std::vector<std::string>(params)};
    o.num_stages = stages;
    k = std::make_unique<Kernel<Fn>>(name, o);
  }
  return k->program();
}

/// Whether launches on `backend` run dots whose result spreads over whole warpgroups on warpgroup MMA
/// (an sm_90 GPU; KernelOptions::warpgroup_mma is on in the matrix kernels).
inline bool warpgroup_mma(Backend backend) {
  const Target t = target(backend);
  return t.gpu && has_warpgroup_mma(t.arch);
}

}  // namespace tilefuse::kernels
