// How a call of a matrix kernel (attention, matmul) runs: the backend and the stream. Shared by the
// matrix families, which include no other family.
#pragma once

#include "backend/runtime/args.hpp"

namespace tilefuse::kernels {

/// How an attention or matmul call runs (block shapes are the launcher's, per shape and dtype).
struct MatrixOptions {
  Backend backend = Backend::automatic;  ///< GPU, interpreter, or by TILEFUSE_INTERPRET
  void* stream = nullptr;                ///< CUstream for GPU launches (null: the default stream)
};

}  // namespace tilefuse::kernels
