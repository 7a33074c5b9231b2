// tilefuse::Kernel: a tile program function turned into a launchable kernel. The function's parameter
// types are the kernel signature; launch arguments are checked against it at compile time (Boost.Hana)
// and converted to plain runtime arguments.
#pragma once

#include <array>
#include <boost/hana.hpp>
#include <limits>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/runtime/buffer.hpp"
#include "backend/runtime/program.hpp"
#include "dsl/tile.hpp"

namespace tilefuse {

namespace detail {

namespace hana = boost::hana;
namespace tl = tilefuse::tl;

template <class F> struct signature;
template <class... P> struct signature<void (*)(P...)> {
  /// The parameter types as a Hana tuple of types.
  static constexpr auto params = hana::tuple_t<std::remove_cvref_t<P>...>;
  static constexpr std::size_t arity = sizeof...(P);
};

/// Whether P may be a kernel parameter: a pointer (read-only or not) to a storable dtype, or an i32, i64
/// or f32 scalar.
template <class P> struct valid_param : std::false_type {};
template <class T> struct valid_param<tl::Ptr<T>> : std::bool_constant<tl::is_storable<std::remove_const_t<T>>> {};
template <> struct valid_param<tl::Scalar<tl::i32>> : std::true_type {};
template <> struct valid_param<tl::Scalar<tl::i64>> : std::true_type {};
template <> struct valid_param<tl::Scalar<tl::f32>> : std::true_type {};

/// What a launch argument of C++ type A (as deduced by a forwarding reference) is as memory: the host
/// element type H (void when A is not memory), whether it is device memory, and whether it is read-only
/// (const memory: `const std::vector<H>&`, `std::span<const H>`, `DeviceView<const H>`, `const DeviceBuffer<H>&`).
template <class X> struct memory_kind { using element = void; static constexpr bool device = false, readonly = false; };
template <class H> struct memory_kind<std::span<H>> {
  using element = std::remove_const_t<H>;
  static constexpr bool device = false, readonly = std::is_const_v<H>;
};
template <class H> struct memory_kind<std::vector<H>> { using element = H; static constexpr bool device = false, readonly = false; };
template <class H> struct memory_kind<DeviceBuffer<H>> { using element = H; static constexpr bool device = true, readonly = false; };
template <class H> struct memory_kind<DeviceView<H>> {
  using element = std::remove_const_t<H>;
  static constexpr bool device = true, readonly = std::is_const_v<H>;
};
template <class A> struct memory_of : memory_kind<std::remove_cvref_t<A>> {
  /// Owning containers passed as const (a const vector, a const DeviceBuffer) are read-only too.
  static constexpr bool readonly = memory_kind<std::remove_cvref_t<A>>::readonly ||
                                   ((std::is_same_v<std::remove_cvref_t<A>, std::vector<typename memory_kind<std::remove_cvref_t<A>>::element>> ||
                                     std::is_same_v<std::remove_cvref_t<A>, DeviceBuffer<typename memory_kind<std::remove_cvref_t<A>>::element>>) &&
                                    std::is_const_v<std::remove_reference_t<A>>);
};

/// Whether a launch argument of C++ type A has the right kind and element type for kernel parameter P
/// (const-ness aside: see writable_ok).
template <class P, class A>
constexpr bool accepts() {
  using X = std::remove_cvref_t<A>;
  if constexpr (tl::is_ptr_tag<typename P::dtype>::value) {
    using H = tl::host_type_t<std::remove_const_t<typename P::dtype::pointee>>;
    return std::is_same_v<typename memory_of<A>::element, H>;
  } else if constexpr (std::is_same_v<typename P::dtype, tl::f32>) {
    return std::is_floating_point_v<X>;
  } else {
    return std::is_integral_v<X> && !std::is_same_v<X, bool>;
  }
}

/// False only when read-only memory is passed for a pointer parameter the program may store through.
template <class P, class A>
constexpr bool writable_ok() {
  if constexpr (tl::is_ptr_tag<typename P::dtype>::value)
    return std::is_const_v<typename P::dtype::pointee> || !memory_of<A>::readonly;
  else
    return true;
}

}  // namespace detail

/// A kernel made from the tile program `Fn`, a function whose parameters are tl::Ptr<T> and
/// tl::Scalar<i32 | i64 | f32>; its compile-time constants are template arguments of Fn.
/// Constructing it traces Fn once; each launch runs it over a grid of programs.
template <auto Fn>
class Kernel {
  using Sig = detail::signature<decltype(Fn)>;
  static_assert(boost::hana::all_of(Sig::params, [](auto p) {
                  return boost::hana::bool_c<detail::valid_param<typename decltype(p)::type>::value>;
                }),
                "tilefuse: kernel parameters must be tl::Ptr<T> (T = f32, f16, bf16, i32, i64) or "
                "tl::Scalar<tl::i32 | tl::i64 | tl::f32>.");

