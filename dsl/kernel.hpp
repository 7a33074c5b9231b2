// tilefuse::Kernel: a tile program function turned into a launchable kernel. The function's parameter
// types are the kernel signature; launch arguments are checked against it at compile time (Boost.Hana)
// and converted to plain runtime arguments.
#pragma once

#include <boost/hana.hpp>
#include <limits>
#include <memory>
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

/// Whether P may be a kernel parameter: a pointer to a storable dtype, or an i32, i64 or f32 scalar.
template <class P> struct valid_param : std::false_type {};
template <class T> struct valid_param<tl::Ptr<T>> : std::bool_constant<tl::is_storable<T>> {};
template <> struct valid_param<tl::Scalar<tl::i32>> : std::true_type {};
template <> struct valid_param<tl::Scalar<tl::i64>> : std::true_type {};
template <> struct valid_param<tl::Scalar<tl::f32>> : std::true_type {};

template <class A> struct host_memory_of { using type = void; };
template <class H> struct host_memory_of<std::span<H>> { using type = H; };
template <class H> struct host_memory_of<std::vector<H>> { using type = H; };
template <class A> struct device_memory_of { using type = void; };
template <class H> struct device_memory_of<DeviceBuffer<H>> { using type = H; };

/// Whether a launch argument of C++ type A may be passed for kernel parameter P.
template <class P, class A>
constexpr bool accepts() {
  using X = std::remove_cvref_t<A>;
  if constexpr (tl::is_ptr_tag<typename P::dtype>::value) {
    using H = tl::host_type_t<typename P::dtype::pointee>;
    return std::is_same_v<typename device_memory_of<X>::type, H> ||
           (std::is_same_v<typename host_memory_of<X>::type, H> && !std::is_const_v<std::remove_reference_t<A>>);
  } else if constexpr (std::is_same_v<typename P::dtype, tl::f32>) {
    return std::is_floating_point_v<X>;
  } else {
    return std::is_integral_v<X> && !std::is_same_v<X, bool>;
  }
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

  /// Runs the program over `config.grid` with `args`, one per kernel parameter: DeviceBuffer<H> or (for the
  /// interpreter) std::span<H> / std::vector<H>& for tl::Ptr<T> with H the host type of T; integers for
  /// i32/i64 scalars; floats for f32 scalars.
  template <class... A>
  void launch(const LaunchConfig& config, A&&... args) {
    static_assert(sizeof...(A) == Sig::arity,
                  "tilefuse: launch got a different number of arguments than the kernel has parameters.");
    if constexpr (sizeof...(A) == Sig::arity) {  // (no follow-on errors after a wrong count)
      namespace hana = boost::hana;
      hana::for_each(hana::zip(Sig::params, hana::tuple_t<A...>), [](auto pair) {
        using P = typename decltype(+hana::at_c<0>(pair))::type;
        using X = typename decltype(+hana::at_c<1>(pair))::type;
        static_assert(detail::accepts<P, X>(),
                      "tilefuse: a launch argument does not match its kernel parameter: pointers take "
                      "DeviceBuffer<H> or std::span<H> of the parameter's element type, i32/i64 take integers, "
                      "f32 takes floats (see the parameter P and argument X in this instantiation).");
      });
      std::array<Arg, sizeof...(A)> packed;
      pack(packed, std::index_sequence_for<A...>{}, std::forward<A>(args)...);
      program_->launch(config, std::span<const Arg>(packed.data(), packed.size()));
    }
  }

  /// The traced, optimized program (IR, generated source, compile reports).
  Program& program() { return *program_; }
  /// The traced, optimized program.
  const Program& program() const { return *program_; }

 private:
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
  void pack(std::array<Arg, sizeof...(A)>& out, std::index_sequence<I...>, A&&... args) {
    (pack_one(out[I], I, boost::hana::at_c<I>(Sig::params), std::forward<A>(args)), ...);
  }

  template <class PT, class A>
  void pack_one(Arg& out, std::size_t index, PT, A&& a) {
    using P = typename PT::type;
    using X = std::remove_cvref_t<A>;
    if constexpr (tl::is_ptr_tag<typename P::dtype>::value) {
      out.dtype = P::dtype::id;
      if constexpr (!std::is_void_v<typename detail::device_memory_of<X>::type>) {
        out.kind = Arg::Kind::device_memory;
        out.device = a.device_ptr();
        out.count = a.size();
      } else {
        out.kind = Arg::Kind::host_memory;
        out.host = static_cast<void*>(a.data());
        out.count = a.size();
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
