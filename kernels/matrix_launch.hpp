// What the matrix launchers (attention, matmul) share: the Kernel of a tile program for a warp count,
// made and traced on first use. Internal to the kernels library: the public headers do not include it.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dsl/kernel.hpp"

namespace tilefuse::kernels {

/// The kernel of program Fn with `warps` warps, named `name` with parameters `params`, traced on first use.
template <auto Fn>
Program& matrix_program(const char* name, int warps, std::initializer_list<std::string> params) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Kernel<Fn>>> kernels;
  const std::lock_guard lock(mutex);
  auto& k = kernels[warps];
  if (!k) k = std::make_unique<Kernel<Fn>>(name, KernelOptions{warps, std::vector<std::string>(params)});
  return k->program();
}

}  // namespace tilefuse::kernels
