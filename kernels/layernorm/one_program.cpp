// LayerNorm two-pass with the row in registers (one tile, or three, five or seven pieces of it: with_pieces),
// its one-pass baseline, and RMSNorm, for f32, f16 and bf16 and every row tile up to 32768 columns (16384
// for RMSNorm).
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/programs.hpp"

namespace tilefuse::kernels::layernorm_launch {

namespace {

void check_cols(const RowCall& call, std::int64_t limit, bool auto_hint) {
  if (call.cols > limit)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": cols = " + std::to_string(call.cols) +
                                " exceeds the one-program row limit of " + std::to_string(limit) + " elements" +
                                (auto_hint ? " (kernels::layernorm_auto and layernorm_looped take rows of any width)" : ""));
}

}  // namespace

void check_layernorm(const RowCall& call, const Args& a) {
  check_matrix(call, "x", a.x);
  check_matrix(call, "y", a.y);
  check_vector(call, "w", a.w, call.cols);
  check_vector(call, "b", a.b, call.cols);
  check_vector(call, "mean", a.mean, call.rows);
  check_vector(call, "rstd", a.rstd, call.rows);
}

void one_program(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  check_cols(call, kNormMaxCols, true);
  const Arg n = i32(call.cols), eps = Arg::of_f32(a.eps);
  const Grid grid(call.rows);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    if (a.one_pass) {
      with_block<kNormMaxCols>(call.cols, [&]<int B>() {
        launch(call, row_program<&layernorm_one_pass_program<T, B>, T, B>(call, "layernorm_one_pass", kParams), grid,
               std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, eps});
      });
      return;
    }
    const bool peel = norm_peeled(call.opt.tuning, call.cols, element_bytes_of<T>());
    // Rows that are not whole vectors: through their aligned windows, where the window fits one program.
    const std::int64_t window = window_cols(call.cols, element_bytes_of<T>());
    // Narrow rows: several per program as one 2D tile (packed_plan); staged, w and b then aligned with
    // every row, on tiles as wide as the softmax packs.
    if (const auto plan = packed_plan(call.opt.tuning, call.cols, element_bytes_of<T>(), /*column_operands=*/true, peel, peel)) {
      static constexpr const char* packed_params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "n_rows", "eps"};
      with_block<kPackedRowBytes / 2>(plan->width, [&]<int C>() {
        if constexpr (C * sizeof(tl::host_type_t<T>) <= kPackedRowBytes) {
          constexpr int R = kRowsPerProgram<T, C>;
          auto name = [&] { return packed_name("layernorm_", *plan, R, C); };
          // Rows read element by element ask for kNormRowByRowResident threads per SM.
          const KernelShape shape = packed_shape(call.opt.tuning, "n", plan->by_element ? kNormRowByRowResident : 0);
          Program& p = plan->staged         ? kernel_for<&layernorm_staged_rows_program<T, R, C>>(shape, name, packed_params)
                       : plan->peeled       ? kernel_for<&layernorm_rows_program<T, R, C, true>>(shape, name, packed_params)
                       : plan->staged_store ? kernel_for<&layernorm_rows_program<T, R, C, false, true>>(shape, name, packed_params)
                                            : kernel_for<&layernorm_rows_program<T, R, C, false>>(shape, name, packed_params);
          launch(call, p, Grid((call.rows + R - 1) / R), std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, i32(call.rows), eps});
        }
      });
      return;
    }
    // One row per program, held as one tile or as pieces (with_pieces) of its window or of the row.
    const bool windowed = peel && window <= kNormMaxCols;
    // A window's row may start up to a vector in: its pieces lie within call.cols columns.
    with_pieces<kNormMaxCols>(windowed ? window : call.cols, call.cols, [&]<int PIECE, int PIECES>() {
      auto name = [&] { return std::string(windowed ? "layernorm_peeled_" : "layernorm_") + std::to_string(PIECE) + (PIECES > 1 ? "x" + std::to_string(PIECES) : ""); };
      // Half rows through windows up to kNormStridedMaxCols (of one tile, where rows are copied ahead):
      // programs striding over the rows that share a window's offset, w and b staged once per program
      // (layernorm_strided_program).
      const bool strided = windowed && element_bytes_of<T>() < 4 &&
                           call.opt.tuning.stride_rows.value_or(strided_window(window, PIECES, element_bytes_of<T>()));
      // Else, rows through windows, enough of them: w and b from their shifted copies, written just before.
      const bool shifted = !strided && windowed && shifted_affine(call.opt.tuning, call.rows, element_bytes_of<T>());
      // Half rows through a window of one tile ask for kNormPeeledResident threads per SM, f16 ones that
      // read shifted copies for kNormShiftedF16Resident.
      const int resident = !windowed || element_bytes_of<T>() == 4      ? 0
                           : shifted && std::is_same_v<T, tl::f16> ? kNormShiftedF16Resident
                                                                   : kNormPeeledResident;
      const KernelShape shape = PIECES == 1 ? row_shape(call.opt.tuning, element_bytes_of<T>(), PIECE, resident)
                                            : pieces_shape(call.opt.tuning, element_bytes_of<T>(), PIECE, PIECES);
      // `tail`: the last piece's columns (a window's pieces find the row's end from its head instead).
      const Arg tail = windowed ? n : i32(call.cols - (PIECES - 1) * PIECE);
      if (strided) {
        if constexpr (!std::is_same_v<T, tl::f32>) {
          static constexpr const char* strided_params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "tail", "eps", "n_rows"};
          // Rows copied ahead (Tuning::rows_ahead) where the window is short (rows_ahead_pays).
          const bool ahead = call.opt.tuning.rows_ahead.value_or(rows_ahead_pays(window, element_bytes_of<T>()));
          auto strided_name = [&] {
            return std::string(ahead ? "layernorm_strided_ahead_" : "layernorm_strided_") + std::to_string(PIECE) +
                   (PIECES > 1 ? "x" + std::to_string(PIECES) : "");
          };
          // kNormStridedResident threads per SM (Tuning::resident_threads), one launch of them: a program
          // past what stays resident would run its share of the rows after the others.
          // With rows copied ahead (Tuning::rows_ahead), x's stage beside w's and b's may hold fewer programs
          // on an SM than that: then as many as its shared memory holds, which leaves each more registers.
          KernelShape resident_shape = shape;
          resident_shape.min_programs = resident_programs(call.opt.tuning, kNormStridedResident, shape.warps);
          if (ahead)
            resident_shape.min_programs = static_cast<int>(std::min<std::int64_t>(
                resident_shape.min_programs, stages_per_sm(3 * PIECE * PIECES * std::int64_t{element_bytes_of<T>()})));
          Program& p = ahead ? kernel_for<&layernorm_strided_program<T, PIECE, PIECES, true>>(resident_shape, strided_name, strided_params)
                             : kernel_for<&layernorm_strided_program<T, PIECE, PIECES>>(resident_shape, strided_name, strided_params);
          launch(call, p, Grid(strided_programs(call, resident_shape, kVectorElements<T>)),
                 std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, tail, eps, i32(call.rows)});
        }
        return;
      }
      static constexpr const char* params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "tail", "eps"};
      if (shifted) {
        static constexpr const char* shifted_params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "tail", "eps", "copy_stride"};
        auto shifted_name = [&] { return "layernorm_shifted_" + std::to_string(PIECE) + (PIECES > 1 ? "x" + std::to_string(PIECES) : ""); };
        LaunchChain chain(call);
        const ShiftedAffine wb = launch_shifted_affine(call, a, chain);
        chain(kernel_for<&layernorm_shifted_program<T, PIECE, PIECES>>(shape, shifted_name, shifted_params), grid,
              std::array{a.x, wb.w, wb.b, a.y, a.mean, a.rstd, n, n, tail, eps, wb.copy_stride});
        return;
      }
      Program& p = windowed ? kernel_for<&layernorm_program<T, PIECE, PIECES, true>>(shape, name, params)
                            : kernel_for<&layernorm_program<T, PIECE, PIECES>>(shape, name, params);
      launch(call, p, grid, std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, tail, eps});
    });
  });
}

void rmsnorm(const RowCall& call, const Args& a) {
  check_matrix(call, "x", a.x);
  check_matrix(call, "y", a.y);
  check_vector(call, "w", a.w, call.cols);
  check_cols(call, kRmsNormMaxCols, false);
  const Arg n = i32(call.cols);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    with_block<kRmsNormMaxCols>(call.cols, [&]<int B>() {
      static constexpr const char* params[] = {"x", "w", "y", "stride", "n", "eps"};
      launch(call, row_program<&rmsnorm_program<T, B>, T, B>(call, "rmsnorm", params), Grid(call.rows),
             std::array{a.x, a.w, a.y, n, n, Arg::of_f32(a.eps)});
    });
  });
}

}  // namespace tilefuse::kernels::layernorm_launch
