// Order statistics shared by the benchmarks (caftx-bench and
// caftx-bench-coordinator-load).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace caftx::bench {

struct summary {
  double median = 0;
  double min = 0;
  double max = 0;
};

/// Median, min and max; zeros for an empty set.
inline summary summarize(std::vector<double> xs) {
  if (xs.empty())
    return {};
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  double median = n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  return {median, xs.front(), xs.back()};
}

/// The p-th percentile (0..100) of `xs`, nearest rank; 0 for an empty set.
inline double percentile(std::vector<double> xs, double p) {
  if (xs.empty())
    return 0;
  std::sort(xs.begin(), xs.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(xs.size())));
  return xs[std::min(xs.size() - 1, rank == 0 ? 0 : rank - 1)];
}

} // namespace caftx::bench
