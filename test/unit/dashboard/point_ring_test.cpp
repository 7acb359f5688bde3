// PointRing: points packed in 24 bytes that round-trip exactly what Quantity gives (and the full
// HistoryPoint when a value does not pack), a point per change, bounded, the window's drop, and
// storage of exactly the points held.
#include "dashboard/point_ring.h"

#include <doctest/doctest.h>

#include <limits>
#include <string>

using vscaler::dashboard::HistoryPoint;
using vscaler::dashboard::PackedPoint;
using vscaler::dashboard::PointRing;
using vscaler::kube::Int128;
using vscaler::kube::Quantity;

namespace {

Int128 nanos(const std::string& text) {
  auto parsed = Quantity::parse(text);
  REQUIRE_MESSAGE(parsed.ok(), text);
  return parsed->nanos();
}

HistoryPoint at(std::int64_t time, std::optional<Int128> cpu, std::optional<Int128> memory) {
  return HistoryPoint{time, cpu, memory};
}

}  // namespace

TEST_CASE("point ring: packing round-trips every value exactly, or refuses") {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  // Values that pack: cpu within int64 nanocores, memory a whole number of bytes within int64.
  for (const HistoryPoint& point :
       {at(0, std::nullopt, std::nullopt), at(1'764'590'400, nanos("1n"), nanos("1")),
        at(-5, nanos("0"), nanos("0")), at(7, nanos("352m"), nanos("511772988")),
        at(8, nanos("1021110m"), nanos("1021109408905")), at(9, nanos("4"), nanos("8Gi")),
        at(10, Int128(kMax), Int128(kMax) * 1'000'000'000),
        at(11, Int128(kMin + 1), Int128(kMin + 1) * 1'000'000'000),
        at(12, nanos("-250m"), nanos("-1Ki")), at(kMax, std::nullopt, nanos("7Ei")),
        at(kMin, nanos("9e9"), std::nullopt)}) {
    auto packed = vscaler::dashboard::pack(point);
    REQUIRE(packed.has_value());
    CHECK(vscaler::dashboard::unpack(*packed) == point);
  }
  // Values that do not: a fraction of a byte, beyond int64 nanocores or bytes, the kAbsent mark.
  for (const HistoryPoint& point :
       {at(1, std::nullopt, nanos("1.5")), at(1, std::nullopt, nanos("100m")),
        at(1, std::nullopt, nanos("1n")), at(1, nanos("1e10"), std::nullopt),
        at(1, Int128(kMax) + 1, std::nullopt), at(1, Int128(kMin), std::nullopt),
        at(1, std::nullopt, nanos("8Ei")), at(1, std::nullopt, nanos("1e29")),
        at(1, std::nullopt, Int128(kMin) * 1'000'000'000)}) {
    CHECK_FALSE(vscaler::dashboard::pack(point).has_value());
  }
  CHECK(sizeof(PackedPoint) == 24);
  CHECK(sizeof(PointRing) == 32);
}

TEST_CASE("point ring: a point per change, the newest `bound`, exactly the memory they take") {
  PointRing ring;
  CHECK(ring.empty());
  CHECK(ring.heap_bytes() == 0);
  CHECK(ring.add(at(100, nanos("100m"), nanos("1Gi")), 3));
  CHECK_FALSE(ring.add(at(200, nanos("100m"), nanos("1Gi")), 3));  // the same target
  REQUIRE(ring.size() == 1);
  CHECK(ring.at(0) == at(100, nanos("100m"), nanos("1Gi")));
  CHECK(ring.packed());
  CHECK(ring.heap_bytes() == 0);  // one point: in the ring itself

  CHECK(ring.add(at(300, nanos("100m"), std::nullopt), 3));  // memory lost its target
  CHECK(ring.add(at(400, nanos("200m"), std::nullopt), 3));
  CHECK(ring.add(at(500, nanos("300m"), nanos("2Gi")), 3));  // the oldest goes
  auto points = ring.points();
  REQUIRE(points.size() == 3);
  CHECK(points[0] == at(300, nanos("100m"), std::nullopt));
  CHECK(points[1] == at(400, nanos("200m"), std::nullopt));
  CHECK(points[2] == at(500, nanos("300m"), nanos("2Gi")));
  CHECK(ring.heap_bytes() == 3 * sizeof(PackedPoint));

  // A smaller bound (HistoryOptions changed) trims on the next add, even without a new point.
  CHECK_FALSE(ring.add(at(600, nanos("300m"), nanos("2Gi")), 2));
  REQUIRE(ring.size() == 2);
  CHECK(ring.at(0).time == 400);
  CHECK(ring.heap_bytes() == 2 * sizeof(PackedPoint));

  // Bound 0 keeps nothing.
  CHECK(ring.add(at(700, nanos("1"), std::nullopt), 0));
  CHECK(ring.empty());
  CHECK(ring.heap_bytes() == 0);
}

TEST_CASE("point ring: the window drops what is older, but the value that held at its start") {
  PointRing ring;
  for (std::int64_t time : {100, 200, 300, 400}) ring.add(at(time, Int128(time), std::nullopt), 64);
  CHECK_FALSE(ring.drop_before(150));  // 100 held at 150: it stays
  CHECK(ring.size() == 4);
  CHECK(ring.drop_before(300));  // 300 holds at 300: 100 and 200 go
  REQUIRE(ring.size() == 2);
  CHECK(ring.at(0).time == 300);
  CHECK(ring.heap_bytes() == 2 * sizeof(PackedPoint));
  CHECK(ring.drop_before(10'000));  // the newest always stays
  REQUIRE(ring.size() == 1);
  CHECK(ring.at(0).time == 400);
  CHECK(ring.heap_bytes() == 0);
  CHECK_FALSE(ring.drop_before(20'000));
  CHECK(ring.size() == 1);
}

TEST_CASE("point ring: a value that does not pack keeps every point whole until it has gone") {
  PointRing ring;
  ring.add(at(100, nanos("250m"), nanos("64Mi")), 3);
  HistoryPoint odd = at(200, nanos("1e12"), nanos("1.5"));  // 1e12 cores; a byte and a half
  ring.add(odd, 3);
  CHECK_FALSE(ring.packed());
  REQUIRE(ring.size() == 2);
  CHECK(ring.at(0) == at(100, nanos("250m"), nanos("64Mi")));
  CHECK(ring.at(1) == odd);  // exact, to the nanobyte
  CHECK(ring.heap_bytes() == 2 * sizeof(HistoryPoint));

  ring.add(at(300, nanos("1"), nanos("1Gi")), 3);
  ring.add(at(400, nanos("2"), nanos("1Gi")), 3);  // `odd` is the oldest, then goes
  CHECK_FALSE(ring.packed());
  ring.add(at(500, nanos("3"), nanos("1Gi")), 3);
  CHECK(ring.packed());
  auto points = ring.points();
  REQUIRE(points.size() == 3);
  CHECK(points[0] == at(300, nanos("1"), nanos("1Gi")));
  CHECK(points[2] == at(500, nanos("3"), nanos("1Gi")));
  CHECK(ring.heap_bytes() == 3 * sizeof(PackedPoint));

  // The window's drop packs again too.
  ring.add(at(600, std::nullopt, nanos("1n")), 64);
  CHECK_FALSE(ring.packed());
  ring.add(at(700, nanos("1"), std::nullopt), 64);
  CHECK(ring.drop_before(700));
  CHECK(ring.packed());
  REQUIRE(ring.size() == 1);
  CHECK(ring.at(0) == at(700, nanos("1"), std::nullopt));
}
