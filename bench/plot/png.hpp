// A small RGB canvas written as a PNG: enough to draw the bench's plots (axes, grid lines, points, lines
// and labels in a 5x7 bitmap font) without a plotting library. The PNG is deflated with the fixed Huffman
// codes, looking back one byte, one pixel or one row (plots are mostly runs and repeated rows): a 900x600
// plot takes tens of kilobytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tilefuse::plot {

/// An 8-bit RGB color.
struct Color {
  std::uint8_t r = 0, g = 0, b = 0;
};

/// A width x height RGB image, origin at the top left.
class Canvas {
 public:
  Canvas(int width, int height, Color background = {255, 255, 255});
  int width() const { return width_; }
  int height() const { return height_; }
  /// The pixel at (x, y) (inside the canvas).
  Color at(int x, int y) const;
  /// Sets a pixel; outside the canvas it does nothing.
  void set(int x, int y, Color c);
  /// A filled rectangle [x0, x1] x [y0, y1].
  void fill(int x0, int y0, int x1, int y1, Color c);
  /// A line from (x0, y0) to (x1, y1); `dash` > 0 draws dash pixels on, dash off.
  void line(int x0, int y0, int x1, int y1, Color c, int dash = 0);
  /// A filled disc of `radius` around (x, y).
  void dot(int x, int y, int radius, Color c);
  /// Text in the 5x7 font, scaled by `scale`, its top left at (x, y); characters it lacks draw as boxes.
  void text(int x, int y, const std::string& s, Color c, int scale = 1);
  /// Text rotated a quarter turn counterclockwise (reading upward), its bottom left at (x, y).
  void text_up(int x, int y, const std::string& s, Color c, int scale = 1);
  /// Width in pixels of `s` in the font at `scale`.
  static int text_width(const std::string& s, int scale = 1);
  /// The image as PNG bytes.
  std::vector<std::uint8_t> png() const;
  /// Writes png() to `path`; throws std::runtime_error naming the path when it cannot.
  void save(const std::string& path) const;

 private:
  int width_, height_;
  std::vector<std::uint8_t> rgb_;
};

/// CRC-32 (PNG's, IEEE 802.3) of `n` bytes.
std::uint32_t crc32(const std::uint8_t* data, std::size_t n);

}  // namespace tilefuse::plot
