// GELU as tilefuse computes it, on the host (the interpreter). The GPU's tf_gelu (codegen prelude,
// core.cuh) is the same formula with the hardware's reciprocal and ex2 approximations; keep the two in step.
//
// gelu(x) = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2. With z = |x| / sqrt 2, Abramowitz and Stegun 7.1.26
// gives erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2), t = 1 / (1 + p z), within 1.5e-7
// absolute, so q = erfc(z) / 2 = Phi(-|x|) and gelu(x) = x (1 - q) for x >= 0, x q below (the negative side
// has no cancellation, where 1 + erf(x / sqrt 2) has). One reciprocal, one exponential and a dozen
// multiply-adds (about 16 PTX instructions, against 26 for erff): the difference is what a matmul's GELU
// epilogue costs. Error against float64: below 2e-7 max(1, |x|) (Numerics.GeluWithinItsBound in
// tests/nodevice/test_numerics.cpp and tests/device/test_numerics.cpp measure it), the size of erff's own
// through the erf form.
#pragma once

#include <cmath>

namespace tilefuse::numerics {

/// The GELU of x, as the generated kernels compute it (with exact reciprocal and exponential).
inline float gelu(float x) {
  const float z = std::fabs(x) * 0.70710678118654752f;
  const float t = 1.0f / std::fmaf(0.3275911f, z, 1.0f);
  // The coefficients a5 ... a1 halved, so that the polynomial gives erfc(z) / 2.
  float p = std::fmaf(t, 0.5307027145f, -0.7265760135f);
  p = std::fmaf(t, p, 0.7107068705f);
  p = std::fmaf(t, p, -0.142248368f);
  p = std::fmaf(t, p, 0.127414796f);
  const float q = p * t * std::exp2(x * x * -0.72134752044448170f);  // exp(-x^2 / 2) = 2^(-x^2 log2(e) / 2)
  return x * (x >= 0.0f ? 1.0f - q : q);
}

}  // namespace tilefuse::numerics
