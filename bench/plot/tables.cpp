// Results tables and peer lines read back, and their comparison as markdown (tables.hpp).
#include "bench/plot/tables.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace tilefuse::plot {

namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// `line` with every run of blanks made one space, and no blanks at either end.
std::string squeezed(const std::string& line) {
  std::string out;
  for (char c : line) {
    const bool blank = c == ' ' || c == '\t' || c == '\r';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The ways peer scripts spell a dtype.
std::vector<std::string> spellings(const std::string& dtype) {
  if (dtype == "f32") return {"f32", "float32"};
  if (dtype == "f16") return {"f16", "float16"};
  if (dtype == "bf16") return {"bf16", "bfloat16"};
  return {dtype};
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The peer `line` (squeezed, with a trailing space; its kernel ends at `first`) as a time of `r`'s shape and
// dtype: the peer's name between the kernel and the shape, the time right after the dtype, followed by "us".
std::optional<PeerRow> peer_of(const std::string& line, std::size_t first, const TableRow& r) {
  for (const std::string& d : spellings(r.dtype)) {
    const std::string key = " " + r.shape + " " + d + " ";
    const auto at = line.find(key, first);
    if (at == std::string::npos) continue;
    std::istringstream rest(line.substr(at + key.size()));
    std::string value, unit;
    rest >> value >> unit;
    char* end = nullptr;
    const double us = std::strtod(value.c_str(), &end);
    if (unit != "us" || end == value.c_str() || us <= 0) continue;
    std::string impl = at > first ? trim(line.substr(first + 1, at - first - 1)) : "";
    // A peer that reports the configuration it picked ("triton fused (best of 5: (128, 64, 8, 3))") is
    // one peer whatever it picked.
    if (const auto best_of = impl.find(" (best of"); best_of != std::string::npos) impl.erase(best_of);
    if (impl.empty()) continue;
    return PeerRow{r.kernel, impl, r.shape, r.dtype, us};
  }
  return std::nullopt;
}

}  // namespace

double number(const std::string& cell) { return cell.empty() ? 0.0 : std::strtod(cell.c_str(), nullptr); }

std::vector<TableRow> parse_table(const std::string& text) {
  std::vector<TableRow> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| kernel", 0) == 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(trim(cell));
    if (cells.size() < 8 || cells[0].rfind("---", 0) == 0) continue;
    rows.push_back(TableRow{cells[0], cells[1], cells[2], cells[3], cells[7], number(cells[4]), number(cells[5]), number(cells[6])});
  }
  return rows;
}

std::vector<TableRow> read_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("tilefuse_plot: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_table(text.str());
}

bool is_tilefuse(const TableRow& r) {
  return r.impl.rfind("tilefuse", 0) == 0 && r.impl.find("unfused") == std::string::npos && r.impl.find("naive") == std::string::npos &&
         r.us > 0;
}

std::vector<PeerRow> parse_peers(const std::string& text, const std::vector<TableRow>& ours) {
  std::vector<PeerRow> peers;
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    const std::string line = squeezed(raw) + " ";
    const auto first = line.find(' ');
    if (first == std::string::npos) continue;
    const std::string kernel = line.substr(0, first);
    for (const TableRow& r : ours) {
      if (r.kernel != kernel || !is_tilefuse(r)) continue;
      if (auto peer = peer_of(line, first, r)) {
        peers.push_back(*peer);
        break;
      }
    }
  }
  return peers;
}

std::string compare_markdown(const std::vector<TableRow>& ours, const std::vector<PeerRow>& peers) {
  std::vector<std::string> kernels;
  for (const TableRow& r : ours)
    if (is_tilefuse(r) && std::find(kernels.begin(), kernels.end(), r.kernel) == kernels.end()) kernels.push_back(r.kernel);
  std::string md;
  for (const std::string& kernel : kernels) {
    std::vector<std::string> names;  // every peer of this kernel, in the order the peer scripts ran them
    for (const PeerRow& p : peers)
      if (p.kernel == kernel && std::find(names.begin(), names.end(), p.impl) == names.end()) names.push_back(p.impl);
    md += "### " + kernel + "\n\n| shape | dtype | tilefuse | time (us) | x copy |";
    for (const std::string& n : names) md += " " + n + " (us) |";
    md += " best peer | speedup over it |\n|---|---|---|---:|---:|";
    for (std::size_t i = 0; i < names.size(); ++i) md += "---:|";
    md += "---|---:|\n";
    std::map<std::string, std::pair<double, double>> shapes;  // shape and dtype: fastest tilefuse row, best peer
    for (const TableRow& r : ours) {
      if (r.kernel != kernel || !is_tilefuse(r)) continue;
      // The variant's name, without the description after its colon.
      md += "| " + r.shape + " | " + r.dtype + " | " + r.impl.substr(0, r.impl.find(':')) + " | " + fixed(r.us, 2) + " | " + (r.x_copy > 0 ? fixed(r.x_copy, 2) : "") + " |";
      const PeerRow* best = nullptr;
      for (const std::string& n : names) {
        const PeerRow* hit = nullptr;
        for (const PeerRow& p : peers)
          if (p.kernel == kernel && p.impl == n && p.shape == r.shape && p.dtype == r.dtype) hit = &p;
        md.append(" ").append(hit ? fixed(hit->us, 2) : "-").append(" |");
        if (hit && (!best || hit->us < best->us)) best = hit;
      }
      if (best) {
        auto [it, fresh] = shapes.try_emplace(r.shape + " " + r.dtype, r.us, best->us);
        if (!fresh) it->second.first = std::min(it->second.first, r.us);
        md += " " + best->impl + " | " + fixed(best->us / r.us, 2) + "x |\n";
      } else {
        md += " - | - |\n";
      }
    }
    int ahead = 0;
    for (const auto& [shape, times] : shapes) ahead += times.first < times.second;
    md += "\nPer shape, tilefuse's fastest row against the best peer: ahead on " + std::to_string(ahead) + " of " +
          std::to_string(shapes.size()) + " shapes with peers.\n\n";
  }
  return md;
}

}  // namespace tilefuse::plot
