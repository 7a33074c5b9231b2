// The bench's PNG plots (bench/plot): the CRC-32 check value, a canvas encoded as PNG and read back (the
// signature, the header, every chunk's CRC, the deflate stream and the Adler-32) pixel for pixel,
// and a chart drawing its points and reference lines where its axes put them; and the comparison of a
// results table with the peer scripts' lines (bench/plot/tables).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "bench/plot/chart.hpp"
#include "bench/plot/png.hpp"
#include "bench/plot/tables.hpp"

using namespace tilefuse::plot;

namespace {

std::uint32_t be32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

// A deflate stream of stored and fixed-Huffman blocks (what the encoder writes), from byte `at` of `z`.
std::vector<std::uint8_t> inflate(const std::vector<std::uint8_t>& z, std::size_t at) {
  std::size_t bit = at * 8;
  auto bits = [&](int n) {  // least significant first
    std::uint32_t v = 0;
    for (int k = 0; k < n; ++k, ++bit) v |= static_cast<std::uint32_t>((z[bit / 8] >> (bit % 8)) & 1) << k;
    return v;
  };
  auto code = [&](int n) {  // a Huffman code: most significant first
    std::uint32_t v = 0;
    for (int k = 0; k < n; ++k) v = (v << 1) | bits(1);
    return v;
  };
  static constexpr int kLengthBase[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  static constexpr int kLengthExtra[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  static constexpr int kDistBase[] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
                                      4097, 6145, 8193, 12289, 16385, 24577};
  static constexpr int kDistExtra[] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
  std::vector<std::uint8_t> out;
  for (bool last = false; !last;) {
    last = bits(1);
    const std::uint32_t type = bits(2);
    if (type == 0) {
      bit = (bit + 7) / 8 * 8;
      const std::uint32_t n = bits(16), inverse = bits(16);
      EXPECT_EQ(n ^ 0xffffu, inverse);
      for (std::uint32_t k = 0; k < n; ++k) out.push_back(static_cast<std::uint8_t>(bits(8)));
      continue;
    }
    EXPECT_EQ(type, 1u) << "only stored and fixed-Huffman blocks";
    if (type != 1) return out;
    for (;;) {
      std::uint32_t c = code(7);
      int symbol;
      if (c <= 23) symbol = 256 + static_cast<int>(c);
      else if ((c = (c << 1) | bits(1)) >= 0x30 && c <= 0xBF) symbol = static_cast<int>(c - 0x30);
      else if (c >= 0xC0 && c <= 0xC7) symbol = 280 + static_cast<int>(c - 0xC0);
      else symbol = 144 + static_cast<int>(((c << 1) | bits(1)) - 0x190);
      if (symbol < 256) {
        out.push_back(static_cast<std::uint8_t>(symbol));
        continue;
      }
      if (symbol == 256) break;
      const int len = kLengthBase[symbol - 257] + static_cast<int>(bits(kLengthExtra[symbol - 257]));
      const int dc = static_cast<int>(code(5));
      const std::size_t dist = static_cast<std::size_t>(kDistBase[dc]) + bits(kDistExtra[dc]);
      for (int k = 0; k < len; ++k) out.push_back(out[out.size() - dist]);
    }
  }
  return out;
}

// The pixels of a PNG this encoder wrote (8-bit RGB, filter 0, stored blocks), checking every field.
std::vector<std::uint8_t> decode(const std::vector<std::uint8_t>& png, int* width, int* height) {
  const std::uint8_t signature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_EQ(std::memcmp(png.data(), signature, 8), 0);
  std::vector<std::uint8_t> z;
  for (std::size_t at = 8; at < png.size();) {
    const std::uint32_t n = be32(png, at);
    const std::string type(png.begin() + static_cast<std::ptrdiff_t>(at + 4), png.begin() + static_cast<std::ptrdiff_t>(at + 8));
    EXPECT_EQ(crc32(png.data() + at + 4, n + 4), be32(png, at + 8 + n)) << type;
    if (type == "IHDR") {
      *width = static_cast<int>(be32(png, at + 8));
      *height = static_cast<int>(be32(png, at + 12));
      EXPECT_EQ(png[at + 16], 8);
      EXPECT_EQ(png[at + 17], 2);
    }
    if (type == "IDAT") z.insert(z.end(), png.begin() + static_cast<std::ptrdiff_t>(at + 8), png.begin() + static_cast<std::ptrdiff_t>(at + 8 + n));
    at += 12 + n;
  }
  EXPECT_EQ(z[0], 0x78);
  const std::vector<std::uint8_t> raw = inflate(z, 2);
  std::uint32_t a = 1, b = 0;
  for (std::uint8_t v : raw) a = (a + v) % 65521u, b = (b + a) % 65521u;
  EXPECT_EQ(be32(z, z.size() - 4), (b << 16) | a);
  std::vector<std::uint8_t> rgb;
  const std::size_t stride = static_cast<std::size_t>(*width) * 3 + 1;
  for (int y = 0; y < *height; ++y) {
    EXPECT_EQ(raw[y * stride], 0);
    rgb.insert(rgb.end(), raw.begin() + static_cast<std::ptrdiff_t>(y * stride + 1), raw.begin() + static_cast<std::ptrdiff_t>((y + 1) * stride));
  }
  return rgb;
}

}  // namespace

TEST(Plot, Crc32CheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(crc32(reinterpret_cast<const std::uint8_t*>(s), 9), 0xCBF43926u);
}

TEST(Plot, PngReadsBackPixelForPixel) {
  // Runs, repeated rows and lone pixels: every kind of match the encoder makes, and literals.
  Canvas c(300, 200, Color{250, 250, 250});
  for (int x = 0; x < 300; x += 7) c.set(x, 5, Color{static_cast<std::uint8_t>(x), 17, 250});
  c.fill(10, 10, 50, 40, Color{200, 0, 0});
  c.line(0, 199, 299, 0, Color{0, 0, 255});
  c.dot(150, 100, 5, Color{0, 160, 0});
  c.text(60, 150, "x copy 0.85", Color{0, 0, 0}, 2);
  int w = 0, h = 0;
  const std::vector<std::uint8_t> rgb = decode(c.png(), &w, &h);
  ASSERT_EQ(w, 300);
  ASSERT_EQ(h, 200);
  ASSERT_EQ(rgb.size(), std::size_t{300} * 200 * 3);
  int ink = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const Color p = c.at(x, y);
      const std::size_t i = (static_cast<std::size_t>(y) * 300 + static_cast<std::size_t>(x)) * 3;
      ASSERT_EQ(rgb[i], p.r);
      ASSERT_EQ(rgb[i + 1], p.g);
      ASSERT_EQ(rgb[i + 2], p.b);
      ink += p.r == 0 && p.g == 0 && p.b == 0;
    }
  EXPECT_EQ(c.at(30, 20).r, 200);    // the rectangle
  EXPECT_EQ(c.at(150, 100).g, 160);  // the dot's center
  EXPECT_GT(ink, 100);               // the text
  EXPECT_THROW(Canvas(0, 10), std::invalid_argument);
}