 public:
  /// Traces the program under `name`; options fix num_warps and parameter names.
  explicit Kernel(std::string name, KernelOptions options = {})
      : program_(std::make_shared<Program>(trace(std::move(name), options), options)) {}

  /// Runs the program over `config.grid` with `args`, one per kernel parameter: for tl::Ptr<T>, with H the
  /// host type of T, DeviceBuffer<H> or DeviceView<H> (GPU or interpreter) or std::span<H> / std::vector<H>
  /// (interpreter); for tl::Ptr<const T> also their read-only forms (const, span<const H>, DeviceView<const
  /// H>); integers for i32/i64 scalars; floats for f32 scalars.
  template <class... A>
  void launch(const LaunchConfig& config, A&&... args) {
    if constexpr (arguments_match<A...>()) {  // (no follow-on errors after a mismatch)
      const auto packed = pack(std::index_sequence_for<A...>{}, std::forward<A>(args)...);
      program_->launch(config, std::span<const Arg>(packed.data(), packed.size()));
    }
  }

  /// The GPU kernel a launch with these arguments would run, without running it (see Program::inspect):
  /// its specialization key, IR, CUDA, PTX, registers and spills, and whether and why it would compile.
  /// `arch` empty: the GPU's, or sm_90 without one.
  template <class... A>
  Inspection inspect(const LaunchConfig& config, A&&... args) const {
    if constexpr (arguments_match<A...>()) {
      const auto packed = pack(std::index_sequence_for<A...>{}, std::forward<A>(args)...);
      return program_->inspect(config, std::span<const Arg>(packed.data(), packed.size()));
    } else {
      return {};
    }
  }
  /// inspect(), also printing the inspection to `os`.
  template <class... A>
  Inspection inspect(std::ostream& os, const LaunchConfig& config, A&&... args) const {
    Inspection out = inspect(config, std::forward<A>(args)...);
    os << out.text();
    return out;
  }

  /// For a cluster kernel, the programs the GPU holds at once when launched with these arguments (see
  /// Program::resident_cluster_programs: the driver's count of resident clusters times the cluster size;
  /// 0 where it cannot say), for programs that stride over work in steps of the grid. Compiles the kernel
  /// as a launch would.
  template <class... A>
  std::int64_t resident_cluster_programs(Backend backend, A&&... args) {
    if constexpr (arguments_match<A...>()) {
      const auto packed = pack(std::index_sequence_for<A...>{}, std::forward<A>(args)...);
      return program_->resident_cluster_programs(std::span<const Arg>(packed.data(), packed.size()), backend);
    } else {
      return 0;
    }
  }

  /// The traced, optimized program (IR, generated source, compile reports).
  Program& program() { return *program_; }
  /// The traced, optimized program.
  const Program& program() const { return *program_; }

 private:
  // Checks every launch argument against its parameter at compile time, each mismatch with its sentence.
  template <class... A>
  static constexpr bool arguments_match() {
    static_assert(sizeof...(A) == Sig::arity,
                  "tilefuse: launch got a different number of arguments than the kernel has parameters.");
    if constexpr (sizeof...(A) != Sig::arity) {
      return false;
    } else {
      namespace hana = boost::hana;
      // Every argument is checked (transform, not a short-circuiting all_of) so each mismatch gets its sentence.
      constexpr auto matches = hana::transform(hana::zip(Sig::params, hana::tuple_t<A...>), [](auto pair) {
        using P = typename decltype(+hana::at_c<0>(pair))::type;
        using X = typename decltype(+hana::at_c<1>(pair))::type;
        static_assert(detail::accepts<P, X>(),
                      "tilefuse: a launch argument does not match its kernel parameter: pointers take "
                      "DeviceBuffer<H>, DeviceView<H>, std::span<H> or std::vector<H> of the parameter's element type "
                      "H, i32/i64 take integers, f32 takes floats (see the parameter P and argument X in this "
                      "instantiation).");
        static_assert(!detail::accepts<P, X>() || detail::writable_ok<P, X>(),
                      "tilefuse: read-only memory (const, std::span<const H>, DeviceView<const H>) passed for a "
                      "kernel parameter declared tl::Ptr<T>, which the program may store through; declare the "
                      "parameter tl::Ptr<const T> if the program only loads from it.");
        return hana::bool_c<detail::accepts<P, X>() && detail::writable_ok<P, X>()>;
      });
      return decltype(hana::all(matches))::value;
    }
  }

