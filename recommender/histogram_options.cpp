// Exponential bucketing: the starts are precomputed once so that a value exactly at a bucket's
// start always lands in that bucket (the logarithm alone is off by one at some boundaries).
#include "recommender/histogram_options.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vscaler::recommender {

kube::Result<ExponentialHistogramOptions> ExponentialHistogramOptions::create(
    double max_value, double first_bucket_size, double ratio, double epsilon) {
  if (!(max_value > 0) || !std::isfinite(max_value)) {
    return kube::fail("histogram max_value must be positive and finite");
  }
  if (!(first_bucket_size > 0) || first_bucket_size > max_value) {
    return kube::fail("histogram first_bucket_size must be positive and at most max_value");
  }
  if (!(ratio > 1) || !std::isfinite(ratio)) {
    return kube::fail("histogram ratio must be greater than 1");
  }
  if (!(epsilon > 0)) return kube::fail("histogram epsilon must be positive");
  ExponentialHistogramOptions options;
  options.first_bucket_size_ = first_bucket_size;
  options.ratio_ = ratio;
  options.epsilon_ = epsilon;
  int n = static_cast<int>(std::ceil(std::log(max_value * (ratio - 1) / first_bucket_size + 1) /
                                     std::log(ratio))) +
          1;
  // A histogram stores bucket indices in one byte (recommender/bucket_array.h).
  if (n > kMaxBuckets) {
    return kube::fail("histogram would have " + std::to_string(n) + " buckets; at most " +
                      std::to_string(kMaxBuckets));
  }
  options.starts_.reserve(static_cast<size_t>(n));
  for (int b = 0; b < n; ++b) {
    options.starts_.push_back(first_bucket_size * (std::pow(ratio, b) - 1) / (ratio - 1));
  }
  return options;
}

namespace {
// The built-in layouts are valid by construction; a failure here is a programming error.
ExponentialHistogramOptions must(kube::Result<ExponentialHistogramOptions> options) {
  if (!options.ok()) throw std::logic_error(options.error());
  return std::move(options).value();
}
}  // namespace

const ExponentialHistogramOptions& ExponentialHistogramOptions::cpu() {
  static const ExponentialHistogramOptions options = must(create(1000.0, 0.01, 1.05, 1e-4));
  return options;
}

const ExponentialHistogramOptions& ExponentialHistogramOptions::memory() {
  static const ExponentialHistogramOptions options = must(create(1e12, 1e7, 1.05, 1e-4));
  return options;
}

int ExponentialHistogramOptions::find_bucket(double value) const {
  if (!(value >= first_bucket_size_)) return 0;  // also NaN
  double estimate = std::log(value * (ratio_ - 1) / first_bucket_size_ + 1) / std::log(ratio_);
  int last = num_buckets() - 1;
  int bucket = estimate >= last ? last : static_cast<int>(estimate);
  // Correct the logarithm's rounding against the exact starts.
  while (bucket < last && starts_[static_cast<size_t>(bucket) + 1] <= value) ++bucket;
  while (bucket > 0 && starts_[static_cast<size_t>(bucket)] > value) --bucket;
  return bucket;
}

}  // namespace vscaler::recommender
