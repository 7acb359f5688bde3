// BucketArray: the non-empty buckets of one DecayingHistogram, sorted by index, in one heap block
// of exactly what is asked for: the weights (floats) first, then the indices (one byte each; a
// layout has at most ExponentialHistogramOptions::kMaxBuckets). A std::vector of (uint16, float)
// pairs spent 8 bytes per bucket and 24 on the vector; this spends 5 per bucket and 10 inline,
// which at 40,000 histograms of a dozen or two buckets each is ~2 MiB less.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vscaler::recommender {

/// Sorted (index, weight) pairs (see the file comment). Positions are 0..size()-1; the caller
/// keeps the indices sorted and unique (insert at lower_bound).
class BucketArray {
 public:
  BucketArray() = default;
  BucketArray(const BucketArray& other);
  BucketArray(BucketArray&& other) noexcept;
  BucketArray& operator=(const BucketArray& other);
  BucketArray& operator=(BucketArray&& other) noexcept;
  ~BucketArray();

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The bucket index at position `i`.
  int index(std::size_t i) const { return indices()[i]; }
  /// The weight at position `i`.
  float weight(std::size_t i) const { return weights_[i]; }
  /// Sets the weight at position `i`.
  void set_weight(std::size_t i, float weight) { weights_[i] = weight; }
  /// The first position whose index is >= `index` (size() when none).
  std::size_t lower_bound(int index) const;
  /// Inserts (index, weight) at position `pos` (growing by doubling; shrink_to_fit trims).
  /// std::length_error when `index` does not fit a byte or the array holds 256 already.
  void insert(std::size_t pos, int index, float weight);
  /// Removes position `pos`.
  void erase(std::size_t pos);
  /// Removes every bucket for which `drop(index, weight)` is true, keeping the order.
  template <typename Drop>
  void erase_if(Drop drop) {
    std::uint8_t* idx = indices();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      if (drop(int(idx[i]), weights_[i])) continue;
      weights_[kept] = weights_[i];
      idx[kept] = idx[i];
      ++kept;
    }
    size_ = static_cast<std::uint16_t>(kept);
  }
  /// Makes room for `capacity` buckets (std::length_error beyond 256).
  void reserve(std::size_t capacity);
  /// Removes every bucket (the block is kept).
  void clear() { size_ = 0; }
  /// Reallocates the block to exactly size() buckets (none: freed).
  void shrink_to_fit() { reallocate(size_); }
  /// Heap bytes of the block.
  std::size_t heap_bytes() const { return capacity_ * kBytesPerBucket; }

  /// Same buckets (indices and weights, by value) in the same order.
  friend bool operator==(const BucketArray& a, const BucketArray& b);

 private:
  static constexpr std::size_t kBytesPerBucket = sizeof(float) + sizeof(std::uint8_t);
  std::uint8_t* indices() const { return reinterpret_cast<std::uint8_t*>(weights_ + capacity_); }
  // Moves the contents into a block of `capacity` buckets (>= size_).
  void reallocate(std::size_t capacity);

  float* weights_ = nullptr;  // capacity_ floats, then capacity_ index bytes
  std::uint16_t size_ = 0;
  std::uint16_t capacity_ = 0;
};

}  // namespace vscaler::recommender
