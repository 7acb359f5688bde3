// Sparse decaying histogram: sorted (index, weight) pairs, binary-searched on insert.
#include "recommender/decaying_histogram.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace vscaler::recommender {
std::vector<HistogramBucket> DecayingHistogram::buckets() const {
  std::vector<HistogramBucket> out;
  out.reserve(buckets_.size());
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    out.push_back({static_cast<std::uint16_t>(buckets_.index(i)), buckets_.weight(i)});
  }
  return out;
}

void DecayingHistogram::shift_reference(const HistogramConfig& config, TimePoint time) {
  const std::int64_t half = config.half_life.count();
  // Round to a multiple of the half-life (as VPA does) so that the exponent is a whole number
  // and the rescaling is an exact power of two.
  std::int64_t t = to_millis(time);
  std::int64_t rounded = (t >= 0 ? (t + half / 2) / half : (t - half / 2) / half) * half;
  if (buckets_.empty()) {
    total_weight_ = 0;
    reference_ms_ = rounded;
    return;
  }
  auto exponent = static_cast<int>(std::llround(double(reference_ms_ - rounded) / double(half)));
  const double eps = config.options->epsilon();
  total_weight_ = std::ldexp(total_weight_, exponent);
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    buckets_.set_weight(i, std::ldexp(buckets_.weight(i), exponent));
  }
  buckets_.erase_if([eps](int, float weight) { return weight < eps; });
  if (buckets_.empty()) total_weight_ = 0;
  reference_ms_ = rounded;
}

double DecayingHistogram::decay_factor(const HistogramConfig& config, TimePoint time) {
  const std::int64_t half = config.half_life.count();
  if (buckets_.empty() ||
      to_millis(time) > reference_ms_ + half * std::int64_t{kMaxDecayExponent}) {
    shift_reference(config, time);
  }
  return std::exp2(double(to_millis(time) - reference_ms_) / double(half));
}

void DecayingHistogram::add_sample(const HistogramConfig& config, double value, double weight,
                                   TimePoint time) {
  if (!(weight > 0) || !std::isfinite(value)) return;
  double w = weight * decay_factor(config, time);
  int index = config.options->find_bucket(value);
  const std::size_t at = buckets_.lower_bound(index);
  if (at < buckets_.size() && buckets_.index(at) == index) {
    buckets_.set_weight(at, static_cast<float>(double(buckets_.weight(at)) + w));
  } else {
    if (w < config.options->epsilon()) return;  // too old to matter: VPA would drop it too
    buckets_.insert(at, index, static_cast<float>(w));
  }
  total_weight_ += w;
}

void DecayingHistogram::subtract_sample(const HistogramConfig& config, double value, double weight,
                                        TimePoint time) {
  if (!(weight > 0) || buckets_.empty()) return;
  double w = weight *
             std::exp2(double(to_millis(time) - reference_ms_) / double(config.half_life.count()));
  int index = config.options->find_bucket(value);
  const std::size_t at = buckets_.lower_bound(index);
  if (at == buckets_.size() || buckets_.index(at) != index) return;
  const double stored = double(buckets_.weight(at));
  double left = stored - w;
  total_weight_ -= std::min(w, stored);
  if (left < config.options->epsilon()) {
    buckets_.erase(at);
  } else {
    buckets_.set_weight(at, static_cast<float>(left));
  }
  if (buckets_.empty()) total_weight_ = 0;
}

std::size_t DecayingHistogram::add_tail_of(const HistogramConfig& config,
                                           const DecayingHistogram& other) {
  const int top = buckets_.empty() ? -1 : buckets_.index(buckets_.size() - 1);
  std::size_t first = 0;
  while (first < other.buckets_.size() && other.buckets_.index(first) <= top) ++first;
  if (first == other.buckets_.size()) return 0;
  // As add_sample of a sample at other's reference: the factor moves this reference if it must.
  const double factor = decay_factor(config, from_millis(other.reference_ms_));
  std::size_t added = 0;
  for (std::size_t i = first; i < other.buckets_.size(); ++i) {
    const double w = double(other.buckets_.weight(i)) * factor;
    if (!(w >= config.options->epsilon())) continue;  // too old to matter, as in add_sample
    buckets_.insert(buckets_.size(), other.buckets_.index(i), static_cast<float>(w));
    total_weight_ += w;
    ++added;
  }
  return added;
}

double DecayingHistogram::percentile(const HistogramConfig& config, double fraction) const {
  if (buckets_.empty()) return 0.0;
  // The threshold comes from the buckets themselves rather than total_weight_: each float bucket
  // rounds on every add while the total does not, and the two drift apart over many samples.
  double sum = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) sum += double(buckets_.weight(i));
  const double threshold = fraction * sum;
  double partial = 0;
  size_t i = 0;
  for (; i + 1 < buckets_.size(); ++i) {
    partial += double(buckets_.weight(i));
    if (partial >= threshold) break;
  }
  int bucket = buckets_.index(i);
  if (bucket < config.options->num_buckets() - 1) return config.options->bucket_start(bucket + 1);
  return config.options->bucket_start(bucket);
}

kube::Result<DecayingHistogram> DecayingHistogram::restore(const HistogramConfig& config,
                                                           TimePoint reference, double total_weight,
                                                           std::vector<HistogramBucket> buckets) {
  if (!std::isfinite(total_weight) || total_weight < 0) {
    return kube::fail("totalWeight must be a finite non-negative number");
  }
  std::sort(buckets.begin(), buckets.end(),
            [](const HistogramBucket& a, const HistogramBucket& b) { return a.index < b.index; });
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    if (b.index >= config.options->num_buckets()) {
      return kube::fail("bucket index " + std::to_string(b.index) + " is outside 0.." +
                        std::to_string(config.options->num_buckets() - 1));
    }
    if (i > 0 && buckets[i - 1].index == b.index) {
      return kube::fail("bucket index " + std::to_string(b.index) + " appears twice");
    }
    if (!std::isfinite(b.weight) || b.weight < 0) {
      return kube::fail("bucket " + std::to_string(b.index) +
                        " weight must be a finite non-negative number");
    }
  }
  std::erase_if(buckets, [](const HistogramBucket& b) { return b.weight == 0; });
  DecayingHistogram h;
  h.reference_ms_ = to_millis(reference);
  h.total_weight_ = buckets.empty() ? 0 : total_weight;
  h.buckets_.reserve(buckets.size());
  for (const auto& b : buckets) h.buckets_.insert(h.buckets_.size(), b.index, b.weight);
  return h;
}

}  // namespace vscaler::recommender
