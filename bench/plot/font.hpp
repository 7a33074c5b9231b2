// The plots' 5x7 bitmap font (font.cpp).
#pragma once

namespace tilefuse::plot {

/// Glyph cells are 5 wide and 7 tall; a character advances 6 cells.
inline constexpr int kGlyphWidth = 5, kGlyphHeight = 7, kAdvance = 6;

/// Whether cell (row 0..6 from the top, column 0..4 from the left) of character `c` is on; a character
/// the font lacks is a box.
bool glyph_cell(char c, int row, int column);

}  // namespace tilefuse::plot
