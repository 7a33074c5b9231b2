// The tuner's private operands (see operands.hpp).
#include "kernels/tune/operands.hpp"

#include <algorithm>
#include <cstring>
#include <deque>

#include "backend/numerics/float16.hpp"
#include "backend/runtime/buffer.hpp"
#include "backend/runtime/timing.hpp"

namespace tilefuse::kernels {

struct TuneMatrices::Storage {
  std::vector<DeviceBytes> device;
  std::vector<std::vector<std::byte>> host;
  std::deque<DeviceBytes> extra_device;               // (a deque: scratch() hands out addresses into it)
  std::deque<std::vector<std::byte>> extra_host;
};

TuneMatrices::TuneMatrices(const Arg& input, int sets, void* stream) : storage_(std::make_unique<Storage>()), stream_(stream) {
  const std::size_t bytes = input.count * static_cast<std::size_t>(ir::dtype_bytes(input.dtype));
  for (int s = 0; s < sets; ++s) {
    // (Addresses are taken as each buffer is made: a later emplace_back may move the buffers' handles.)
    if (input.kind == Arg::Kind::device_memory) {
      const std::uint64_t x = storage_->device.emplace_back(bytes).address();
      copy_device_bytes(x, input.device, bytes, stream);
      in_.push_back(Arg::device_memory_of(input.dtype, x, input.count));
      out_.push_back(Arg::device_memory_of(input.dtype, storage_->device.emplace_back(bytes).address(), input.count));
    } else {
      std::byte* x = storage_->host.emplace_back(bytes).data();
      std::memcpy(x, input.host, bytes);
      in_.push_back(Arg::host_memory_of(input.dtype, x, input.count));
      out_.push_back(Arg::host_memory_of(input.dtype, storage_->host.emplace_back(bytes).data(), input.count));
    }
  }
}

TuneMatrices::~TuneMatrices() = default;

Arg TuneMatrices::scratch(ir::DType dtype, std::size_t count) {
  const std::size_t bytes = std::max<std::size_t>(1, count) * static_cast<std::size_t>(ir::dtype_bytes(dtype));
  if (in_[0].kind == Arg::Kind::device_memory) {
    storage_->extra_device.emplace_back(bytes);
    return Arg::device_memory_of(dtype, storage_->extra_device.back().address(), count);
  }
  storage_->extra_host.emplace_back(bytes);
  return Arg::host_memory_of(dtype, storage_->extra_host.back().data(), count);
}

void TuneMatrices::poison() {
  const Arg& o = out_[0];
  const std::size_t bytes = o.count * static_cast<std::size_t>(ir::dtype_bytes(o.dtype));
  if (o.kind == Arg::Kind::device_memory) storage_->device[1].fill(0xff, bytes, stream_);
  else std::memset(o.host, 0xff, bytes);
}

std::vector<double> TuneMatrices::output() const {
  const Arg& o = out_[0];
  const std::size_t bytes = o.count * static_cast<std::size_t>(ir::dtype_bytes(o.dtype));
  std::vector<std::byte> raw(bytes);
  if (o.kind == Arg::Kind::device_memory) copy_to_host_bytes(raw.data(), o.device, bytes);
  else std::memcpy(raw.data(), o.host, bytes);
  std::vector<double> out(o.count);
  for (std::size_t i = 0; i < o.count; ++i) {
    if (o.dtype == ir::DType::f32) {
      float f;
      std::memcpy(&f, raw.data() + 4 * i, 4);
      out[i] = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      out[i] = o.dtype == ir::DType::f16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  return out;
}

TuneRun matrix_tune_run(const char* kernel, std::int64_t rows, std::int64_t cols, const RowOptions& opt, TuneMatrices& m, double tolerance) {
  const Target target = tilefuse::target(opt.backend);
  TuneRun run;
  run.key = row_tune_key(kernel, rows, cols, m.in(0).dtype, target);
  run.backend = target.gpu ? Backend::gpu : Backend::interpreter;
  run.stream = opt.stream;
  run.sets = m.sets();
  if (!target.gpu) run.warmup = 1, run.runs = 3;
  run.tolerance = tolerance;
  run.poison = [&m] { m.poison(); };
  run.output = [&m] { return m.output(); };
  return run;
}

int tune_sets(const Target& target, std::int64_t bytes) {
  if (!target.gpu || target.l2_bytes <= 0) return 2;
  return static_cast<int>(std::clamp<std::int64_t>((3 * target.l2_bytes + 2 * bytes - 1) / std::max<std::int64_t>(2 * bytes, 1), 2, 8));
}

}  // namespace tilefuse::kernels
