// BucketArray: sorted inserts and erases, erase_if keeping order, exact capacity after
// shrink_to_fit, copies and moves, equality by value, the one-byte index bound.
#include "recommender/bucket_array.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <utility>
#include <vector>

using vscaler::recommender::BucketArray;

namespace {
std::vector<std::pair<int, float>> contents(const BucketArray& a) {
  std::vector<std::pair<int, float>> out;
  for (std::size_t i = 0; i < a.size(); ++i) out.emplace_back(a.index(i), a.weight(i));
  return out;
}
void put(BucketArray& a, int index, float weight) {
  std::size_t at = a.lower_bound(index);
  REQUIRE((at == a.size() || a.index(at) != index));
  a.insert(at, index, weight);
}
}  // namespace

TEST_CASE("inserts at lower_bound keep the indices sorted; erase and erase_if keep the order") {
  BucketArray a;
  CHECK(a.empty());
  CHECK(a.heap_bytes() == 0);
  CHECK(a.lower_bound(7) == 0);
  for (int index : {50, 3, 175, 0, 99, 255, 4}) put(a, index, float(index) + 0.5f);
  using P = std::vector<std::pair<int, float>>;
  CHECK(contents(a) ==
        P{{0, 0.5f}, {3, 3.5f}, {4, 4.5f}, {50, 50.5f}, {99, 99.5f}, {175, 175.5f}, {255, 255.5f}});
  CHECK(a.lower_bound(4) == 2);
  CHECK(a.lower_bound(5) == 3);
  CHECK(a.lower_bound(256) == 7);
  a.set_weight(3, 1.25f);
  a.erase(0);
  a.erase(a.size() - 1);
  CHECK(contents(a) == P{{3, 3.5f}, {4, 4.5f}, {50, 1.25f}, {99, 99.5f}, {175, 175.5f}});
  a.erase_if([](int index, float weight) { return index == 4 || weight < 2.0f; });
  CHECK(contents(a) == P{{3, 3.5f}, {99, 99.5f}, {175, 175.5f}});
  a.shrink_to_fit();
  CHECK(a.heap_bytes() == 3 * 5);  // exactly what it holds: 4 bytes of weight, 1 of index
  CHECK(contents(a) == P{{3, 3.5f}, {99, 99.5f}, {175, 175.5f}});
  a.clear();
  a.shrink_to_fit();
  CHECK(a.heap_bytes() == 0);
}

TEST_CASE("copies are deep, moves leave the source empty, equality is by value") {
  BucketArray a;
  for (int index = 0; index < 20; ++index) put(a, index * 3, float(index));
  BucketArray b = a;
  CHECK(b == a);
  b.set_weight(0, 42.0f);
  CHECK_FALSE(b == a);
  CHECK(a.weight(0) == 0.0f);
  BucketArray c = std::move(b);
  CHECK(b.empty());
  CHECK(c.size() == 20);
  CHECK(c.weight(0) == 42.0f);
  c = a;
  CHECK(c == a);
  BucketArray d;
  d = std::move(c);
  CHECK(d == a);
  d = d;  // self-assignment keeps the contents
  CHECK(d == a);
  BucketArray e;
  CHECK_FALSE(e == a);
  CHECK(e == BucketArray());
}

TEST_CASE("256 buckets of one-byte indices at most") {
  BucketArray a;
  for (int index = 0; index < 256; ++index) a.insert(a.size(), index, 1.0f);
  CHECK(a.size() == 256);
  CHECK(a.index(255) == 255);
  CHECK_THROWS_AS(a.insert(0, 0, 1.0f), std::length_error);
  BucketArray b;
  CHECK_THROWS_AS(b.insert(0, 256, 1.0f), std::length_error);
  CHECK_THROWS_AS(b.insert(0, -1, 1.0f), std::length_error);
  CHECK_THROWS_AS(b.reserve(257), std::length_error);
}
