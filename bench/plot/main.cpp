// tilefuse_plot: the bench's plots as PNG, and its comparison with the peers as markdown, from the results
// tables tilefuse_bench writes (--table).
//
//   tilefuse_plot sweep TABLE.md OUT.png
//       the shape sweep's x-copy ratio against row width, per dtype, for softmax and LayerNorm (rows whose
//       note starts with "sweep"), with the 0.85 and 1.0 lines
//   tilefuse_plot compare TABLE.md PEERS.txt...
//       markdown on standard output: per kernel, each tilefuse row of the table beside every peer the peer
//       scripts' outputs time on its shape and dtype, the best peer and the speedup over it (tables.hpp)
//   tilefuse_plot roofline TABLE.md OUT.png --peak-tflops T [--copy-gbps G]
//       arithmetic intensity (FLOP per byte moved) against the achieved rate, with the copy bandwidth G
//       (GB/s; default: the fastest copy row of the table, measured in the same run) and the tensor-core
//       peak T (TFLOP/s, the device's dense f16/bf16 figure) drawn as ceilings. Row kernels count
//       softmax 5, LayerNorm 8 and RMSNorm 5 FLOP per element over the bytes of their GB/s column;
//       attention and matmul take their TFLOP/s and the bytes of their inputs and output.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/plot/chart.hpp"
#include "bench/plot/tables.hpp"

using namespace tilefuse::plot;

