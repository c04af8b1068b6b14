// The fp64 inner loops every CPU reference shares: a dot product with four independent partial
// sums (shorter dependency chains and a fixed summation order, so results do not depend on the
// compiler's vectorization) and y += a x.
#pragma once

namespace mlakit::reference {

inline double dot(const double* a, const double* b, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

inline void axpy(double* y, double a, const double* x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace mlakit::reference
