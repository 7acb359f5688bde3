// FNV-1a, the recommender's stable 64-bit hash of short keys (pod uids, OOM kill keys): the same
// value in every process, unlike std::hash, and 8 bytes instead of a string per key.
#pragma once

#include <cstdint>
#include <string_view>

namespace vscaler::recommender {

/// The FNV-1a offset basis: the hash of nothing.
inline constexpr std::uint64_t kFnvBasis = 14695981039346656037ull;

/// Continues FNV-1a hash `h` over `text`.
inline std::uint64_t fnv1a(std::uint64_t h, std::string_view text) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace vscaler::recommender
