// A scatter chart on the plot canvas (png.hpp): log or linear axes with ticks and grid, series of points,
// reference lines (a constant, or a roofline's slope), a legend and a title. Used by tilefuse_plot.
#pragma once

#include <string>
#include <vector>

#include "bench/plot/png.hpp"

namespace tilefuse::plot {

/// One axis: its range, whether logarithmic (base 2 or 10 by `log_base`; 0: linear) and its label.
struct Axis {
  double lo = 0, hi = 1;
  int log_base = 0;
  std::string label;
};

/// Points of one series.
struct Series {
  std::string name;
  Color color;
  std::vector<std::pair<double, double>> points;
};

/// A reference line: y = a * x^slope (slope 0: a constant; on log-log axes slope 1 is a bandwidth roof).
struct Reference {
  std::string name;
  Color color;
  double a = 1, slope = 0;
  double x_from = 0, x_to = 0;  ///< the range of x it covers (both 0: the whole axis)
};

/// A chart: axes, series, references and a title, drawn into a rectangle of a canvas.
struct Chart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<Reference> references;
  /// Draws into [left, left + width) x [top, top + height) of `c`.
  void draw(Canvas& c, int left, int top, int width, int height) const;
};

/// A tick label: on a base-2 axis binary prefixes ("16", "1k" = 1024, "2M"), else decimal ones ("100",
/// "10G", "1P"), 3 significant digits where not whole.
std::string tick_label(double v, int base);

}  // namespace tilefuse::plot
