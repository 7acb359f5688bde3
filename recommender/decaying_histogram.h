// DecayingHistogram: VerticalPodAutoscaler's exponentially decaying histogram, stored sparsely.
// A sample added at time t weighs weight * 2^((t - reference) / halfLife), so a sample one
// half-life older than another counts half as much; percentiles are of the weighted samples.
// When the exponent would pass kMaxDecayExponent the reference moves forward by whole half-lives
// and every weight is scaled by the matching power of two (exact), so weights never overflow a
// float. Only non-empty buckets are stored, as (index, float weight) pairs sorted by index, in a
// BucketArray of exactly their size: a day of one container's usage typically touches a dozen
// or two of the 176 buckets.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "recommender/bucket_array.h"
#include "recommender/histogram_options.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// What every histogram of one family shares: the bucket layout and the decay half-life. Passed
/// to each call instead of stored, so a histogram costs no pointer and cannot dangle.
struct HistogramConfig {
  /// The bucket layout (CPU or memory).
  const ExponentialHistogramOptions* options = &ExponentialHistogramOptions::cpu();
  /// A sample this much older weighs half as much.
  Duration half_life = std::chrono::hours(24);
};

/// One stored bucket: its index in the layout and its (decayed) weight.
struct HistogramBucket {
  std::uint16_t index;  ///< bucket index in the layout (< 176)
  float weight;         ///< decayed weight, relative to the histogram's reference time
  friend bool operator==(const HistogramBucket&, const HistogramBucket&) = default;
};

/// A sparse exponentially decaying histogram (see the file comment).
class DecayingHistogram {
 public:
  /// Weights are kept below 2^kMaxDecayExponent relative to the reference. VPA uses 100 with
  /// doubles; floats (max ~2^128) need headroom for sample weights and sums, so 20 here. The
  /// choice changes when the reference moves, not the percentiles.
  static constexpr int kMaxDecayExponent = 20;

  /// Adds `value` with `weight` (>= 0) at `time`.
  void add_sample(const HistogramConfig& config, double value, double weight, TimePoint time);
  /// Removes what add_sample(value, weight, time) added; a bucket left under epsilon is dropped.
  void subtract_sample(const HistogramConfig& config, double value, double weight, TimePoint time);
  /// Adds the buckets of `other` above this histogram's highest (all of them when this one is
  /// empty), their weights carried to this one's reference: what `other` saw beyond anything this
  /// one holds, with the weight it had there. Returns how many buckets it added.
  std::size_t add_tail_of(const HistogramConfig& config, const DecayingHistogram& other);
  /// VPA's percentile: the end of the first bucket where the cumulative weight reaches
  /// `fraction` of the total (the start of the last bucket if it is that one); 0 when empty.
  double percentile(const HistogramConfig& config, double fraction) const;

  /// True when no bucket holds weight.
  bool empty() const { return buckets_.empty(); }
  /// Sum of the bucket weights, relative to the reference time.
  double total_weight() const { return total_weight_; }
  /// The instant weights are relative to (epoch while nothing was ever added).
  TimePoint reference() const { return from_millis(reference_ms_); }
  /// A copy of the stored buckets, sorted by index (checkpoints, tests).
  std::vector<HistogramBucket> buckets() const;
  /// Heap and inline bytes this histogram occupies (for the per-container memory budget).
  std::size_t memory_bytes() const { return sizeof(*this) + buckets_.heap_bytes(); }
  /// Releases spare capacity of the bucket vector.
  void shrink_to_fit() { buckets_.shrink_to_fit(); }

  /// Rebuilds a histogram from checkpointed parts; the error names what is invalid (an index
  /// outside the layout, a duplicate index, a negative or non-finite weight).
  static kube::Result<DecayingHistogram> restore(const HistogramConfig& config, TimePoint reference,
                                                 double total_weight,
                                                 std::vector<HistogramBucket> buckets);

  /// Histograms are equal when reference, total and every bucket are equal.
  friend bool operator==(const DecayingHistogram&, const DecayingHistogram&) = default;

 private:
  // 2^((time - reference) / halfLife), first moving the reference forward when needed.
  double decay_factor(const HistogramConfig& config, TimePoint time);
  // Moves the reference to `time` rounded to whole half-lives and rescales the weights.
  void shift_reference(const HistogramConfig& config, TimePoint time);

  std::int64_t reference_ms_ = 0;
  double total_weight_ = 0;
  BucketArray buckets_;
};

}  // namespace vscaler::recommender