  static ir::Function trace(std::string name, const KernelOptions& options) {
    ir::Function fn;
    fn.name = std::move(name);
    namespace hana = boost::hana;
    std::size_t index = 0;
    hana::for_each(Sig::params, [&](auto p) {
      using P = typename decltype(p)::type;
      std::string pname = index < options.param_names.size() ? options.param_names[index] : "arg" + std::to_string(index);
      fn.params.push_back(ir::Param{std::move(pname), P::type()});
      ++index;
    });
    struct Guard {
      ir::Function* previous;
      std::vector<ir::Instr>* previous_block;
      explicit Guard(ir::Function* f) : previous(tl::detail::tracing), previous_block(tl::detail::tracing_block) {
        tl::detail::tracing = f;
        tl::detail::tracing_block = nullptr;
      }
      ~Guard() {
        tl::detail::tracing = previous;
        tl::detail::tracing_block = previous_block;
      }
    } guard(&fn);
    emit_params_and_run(std::make_index_sequence<Sig::arity>{});
    return fn;
  }

  template <std::size_t... I>
  static void emit_params_and_run(std::index_sequence<I...>) {
    auto make = [](auto p, std::size_t i) {
      using P = typename decltype(p)::type;
      const ir::ValueType type = P::type();
      return P(tl::detail::emit(ir::Op::param, &type, {}, ir::attr::Param{static_cast<int>(i)}));
    };
    // A braced list evaluates left to right, so parameters are emitted in order before the body runs.
    std::tuple<typename decltype(+boost::hana::at_c<I>(Sig::params))::type...> params{
        make(boost::hana::at_c<I>(Sig::params), I)...};
    std::apply([](auto... p) { Fn(p...); }, params);
  }

  template <std::size_t... I, class... A>
  std::array<Arg, sizeof...(A)> pack(std::index_sequence<I...>, A&&... args) const {
    std::array<Arg, sizeof...(A)> out;
    (pack_one(out[I], I, boost::hana::at_c<I>(Sig::params), std::forward<A>(args)), ...);
    return out;
  }

  template <class PT, class A>
  void pack_one(Arg& out, std::size_t index, PT, A&& a) const {
    using P = typename PT::type;
    if constexpr (tl::is_ptr_tag<typename P::dtype>::value) {
      out.dtype = P::dtype::id;
      out.count = a.size();
      if constexpr (detail::memory_of<A>::device) {
        out.kind = Arg::Kind::device_memory;
        out.device = a.device_ptr();
      } else {
        out.kind = Arg::Kind::host_memory;
        // The interpreter only loads through read-only memory: the parameter is tl::Ptr<const T>.
        out.host = const_cast<void*>(static_cast<const void*>(a.data()));
      }
    } else if constexpr (std::is_same_v<typename P::dtype, tl::f32>) {
      out.kind = Arg::Kind::f32;
      out.f32 = static_cast<float>(a);
    } else if constexpr (std::is_same_v<typename P::dtype, tl::i32>) {
      out.kind = Arg::Kind::i32;
      if (!std::in_range<std::int32_t>(a))
        throw std::invalid_argument("tilefuse: kernel '" + program_->name() + "', argument " + std::to_string(index) +
                                    " (" + program_->ir().params[index].name + "): expected an i32, got " +
                                    std::to_string(a) + ", which does not fit in 32 bits");
      out.i32 = static_cast<std::int32_t>(a);
    } else {
      out.kind = Arg::Kind::i64;
      if (!std::in_range<std::int64_t>(a))
        throw std::invalid_argument("tilefuse: kernel '" + program_->name() + "', argument " + std::to_string(index) +
                                    " (" + program_->ir().params[index].name + "): expected an i64, got a value that does not fit");
      out.i64 = static_cast<std::int64_t>(a);
    }
  }

  std::shared_ptr<Program> program_;
};

}  // namespace tilefuse
