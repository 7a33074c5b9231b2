// The fused one-program-per-row softmax, for f32, f16 and bf16 and rows up to 16384 columns: narrow rows
// several to a program, wider ones as one tile or as pieces, of the row or of its aligned window.
#include <array>

#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/programs.hpp"

namespace tilefuse::kernels::softmax_launch {

void check_cols(const RowCall& call) {
  if (call.cols > kSoftmaxMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": cols = " + std::to_string(call.cols) +
                                " exceeds the one-program row limit of " + std::to_string(kSoftmaxMaxCols) +
                                " elements (kernels::softmax_auto and softmax_looped take rows of any width)");
}

void one_program(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  check_cols(call);
  const Arg n = i32(call.cols);
  static constexpr const char* params[] = {"in", "out", "stride", "n_cols"};
  with_float_dtype(a.in.dtype, [&]<class T>() {
    const bool peel = peeled(call.opt.tuning, call.cols, element_bytes_of<T>());
    // Rows that are not whole vectors: through their aligned windows, where the window fits one program.
    const std::int64_t window = window_cols(call.cols, element_bytes_of<T>());
    // Narrow rows: several per program as one 2D tile (packed_plan), read from their own starts unless
    // Tuning::peel asks for their windows.
    if (const auto plan = packed_plan(call.opt.tuning, call.cols, element_bytes_of<T>(), /*column_operands=*/false, peel,
                                      peel && call.opt.tuning.peel.value_or(false))) {
      static constexpr const char* packed_params[] = {"in", "out", "stride", "n_cols", "n_rows"};
      with_block<kPackedRowBytes / 2>(plan->width, [&]<int C>() {
        if constexpr (C * sizeof(tl::host_type_t<T>) <= kPackedRowBytes) {
          constexpr int R = kRowsPerProgram<T, C>;
          auto name = [&] { return packed_name("softmax_", *plan, R, C); };
          const KernelShape shape = packed_shape(call.opt.tuning, "n_cols");
          Program& p = plan->staged         ? kernel_for<&softmax_staged_rows_program<T, R, C>>(shape, name, packed_params)
                       : plan->peeled       ? kernel_for<&softmax_rows_program<T, R, C, true>>(shape, name, packed_params)
                       : plan->staged_store ? kernel_for<&softmax_rows_program<T, R, C, false, true>>(shape, name, packed_params)
                                            : kernel_for<&softmax_rows_program<T, R, C, false>>(shape, name, packed_params);
          launch(call, p, Grid((call.rows + R - 1) / R), std::array{a.in, a.out, n, n, i32(call.rows)});
        }
      });
      return;
    }
    // One row per program, held as one tile or as pieces (with_pieces) of its window or of the row.
    const bool windowed = peel && window <= kSoftmaxMaxCols;
    // A window's row may start up to a vector in: its pieces lie within call.cols columns.
    with_pieces<kSoftmaxMaxCols>(windowed ? window : call.cols, call.cols, [&]<int PIECE, int PIECES>() {
      // Windowed rows ask for the residency of whole-vector rows, unless that would spill (or as
      // Tuning::resident_threads says).
      const int resident = !windowed ? 0 : element_bytes_of<T>() < 4 ? kSoftmaxPeeledResidentHalf : kSoftmaxPeeledResidentF32;
      KernelShape shape = pieces_shape(call.opt.tuning, element_bytes_of<T>(), PIECE, PIECES, resident);
      shape.min_programs_unless_spilling = windowed && !call.opt.tuning.resident_threads;
      auto name = [](const char* stem) { return stem + std::to_string(PIECE) + (PIECES == 1 ? "" : "x" + std::to_string(PIECES)); };
      if constexpr (PIECES == 1) {
        Program& p = windowed ? kernel_for<&softmax_peeled_program<T, PIECE>>(shape, [&] { return name("softmax_peeled_"); }, params)
                              : kernel_for<&softmax_program<T, PIECE>>(shape, [&] { return name("softmax_"); }, params);
        launch(call, p, Grid(call.rows), std::array{a.in, a.out, n, n});
      } else {
        static constexpr const char* pieces_params[] = {"in", "out", "stride", "n_cols", "tail"};
        Program& p = windowed
                         ? kernel_for<&softmax_pieces_program<T, PIECE, PIECES, true>>(shape, [&] { return name("softmax_peeled_"); }, pieces_params)
                         : kernel_for<&softmax_pieces_program<T, PIECE, PIECES, false>>(shape, [&] { return name("softmax_"); }, pieces_params);
        launch(call, p, Grid(call.rows), std::array{a.in, a.out, n, n, i32(call.cols - (PIECES - 1) * PIECE)});
      }
    });
  });
}

}  // namespace tilefuse::kernels::softmax_launch
