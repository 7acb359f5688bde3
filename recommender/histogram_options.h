// Exponential histogram bucketing, as VerticalPodAutoscaler's recommender defines it: bucket 0 is
// [0, first), each next bucket is `ratio` times wider than the previous, the last one is open
// ended. CPU: from 0.01 core to 1000 cores; memory: from 1e7 bytes to 1e12 bytes; 5 % growth
// (176 buckets each). The options are shared by every histogram, never copied into one.
#pragma once

#include <vector>

#include "base/result.h"

namespace vscaler::recommender {

/// The bucket layout of a family of histograms and the weight below which a bucket counts as
/// empty.
class ExponentialHistogramOptions {
 public:
  /// The most buckets a layout may have (a bucket index is stored in one byte).
  static constexpr int kMaxBuckets = 256;
  /// Checks the parameters (all positive, ratio > 1, at most kMaxBuckets buckets) and
  /// precomputes the bucket starts. The error names the parameter that is wrong.
  static kube::Result<ExponentialHistogramOptions> create(double max_value,
                                                          double first_bucket_size, double ratio,
                                                          double epsilon);

  /// VPA's CPU histogram: cores, 0.01 .. 1000, 5 % growth, epsilon 1e-4.
  static const ExponentialHistogramOptions& cpu();
  /// VPA's memory histogram: bytes, 1e7 .. 1e12, 5 % growth, epsilon 1e-4.
  static const ExponentialHistogramOptions& memory();

  /// Number of buckets: ceil(log_ratio(max * (ratio - 1) / first + 1)) + 1.
  int num_buckets() const { return static_cast<int>(starts_.size()); }
  /// The bucket holding `value`: 0 below the first bucket's end, the last one above the maximum.
  int find_bucket(double value) const;
  /// The lower end of `bucket` (first * (ratio^bucket - 1) / (ratio - 1)).
  double bucket_start(int bucket) const { return starts_[static_cast<size_t>(bucket)]; }
  /// Weights below this count as zero (a bucket that decays or is subtracted under it is dropped).
  double epsilon() const { return epsilon_; }

 private:
  ExponentialHistogramOptions() = default;
  std::vector<double> starts_;
  double first_bucket_size_ = 0;
  double ratio_ = 0;
  double epsilon_ = 0;
};

}  // namespace vscaler::recommender
