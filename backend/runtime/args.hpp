// What a launch passes to a program: grid, backend choice, stream, and one Arg per kernel parameter.
// Plain data: the DSL's Kernel fills these from typed C++ arguments, the runtime consumes them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/ir/ir.hpp"

namespace tilefuse {

/// Where a launch runs.
enum class Backend : std::uint8_t {
  automatic,    ///< the interpreter when TILEFUSE_INTERPRET=1, else the GPU
  gpu,          ///< NVRTC-compiled kernel through the CUDA driver
  interpreter,  ///< the CPU interpreter over host memory (device buffers are copied in and out)
};

/// Number of programs along each axis.
struct Grid {
  std::int64_t x = 1, y = 1, z = 1;
  /// x programs along axis 0 (and y, z along axes 1 and 2); implicit so `{rows}` is a grid.
  Grid(std::int64_t x_ = 1, std::int64_t y_ = 1, std::int64_t z_ = 1) : x(x_), y(y_), z(z_) {}  // NOLINT
};

/// How to launch: grid, backend and (for the GPU) the CUstream as an opaque handle (null: the default stream).
struct LaunchConfig {
  Grid grid;
  Backend backend = Backend::automatic;
  void* stream = nullptr;
  /// Kernels with KernelOptions::resident_groups: programs per group along axis 0 (grid.x a multiple).
  std::int64_t group = 1;
  /// Programmatic dependent launch (Triton's launch_pdl; sm_90 and later): the launch may start while the
  /// stream's previous kernel is finishing (as soon as every program of that kernel has called
  /// tl::gdc_launch_dependents, else as its programs end), and each of its programs waits at tl::gdc_wait
  /// for that kernel to end. The program must call tl::gdc_wait (a launch of one that does not is
  /// refused) before it touches memory the previous kernel writes, or writes memory it reads. Ignored by
  /// the interpreter and on GPUs before sm_90 (the launch then waits for the previous kernel, as usual).
  bool pdl = false;
  /// A launch configuration over `grid` with the defaults (implicit, so `{rows}` works).
  LaunchConfig(Grid g) : grid(g) {}  // NOLINT(google-explicit-constructor)
  LaunchConfig(Grid g, Backend b, void* s = nullptr) : grid(g), backend(b), stream(s) {}
};

/// One launch argument, as the runtime sees it.
struct Arg {
  /// What the argument holds.
  enum class Kind : std::uint8_t { device_memory, host_memory, i32, i64, f32 };
  Kind kind = Kind::i32;
  ir::DType dtype = ir::DType::i32;  ///< element dtype of memory arguments
  std::uint64_t device = 0;          ///< device address (device_memory)
  void* host = nullptr;              ///< host address (host_memory)
  std::size_t count = 0;             ///< elements reachable from the address (memory arguments)
  std::int32_t i32 = 0;              ///< value of an i32 scalar
  std::int64_t i64 = 0;              ///< value of an i64 scalar
  float f32 = 0;                     ///< value of an f32 scalar

  /// `count` elements of `dtype` at device address `address`.
  static Arg device_memory_of(ir::DType dtype, std::uint64_t address, std::size_t count) {
    Arg a = memory(Kind::device_memory, dtype, count);
    a.device = address;
    return a;
  }
  /// `count` elements of `dtype` at host address `data` (for the interpreter).
  static Arg host_memory_of(ir::DType dtype, void* data, std::size_t count) {
    Arg a = memory(Kind::host_memory, dtype, count);
    a.host = data;
    return a;
  }
  /// An i32 scalar.
  static Arg of_i32(std::int32_t v) {
    Arg a;
    a.kind = Kind::i32;
    a.i32 = v;
    return a;
  }
  /// An i64 scalar.
  static Arg of_i64(std::int64_t v) {
    Arg a;
    a.kind = Kind::i64;
    a.dtype = ir::DType::i64;
    a.i64 = v;
    return a;
  }
  /// An f32 scalar.
  static Arg of_f32(float v) {
    Arg a;
    a.kind = Kind::f32;
    a.dtype = ir::DType::f32;
    a.f32 = v;
    return a;
  }

 private:
  static Arg memory(Kind kind, ir::DType dtype, std::size_t count) {
    Arg a;
    a.kind = kind;
    a.dtype = dtype;
    a.count = count;
    return a;
  }
};

}  // namespace tilefuse
