// The canvas (png.hpp): pixels, lines, discs, text in the 5x7 font, and the PNG encoding (signature, IHDR,
// one IDAT holding a zlib stream of one deflate block with the fixed Huffman codes, IEND; each chunk with
// its CRC-32). Plots are mostly runs of one color and rows like the row above, so the deflate block looks
// back only there: one byte, one pixel, one scanline.
#include "bench/plot/png.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "bench/plot/font.hpp"

namespace tilefuse::plot {

namespace {

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>((v >> shift) & 0xffu));
}

void chunk(std::vector<std::uint8_t>& out, const char* type, const std::vector<std::uint8_t>& data) {
  put32(out, static_cast<std::uint32_t>(data.size()));
  std::vector<std::uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put32(out, crc32(body.data(), body.size()));
}

// Deflate's bits go into bytes from the least significant bit up; Huffman codes go most significant bit
// first.
class BitWriter {
 public:
  explicit BitWriter(std::vector<std::uint8_t>& out) : out_(out) {}
  void bits(std::uint32_t value, int count) {  // `count` bits of value, least significant first
    for (int k = 0; k < count; ++k) bit((value >> k) & 1u);
  }
  void code(std::uint32_t code, int length) {  // a Huffman code, most significant bit first
    for (int k = length - 1; k >= 0; --k) bit((code >> k) & 1u);
  }
  void flush() {
    if (used_) out_.push_back(current_);
    current_ = 0, used_ = 0;
  }

 private:
  void bit(std::uint32_t b) {
    current_ = static_cast<std::uint8_t>(current_ | (b << used_));
    if (++used_ == 8) flush();
  }
  std::vector<std::uint8_t>& out_;
  std::uint8_t current_ = 0;
  int used_ = 0;
};

// A symbol of the fixed literal/length code (RFC 1951, 3.2.6).
void literal_length(BitWriter& w, int symbol) {
  if (symbol <= 143) w.code(0x30 + symbol, 8);
  else if (symbol <= 255) w.code(0x190 + symbol - 144, 9);
  else if (symbol <= 279) w.code(symbol - 256, 7);
  else w.code(0xC0 + symbol - 280, 8);
}

constexpr int kLengthBase[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr int kLengthExtra[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr int kDistanceBase[] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
                                 4097, 6145, 8193, 12289, 16385, 24577};
constexpr int kDistanceExtra[] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

// `data` as one final deflate block with the fixed codes, matching only at distances 1, 3 (a pixel) and
// `row` (a scanline), greedily, 3 to 258 bytes.
void deflate_fixed(const std::vector<std::uint8_t>& data, std::size_t row, std::vector<std::uint8_t>& out) {
  BitWriter w(out);
  w.bits(1, 1);  // final block
  w.bits(1, 2);  // fixed Huffman codes
  const std::size_t n = data.size();
  for (std::size_t i = 0; i < n;) {
    std::size_t best = 0, best_distance = 0;
    for (std::size_t d : {std::size_t{1}, std::size_t{3}, row}) {
      if (d == 0 || d > i || d > 32768) continue;
      std::size_t len = 0;
      while (len < 258 && i + len < n && data[i + len] == data[i + len - d]) ++len;
      if (len > best) best = len, best_distance = d;
    }
    if (best < 3) {
      literal_length(w, data[i]);
      ++i;
      continue;
    }
    int lc = 28;
    while (kLengthBase[lc] > static_cast<int>(best)) --lc;
    literal_length(w, 257 + lc);
    w.bits(static_cast<std::uint32_t>(static_cast<int>(best) - kLengthBase[lc]), kLengthExtra[lc]);
    int dc = 29;
    while (kDistanceBase[dc] > static_cast<int>(best_distance)) --dc;
    w.code(static_cast<std::uint32_t>(dc), 5);
    w.bits(static_cast<std::uint32_t>(static_cast<int>(best_distance) - kDistanceBase[dc]), kDistanceExtra[dc]);
    i += best;
  }
  literal_length(w, 256);  // end of block
  w.flush();
}

}  // namespace

std::uint32_t crc32(const std::uint8_t* data, std::size_t n) {
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= data[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0xedb88320u : c >> 1;
  }
  return c ^ 0xffffffffu;
}

