// Drawing a chart (chart.hpp): the plot area inside margins for tick labels and axis labels, grid lines at
// the ticks (each power of the log base, or ten steps of a linear axis), references clipped to the area,
// points as discs, and a legend in the top left.
#include "bench/plot/chart.hpp"

#include <bit>
#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tilefuse::plot {

namespace {

const Color kInk{40, 40, 40}, kGrid{225, 225, 225};

double to_unit(const Axis& a, double v) {
  if (a.log_base) return (std::log(v) - std::log(a.lo)) / (std::log(a.hi) - std::log(a.lo));
  return (v - a.lo) / (a.hi - a.lo);
}

std::vector<double> ticks(const Axis& a) {
  std::vector<double> t;
  if (a.log_base) {
    const double b = a.log_base;
    for (double v = std::pow(b, std::floor(std::log(a.lo) / std::log(b))); v <= a.hi * 1.0001; v *= b)
      if (v >= a.lo * 0.9999) t.push_back(v);
    // Many decades: every other one.
    if (t.size() > 12) {
      std::vector<double> fewer;
      for (std::size_t k = 0; k < t.size(); k += 2) fewer.push_back(t[k]);
      t = fewer;
    }
  } else {
    for (int k = 0; k <= 10; ++k) t.push_back(a.lo + (a.hi - a.lo) * k / 10.0);
  }
  return t;
}

}  // namespace

std::string tick_label(double v, int base) {
  char buf[32];
  const double a = std::abs(v);
  auto whole = [](double x) { return std::abs(x - std::round(x)) < 1e-9 * std::max(1.0, std::abs(x)); };
  if (base == 2 && a >= 1024) {  // binary prefixes: 1k = 1024
    if (a >= 1048576 && whole(v / 1048576)) std::snprintf(buf, sizeof buf, "%.0fM", v / 1048576);
    else std::snprintf(buf, sizeof buf, "%.0fk", v / 1024);
    return buf;
  }
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double m = v;
  while (std::abs(m) >= 1000 && p < 6) m /= 1000, ++p;
  if (whole(m)) std::snprintf(buf, sizeof buf, "%.0f%s", m, kPrefix[p]);
  else std::snprintf(buf, sizeof buf, "%.3g%s", m, kPrefix[p]);
  return buf;
}

void Chart::draw(Canvas& c, int left, int top, int width, int height) const {
  const int x0 = left + 70, x1 = left + width - 20, y0 = top + 40, y1 = top + height - 50;  // the plot area
  auto px = [&](double v) { return x0 + static_cast<int>(std::lround(to_unit(x, v) * (x1 - x0))); };
  auto py = [&](double v) { return y1 - static_cast<int>(std::lround(to_unit(y, v) * (y1 - y0))); };
  c.text(left + (width - Canvas::text_width(title, 2)) / 2, top + 8, title, kInk, 2);
  for (double t : ticks(x)) {
    c.line(px(t), y0, px(t), y1, kGrid);
    const std::string s = tick_label(t, x.log_base);
    c.text(px(t) - Canvas::text_width(s) / 2, y1 + 6, s, kInk);
  }
  for (double t : ticks(y)) {
    c.line(x0, py(t), x1, py(t), kGrid);
    const std::string s = tick_label(t, y.log_base);
    c.text(x0 - 6 - Canvas::text_width(s), py(t) - 3, s, kInk);
  }
  c.line(x0, y1, x1, y1, kInk);
  c.line(x0, y0, x0, y1, kInk);
  c.text(x0 + (x1 - x0 - Canvas::text_width(x.label)) / 2, y1 + 24, x.label, kInk);
  c.text_up(left + 8, y0 + (y1 - y0 + Canvas::text_width(y.label)) / 2, y.label, kInk);
  // References, sampled along x and clipped to the area.
  for (const Reference& r : references) {
    const double from = r.x_from > 0 ? r.x_from : x.lo, to = r.x_to > 0 ? r.x_to : x.hi;
    int last_x = -1, last_y = -1;
    for (int k = 0; k <= 200; ++k) {
      const double v = x.log_base ? from * std::pow(to / from, k / 200.0) : from + (to - from) * k / 200.0;
      const double w = r.a * std::pow(v, r.slope);
      if (w < y.lo || w > y.hi) {
        last_x = -1;
        continue;
      }
      const int X = px(v), Y = py(w);
      if (last_x >= 0) c.line(last_x, last_y, X, Y, r.color, 4);
      last_x = X, last_y = Y;
    }
  }
  for (const Series& s : series)
    for (const auto& [vx, vy] : s.points)
      if (vx >= x.lo && vx <= x.hi && vy >= y.lo && vy <= y.hi) c.dot(px(vx), py(vy), 3, s.color);
  // Legend: series, then references.
  int ly = y0 + 6;
  for (const Series& s : series) {
    c.dot(x0 + 14, ly + 3, 3, s.color);
    c.text(x0 + 24, ly, s.name, kInk);
    ly += 12;
  }
  for (const Reference& r : references) {
    c.line(x0 + 6, ly + 3, x0 + 20, ly + 3, r.color);
    c.text(x0 + 24, ly, r.name, kInk);
    ly += 12;
  }
}

}  // namespace tilefuse::plot