TEST(Plot, ChartPutsPointsWhereItsAxesSay) {
  Chart chart;
  chart.title = "t";
  chart.x = Axis{16, 2097152, 2, "row width"};
  chart.y = Axis{0, 1.2, 0, "x copy"};
  chart.series = {Series{"f32", Color{1, 2, 3}, {{1024, 0.6}}}};
  chart.references = {Reference{"line", Color{4, 5, 6}, 0.9, 0, 0, 0}};
  Canvas c(700, 560);
  chart.draw(c, 0, 0, 700, 560);
  // The plot area is [70, 680] x [40, 510]: x = 1024 is 6 of the 17 octaves from 16, y = 0.6 half way up.
  const int px = 70 + static_cast<int>(std::lround(6.0 / 17.0 * 610)), py = 510 - static_cast<int>(std::lround(0.5 * 470));
  EXPECT_EQ(c.at(px, py).r, 1);
  EXPECT_EQ(c.at(px, py).b, 3);
  const int ref_y = 510 - static_cast<int>(std::lround(0.75 * 470));
  int on_line = 0;
  for (int x = 200; x < 680; ++x) on_line += c.at(x, ref_y).r == 4;
  EXPECT_GT(on_line, 100);  // dashed: about half its pixels
  EXPECT_EQ(tick_label(1024, 2), "1k");
  EXPECT_EQ(tick_label(2097152, 2), "2M");
  EXPECT_EQ(tick_label(1e12, 10), "1T");
  EXPECT_EQ(tick_label(0.85, 0), "0.85");
}