namespace {

int element_bytes(const std::string& dtype) { return dtype == "f32" ? 4 : 2; }

const std::map<std::string, Color>& dtype_colors() {
  static const std::map<std::string, Color> c = {{"f32", {31, 119, 180}}, {"f16", {255, 127, 14}}, {"bf16", {44, 160, 44}}};
  return c;
}

int sweep(const std::string& table, const std::string& out) {
  const auto rows = read_table(table);
  Canvas canvas(1400, 560);
  int panel = 0;
  for (const char* kernel : {"softmax", "layernorm"}) {
    Chart chart;
    chart.title = std::string(kernel) + ": x copy over the shape sweep";
    chart.x = Axis{16, 2097152, 2, "row width (elements)"};
    chart.y = Axis{0, 1.2, 0, "x copy (copy time / kernel time)"};
    std::map<std::string, Series> by_dtype;
    for (const TableRow& r : rows) {
      if (r.kernel != kernel || r.note.rfind("sweep", 0) != 0 || r.x_copy <= 0) continue;
      const auto x = r.shape.find('x');
      if (x == std::string::npos) continue;
      Series& s = by_dtype[r.dtype];
      s.name = r.dtype;
      s.color = dtype_colors().count(r.dtype) ? dtype_colors().at(r.dtype) : Color{100, 100, 100};
      s.points.emplace_back(number(r.shape.substr(x + 1)), std::min(r.x_copy, 1.19));
    }
    for (auto& [d, s] : by_dtype) chart.series.push_back(s);
    chart.references = {Reference{"0.85 x copy", {200, 40, 40}, 0.85, 0, 0, 0}, Reference{"copy", {120, 120, 120}, 1.0, 0, 0, 0}};
    chart.draw(canvas, panel * 700, 0, 700, 560);
    ++panel;
  }
  canvas.save(out);
  return 0;
}

int roofline(const std::string& table, const std::string& out, double copy_gbps, double peak_tflops) {
  const auto rows = read_table(table);
  if (copy_gbps <= 0)
    for (const TableRow& r : rows)
      if (r.kernel == "copy") copy_gbps = std::max(copy_gbps, r.gbps);
  if (copy_gbps <= 0) throw std::runtime_error("tilefuse_plot: " + table + " has no copy row; pass --copy-gbps");
  Chart chart;
  chart.title = "roofline";
  chart.x = Axis{0.1, 10000, 10, "FLOP per byte moved"};
  chart.y = Axis{1e11, 2e15, 10, "FLOP/s achieved"};
  std::map<std::string, Series> by_kernel;
  const std::map<std::string, double> per_element = {{"softmax", 5}, {"layernorm", 8}, {"rmsnorm", 5}};
  const std::map<std::string, Color> colors = {{"softmax", {31, 119, 180}}, {"layernorm", {44, 160, 44}}, {"rmsnorm", {148, 103, 189}},
                                               {"attention", {214, 39, 40}}, {"matmul", {255, 127, 14}}};
  for (const TableRow& r : rows) {
    // tilefuse's own kernels, not the unfused or naive baselines the tables also time.
    if (!is_tilefuse(r)) continue;
    double flops = 0, bytes = 0;
    const double seconds = r.us * 1e-6;
    if (per_element.count(r.kernel) && r.gbps > 0) {
      long long R = 0, C = 0;
      if (std::sscanf(r.shape.c_str(), "%lldx%lld", &R, &C) != 2) continue;
      flops = per_element.at(r.kernel) * static_cast<double>(R) * static_cast<double>(C);
      bytes = r.gbps * 1e9 * seconds;
    } else if (r.kernel == "matmul" || r.kernel == "attention") {
      const double tflops = number(r.note);
      if (tflops <= 0) continue;
      flops = tflops * 1e12 * seconds;
      long long a = 0, b = 0, c = 0, d = 0;
      if (r.kernel == "matmul" && std::sscanf(r.shape.c_str(), "%lldx%lldx%lld", &a, &b, &c) == 3)
        bytes = (static_cast<double>(a) * c + static_cast<double>(c) * b + static_cast<double>(a) * b) * element_bytes(r.dtype);
      else if (r.kernel == "attention" && std::sscanf(r.shape.c_str(), "B%lld H%lld N%lld D%lld", &a, &b, &c, &d) == 4)
        bytes = 4.0 * static_cast<double>(a) * b * c * d * element_bytes(r.dtype);
      else continue;
    } else {
      continue;
    }
    Series& s = by_kernel[r.kernel];
    s.name = r.kernel;
    s.color = colors.count(r.kernel) ? colors.at(r.kernel) : Color{100, 100, 100};
    s.points.emplace_back(flops / bytes, flops / seconds);
  }
  for (auto& [k, s] : by_kernel) chart.series.push_back(s);
  char roof[64], peak[64];
  std::snprintf(roof, sizeof roof, "copy bandwidth %.0f GB/s", copy_gbps);
  std::snprintf(peak, sizeof peak, "tensor-core peak %.0f TFLOP/s", peak_tflops);
  const double ridge = peak_tflops * 1e12 / (copy_gbps * 1e9);  // where the bandwidth roof meets the peak
  chart.references = {Reference{roof, {120, 120, 120}, copy_gbps * 1e9, 1, 0, ridge},
                      Reference{peak, {200, 40, 40}, peak_tflops * 1e12, 0, ridge, 0}};
  Canvas canvas(900, 600);
  chart.draw(canvas, 0, 0, 900, 600);
  canvas.save(out);
  return 0;
}

int compare(const std::string& table, const std::vector<std::string>& peer_files) {
  const auto ours = read_table(table);
  std::vector<PeerRow> peers;
  for (const std::string& path : peer_files) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("tilefuse_plot: cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    const auto some = parse_peers(text.str(), ours);
    peers.insert(peers.end(), some.begin(), some.end());
  }
  std::fputs(compare_markdown(ours, peers).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() == 3 && a[0] == "sweep") return sweep(a[1], a[2]);
    if (a.size() >= 5 && a[0] == "roofline") {
      double copy = 0, peak = 0;
      for (std::size_t i = 3; i + 1 < a.size(); i += 2) {
        if (a[i] == "--copy-gbps") copy = std::stod(a[i + 1]);
        else if (a[i] == "--peak-tflops") peak = std::stod(a[i + 1]);
        else throw std::invalid_argument("tilefuse_plot: unknown flag " + a[i]);
      }
      if (peak <= 0) throw std::invalid_argument("tilefuse_plot roofline: --peak-tflops T is needed (the device's tensor-core peak)");
      return roofline(a[1], a[2], copy, peak);
    }
    if (a.size() >= 3 && a[0] == "compare") return compare(a[1], std::vector<std::string>(a.begin() + 2, a.end()));
    std::fprintf(stderr, "usage: tilefuse_plot sweep TABLE.md OUT.png\n"
                         "       tilefuse_plot roofline TABLE.md OUT.png --peak-tflops T [--copy-gbps G]\n"
                         "       tilefuse_plot compare TABLE.md PEERS.txt...\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
