// The results tables tilefuse_bench writes (--table) and the peer scripts' lines, read back; and the
// comparison of the two as markdown (tilefuse_plot compare): per kernel, each tilefuse row beside every
// peer timed on the same shape and dtype in the same run, and the speedup over the best of them.
#pragma once

#include <string>
#include <vector>

namespace tilefuse::plot {

/// One row of a results table: | kernel | impl | shape | dtype | time (us) | GB/s | x copy | note |.
struct TableRow {
  std::string kernel, impl, shape, dtype, note;
  double us = 0, gbps = 0, x_copy = 0;
};

/// A table cell's number (0 when empty).
double number(const std::string& cell);

/// The rows of a results table's text (lines that are not table rows, and the header, are skipped).
std::vector<TableRow> parse_table(const std::string& text);
/// The rows of the results table at `path`; throws naming the path when it cannot be read.
std::vector<TableRow> read_table(const std::string& path);

/// One peer's time on one shape, from a peer script's line "kernel impl shape dtype time us ...".
struct PeerRow {
  std::string kernel, impl, shape, dtype;
  double us = 0;
};

/// The lines of a peer script's output (bench/peers_rows.py, bench/peers_matrix.py) that time a shape and
/// dtype of one of `ours`' tilefuse rows: a line names the kernel first, then the peer, then the shape and
/// the dtype (f32, f16, bf16 or float32, float16, bfloat16), then the time in us. Lines that report a
/// failure, and shapes none of `ours` has, are skipped.
std::vector<PeerRow> parse_peers(const std::string& text, const std::vector<TableRow>& ours);

/// Whether a table row is one of tilefuse's own kernels (not the copy, nor an unfused or naive baseline).
bool is_tilefuse(const TableRow& r);

/// Markdown: per kernel, a table of each tilefuse row (time, x copy), every peer's time on its shape, the
/// best peer and the speedup over it (best peer time / tilefuse time), and a line saying on how many of the
/// shapes with peers tilefuse's fastest row is ahead of the best peer.
std::string compare_markdown(const std::vector<TableRow>& ours, const std::vector<PeerRow>& peers);

}  // namespace tilefuse::plot