TEST(Plot, ComparisonPutsEachPeerBesideTheRowOfItsShape) {
  const std::string table =
      "| kernel | impl | shape | dtype | time (us) | GB/s | x copy | note |\n"
      "|---|---|---|---|---:|---:|---:|---|\n"
      "| copy | device copy, same bytes | 4096x4096 | f32 | 35.00 | 3800 | 1.00 |  |\n"
      "| softmax | tilefuse fused | 4096x4096 | f32 | 36.00 | 3700 | 0.97 | rel err 1e-7 |\n"
      "| softmax | tilefuse unfused (5 kernels) | 4096x4096 | f32 | 150.00 | 3600 | 0.23 |  |\n"
      "| softmax | tilefuse looped | 4096x4096 | f32 | 50.00 | 2700 | 0.70 |  |\n"
      "| softmax | tilefuse fused | 1000x77 | bf16 | 10.00 | 30 | 0.40 |  |\n"
      "| attention | tilefuse fused (online softmax) | B4 H32 N4096 D128 | bf16 | 3000.00 |  |  | 363 TFLOP/s |\n"
      "| attention | tilefuse fused (online softmax) | B4 H32 N4096 D128 causal | bf16 | 1700.00 |  |  | 317 TFLOP/s |\n";
  const auto ours = parse_table(table);
  ASSERT_EQ(ours.size(), 7u);
  EXPECT_FALSE(is_tilefuse(ours[0]));
  EXPECT_TRUE(is_tilefuse(ours[1]));
  EXPECT_FALSE(is_tilefuse(ours[2]));
  const std::string lines =
      "device NVIDIA H200 torch 2.11\n"
      "softmax    torch                        4096x4096      f32        58.70 us  x copy  0.62\n"
      "softmax    Triton one program per row   4096x4096      f32        35.50 us  x copy  1.02\n"
      "softmax    torch                        4096x4096      f16        20.00 us  x copy  0.62\n"
      "softmax    Triton one program per row   1000x77 bf16: failed: OutOfResources\n"
      "softmax    torch                        1000x77        bf16       12.50 us  x copy  0.30\n"
      "layernorm  torch                        4096x4096      f32        40.00 us  x copy  0.90\n"
      "attention  sdpa flash                           B4 H32 N4096 D128 bfloat16       3168.5 us    347.0 TFLOP/s\n"
      "attention  triton fused (best of 5: (128, 64, 8, 3)) B4 H32 N4096 D128 bfloat16       2407.4 us    456.7 TFLOP/s\n"
      "attention  sdpa flash                           B4 H32 N4096 D128 causal bfloat16     1705.0 us    322.4 TFLOP/s\n"
      "attention  triton fused (best of 5: (128, 32, 4, 4)) B4 H32 N4096 D128 causal bfloat16     1671.4 us    328.9 TFLOP/s\n";
  const auto peers = parse_peers(lines, ours);
  // Not the f16 line (no such row of ours), the failure, LayerNorm (not in the table), nor the device line.
  ASSERT_EQ(peers.size(), 7u);
  EXPECT_EQ(peers[0].impl, "torch");
  EXPECT_EQ(peers[1].impl, "Triton one program per row");
  EXPECT_EQ(peers[2].shape, "1000x77");
  EXPECT_EQ(peers[3].shape, "B4 H32 N4096 D128");  // not the causal row: its shape is followed by "causal"
  EXPECT_EQ(peers[4].impl, "triton fused");       // the configuration it picked is not part of its name
  EXPECT_EQ(peers[5].shape, "B4 H32 N4096 D128 causal");
  EXPECT_DOUBLE_EQ(peers[6].us, 1671.4);
  const std::string md = compare_markdown(ours, peers);
  EXPECT_NE(md.find("| 4096x4096 | f32 | tilefuse fused | 36.00 | 0.97 | 58.70 | 35.50 | Triton one program per row | 0.99x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4096x4096 | f32 | tilefuse looped | 50.00 | 0.70 | 58.70 | 35.50 | Triton one program per row | 0.71x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1000x77 | bf16 | tilefuse fused | 10.00 | 0.40 | 12.50 | - | torch | 1.25x |"), std::string::npos) << md;
  EXPECT_NE(md.find("ahead on 1 of 2 shapes with peers"), std::string::npos) << md;  // softmax: 1000x77 only
  EXPECT_NE(md.find("| B4 H32 N4096 D128 causal | bf16 | tilefuse fused (online softmax) | 1700.00 |  | 1705.00 | 1671.40 | triton fused | 0.98x |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("ahead on 0 of 2 shapes with peers"), std::string::npos) << md;  // attention
  EXPECT_EQ(md.find("unfused"), std::string::npos);
  EXPECT_EQ(md.find("### copy"), std::string::npos);
}
