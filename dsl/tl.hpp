// The whole tilefuse DSL: `namespace tl = tilefuse::tl;` then write tile programs with tl::load, tl::max,
// ... and wrap them in tilefuse::Kernel.
#pragma once

#include "backend/runtime/buffer.hpp"
#include "backend/numerics/float16.hpp"
#include "dsl/dtype.hpp"
#include "dsl/kernel.hpp"
#include "dsl/loop.hpp"
#include "dsl/memory.hpp"
#include "dsl/matrix.hpp"
#include "dsl/ops.hpp"
#include "dsl/stage.hpp"
#include "dsl/tile.hpp"
