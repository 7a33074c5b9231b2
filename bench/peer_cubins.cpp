// The peers' CUBINs in this harness: the manifest's parser and the launches (see peer_cubins.hpp).
#include "bench/peer_cubins.hpp"

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace tilefuse::bench {

namespace {

std::vector<PeerCubin>& manifest() {
  static std::vector<PeerCubin> m;
  return m;
}

}  // namespace

void load_peer_cubins(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--peer-cubins: cannot read the manifest " + path);
  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    PeerCubin p;
    std::string extra;
    const bool ok = static_cast<bool>(fields >> p.kernel >> p.rows >> p.cols >> p.dtype >> p.warps >> p.shared_bytes >> p.extra_params >>
                                      p.symbol >> p.path) &&
                    !(fields >> extra) && (p.kernel == "softmax" || p.kernel == "layernorm") &&
                    (p.dtype == "f32" || p.dtype == "f16" || p.dtype == "bf16") && p.rows > 0 && p.cols > 0 && p.warps >= 1 &&
                    p.warps <= 32 && p.shared_bytes >= 0 && p.extra_params >= 0 && p.extra_params <= 4;
    if (!ok)
      throw std::invalid_argument("--peer-cubins: " + path + " line " + std::to_string(number) +
                                  ": expected 'kernel rows cols dtype warps shared_bytes extra_params symbol cubin' (kernel softmax or "
                                  "layernorm, dtype f32, f16 or bf16, 1 to 32 warps, 0 to 4 extra parameters), got '" + line + "'");
    if (p.path[0] != '/') p.path = dir + "/" + p.path;
    manifest().push_back(p);
  }
}

const PeerCubin* find_peer_cubin(const std::string& kernel, std::int64_t rows, std::int64_t cols, const std::string& dtype) {
  for (const PeerCubin& p : manifest())
    if (p.kernel == kernel && p.rows == rows && p.cols == cols && p.dtype == dtype) return &p;
  return nullptr;
}

PeerKernel::PeerKernel(const PeerCubin& peer) : peer_(peer) {
  std::ifstream in(peer.path, std::ios::binary);
  if (!in) throw std::invalid_argument("--peer-cubins: cannot read the CUBIN " + peer.path);
  const std::vector<char> cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  module_ = std::make_unique<driver::Module>(cubin, peer.symbol);
  function_ = module_->function(peer.symbol);
  // Above 48 KB a kernel's dynamic shared memory has to be asked for (the rows' kernels take bytes).
  if (peer.shared_bytes > 48 * 1024) driver::reserve_dynamic_shared(function_, peer.shared_bytes, -1, peer.symbol.c_str());
}

void PeerKernel::launch(void** own, int count, void* stream) const {
  static std::uint64_t null_pointer = 0;
  void* params[16];
  for (int i = 0; i < count; ++i) params[i] = own[i];
  for (int i = 0; i < peer_.extra_params; ++i) params[count + i] = &null_pointer;
  driver::launch(function_, {static_cast<unsigned>(peer_.rows), 1, 1}, {static_cast<unsigned>(32 * peer_.warps), 1, 1},
                 static_cast<unsigned>(peer_.shared_bytes), stream, params, peer_.symbol.c_str());
}

void PeerKernel::softmax(std::uint64_t x, std::uint64_t y, void* stream) const {
  std::int32_t cols = static_cast<std::int32_t>(peer_.cols);
  void* own[] = {&x, &y, &cols};
  launch(own, 3, stream);
}

void PeerKernel::layernorm(std::uint64_t x, std::uint64_t w, std::uint64_t b, std::uint64_t y, void* stream) const {
  std::int32_t cols = static_cast<std::int32_t>(peer_.cols);
  float eps = 1e-5f;
  void* own[] = {&x, &w, &b, &y, &cols, &eps};
  launch(own, 6, stream);
}

}  // namespace tilefuse::bench
