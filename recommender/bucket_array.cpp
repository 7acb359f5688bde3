// One block of weights and index bytes.
#include "recommender/bucket_array.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace vscaler::recommender {
namespace {
constexpr std::size_t kMaxSize = 256;
}  // namespace

BucketArray::BucketArray(const BucketArray& other) {
  reallocate(other.size_);
  size_ = other.size_;
  if (size_ == 0) return;
  std::memcpy(weights_, other.weights_, size_ * sizeof(float));
  std::memcpy(indices(), other.indices(), size_);
}

BucketArray::BucketArray(BucketArray&& other) noexcept
    : weights_(std::exchange(other.weights_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

BucketArray& BucketArray::operator=(const BucketArray& other) {
  if (this != &other) *this = BucketArray(other);
  return *this;
}

BucketArray& BucketArray::operator=(BucketArray&& other) noexcept {
  if (this != &other) {
    ::operator delete(weights_);
    weights_ = std::exchange(other.weights_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

BucketArray::~BucketArray() {
  ::operator delete(weights_);
}

std::size_t BucketArray::lower_bound(int index) const {
  const std::uint8_t* idx = indices();
  return static_cast<std::size_t>(
      std::lower_bound(idx, idx + size_, index, [](std::uint8_t b, int i) { return int(b) < i; }) -
      idx);
}

void BucketArray::reallocate(std::size_t capacity) {
  if (capacity == capacity_) return;
  float* block =
      capacity == 0 ? nullptr : static_cast<float*>(::operator new(capacity* kBytesPerBucket));
  if (size_ > 0) {
    std::memcpy(block, weights_, size_ * sizeof(float));
    std::memcpy(reinterpret_cast<std::uint8_t*>(block + capacity), indices(), size_);
  }
  ::operator delete(weights_);
  weights_ = block;
  capacity_ = static_cast<std::uint16_t>(capacity);
}

void BucketArray::reserve(std::size_t capacity) {
  if (capacity > kMaxSize) throw std::length_error("BucketArray: at most 256 buckets");
  if (capacity > capacity_) reallocate(capacity);
}

void BucketArray::insert(std::size_t pos, int index, float weight) {
  if (index < 0 || index > 255 || size_ >= kMaxSize) {
    throw std::length_error("BucketArray: bucket index " + std::to_string(index) +
                            " does not fit, or the array is full");
  }
  if (size_ == capacity_) {
    reallocate(std::min(kMaxSize, std::max<std::size_t>(4, 2 * std::size_t{capacity_})));
  }
  std::uint8_t* idx = indices();
  std::memmove(weights_ + pos + 1, weights_ + pos, (size_ - pos) * sizeof(float));
  std::memmove(idx + pos + 1, idx + pos, size_ - pos);
  weights_[pos] = weight;
  idx[pos] = static_cast<std::uint8_t>(index);
  ++size_;
}

void BucketArray::erase(std::size_t pos) {
  std::uint8_t* idx = indices();
  std::memmove(weights_ + pos, weights_ + pos + 1, (size_ - pos - 1) * sizeof(float));
  std::memmove(idx + pos, idx + pos + 1, size_ - pos - 1);
  --size_;
}

bool operator==(const BucketArray& a, const BucketArray& b) {
  if (a.size_ != b.size_) return false;
  for (std::size_t i = 0; i < a.size_; ++i) {
    if (a.index(i) != b.index(i) || a.weight(i) != b.weight(i)) return false;
  }
  return true;
}

}  // namespace vscaler::recommender