Canvas::Canvas(int width, int height, Color background) : width_(width), height_(height) {
  if (width < 1 || height < 1 || width > 8192 || height > 8192)
    throw std::invalid_argument("tilefuse plot: a canvas is 1 to 8192 pixels a side, got " + std::to_string(width) + "x" +
                                std::to_string(height));
  rgb_.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  fill(0, 0, width - 1, height - 1, background);
}

Color Canvas::at(int x, int y) const {
  const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  return Color{rgb_[i], rgb_[i + 1], rgb_[i + 2]};
}

void Canvas::set(int x, int y, Color c) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) + static_cast<std::size_t>(x)) * 3;
  rgb_[i] = c.r;
  rgb_[i + 1] = c.g;
  rgb_[i + 2] = c.b;
}

void Canvas::fill(int x0, int y0, int x1, int y1, Color c) {
  for (int y = std::max(0, std::min(y0, y1)); y <= std::min(height_ - 1, std::max(y0, y1)); ++y)
    for (int x = std::max(0, std::min(x0, x1)); x <= std::min(width_ - 1, std::max(x0, x1)); ++x) set(x, y, c);
}

void Canvas::line(int x0, int y0, int x1, int y1, Color c, int dash) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy, step = 0;
  for (;;) {
    if (dash <= 0 || (step / dash) % 2 == 0) set(x0, y0, c);
    ++step;
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

void Canvas::dot(int x, int y, int radius, Color c) {
  for (int j = -radius; j <= radius; ++j)
    for (int i = -radius; i <= radius; ++i)
      if (i * i + j * j <= radius * radius + radius) set(x + i, y + j, c);
}

int Canvas::text_width(const std::string& s, int scale) { return static_cast<int>(s.size()) * kAdvance * scale; }

void Canvas::text(int x, int y, const std::string& s, Color c, int scale) {
  for (std::size_t k = 0; k < s.size(); ++k)
    for (int row = 0; row < kGlyphHeight; ++row)
      for (int col = 0; col < kGlyphWidth; ++col)
        if (glyph_cell(s[k], row, col))
          fill(x + (static_cast<int>(k) * kAdvance + col) * scale, y + row * scale,
               x + (static_cast<int>(k) * kAdvance + col) * scale + scale - 1, y + row * scale + scale - 1, c);
}

void Canvas::text_up(int x, int y, const std::string& s, Color c, int scale) {
  for (std::size_t k = 0; k < s.size(); ++k)
    for (int row = 0; row < kGlyphHeight; ++row)
      for (int col = 0; col < kGlyphWidth; ++col)
        if (glyph_cell(s[k], row, col)) {
          const int px = x + row * scale, py = y - (static_cast<int>(k) * kAdvance + col) * scale;
          fill(px, py - scale + 1, px + scale - 1, py, c);
        }
}

std::vector<std::uint8_t> Canvas::png() const {
  std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<std::uint8_t> header;
  put32(header, static_cast<std::uint32_t>(width_));
  put32(header, static_cast<std::uint32_t>(height_));
  header.insert(header.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB, deflate, no filter method, no interlace
  chunk(out, "IHDR", header);
  // The scanlines, each after its filter byte (0: none), in a zlib stream of stored blocks.
  std::vector<std::uint8_t> raw;
  const std::size_t stride = static_cast<std::size_t>(width_) * 3;
  for (int y = 0; y < height_; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), rgb_.begin() + static_cast<std::ptrdiff_t>(y * stride), rgb_.begin() + static_cast<std::ptrdiff_t>((y + 1) * stride));
  }
  std::vector<std::uint8_t> z = {0x78, 0x01};
  deflate_fixed(raw, stride + 1, z);
  std::uint32_t a = 1, b = 0;  // Adler-32 of the uncompressed data
  for (std::uint8_t v : raw) {
    a = (a + v) % 65521u;
    b = (b + a) % 65521u;
  }
  put32(z, (b << 16) | a);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  return out;
}

void Canvas::save(const std::string& path) const {
  const std::vector<std::uint8_t> bytes = png();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("tilefuse plot: cannot write " + path);
}

}  // namespace tilefuse::plot
