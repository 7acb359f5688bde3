// PointRing: one container's recommended targets over time, as History keeps them for 10,000s of
// scalers (issue 17): a bounded run of points, oldest first, holding exactly the memory its points
// need, each in 24 bytes when its values allow (they nearly always do; the full 80-byte
// HistoryPoint only when one does not), and a single point inside the ring itself: most
// containers hold one, as a target moves rarely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "kube/quantity.h"

namespace vscaler::dashboard {

/// A recommended target at one time (Unix seconds); a resource without a target is nullopt.
struct HistoryPoint {
  std::int64_t time = 0;
  std::optional<kube::Int128> cpu;     ///< nanocores
  std::optional<kube::Int128> memory;  ///< nanobytes
  bool operator==(const HistoryPoint& other) const = default;
};

/// A HistoryPoint in 24 bytes: cpu in nanocores, memory in whole bytes (every memory quantity
/// but a fractional number of bytes), kAbsent for a resource without a target.
struct PackedPoint {
  static constexpr std::int64_t kAbsent = std::numeric_limits<std::int64_t>::min();
  std::int64_t time = 0;
  std::int64_t cpu = kAbsent;     ///< nanocores
  std::int64_t memory = kAbsent;  ///< bytes
};

/// `point` packed, or nullopt when a value does not fit (cpu beyond int64 nanocores, memory not
/// a whole number of bytes or beyond int64 bytes): unpack(*pack(p)) == p always.
std::optional<PackedPoint> pack(const HistoryPoint& point);
/// The HistoryPoint `point` stands for.
HistoryPoint unpack(const PackedPoint& point);

/// The points of one container, oldest first. Packed while every point packs (one point in place,
/// more in an allocation of exactly their size); once one does not, all are held as HistoryPoints
/// until it has gone (then packed again). Not thread-safe.
class PointRing {
 public:
  /// Appends `point` unless it recommends what the newest point does (a point per change), then
  /// drops the oldest beyond `bound`. True when it appended.
  bool add(const HistoryPoint& point, std::size_t bound);
  /// Drops the points older than `window_start` but the newest of those: the chart's line starts
  /// from the value that held when the window began. True when it dropped any.
  bool drop_before(std::int64_t window_start);

  /// How many points it holds.
  std::size_t size() const;
  bool empty() const { return size() == 0; }
  /// The point `index` places from the oldest.
  HistoryPoint at(std::size_t index) const;
  /// Every point, oldest first.
  std::vector<HistoryPoint> points() const;
  /// True while the points are held packed (24 bytes each).
  bool packed() const { return !std::holds_alternative<std::vector<HistoryPoint>>(points_); }
  /// The bytes its points take on the heap (capacity, not size: equal, as it allocates exactly;
  /// none for a single packed point).
  std::size_t heap_bytes() const;

 private:
  // Rebuilds the storage from the points from `first` on, plus `extra` when given, in an
  // allocation of exactly their size, packed when they all pack.
  void rebuild(std::size_t first, const HistoryPoint* extra);
  std::int64_t time_at(std::size_t index) const;
  // Calls `f` with the points as a span of what they are held as (PackedPoint or HistoryPoint).
  template <typename F>
  decltype(auto) visit(F&& f) const;

  // None, one packed point in place, packed points, or whole points: 32 bytes.
  std::variant<std::monostate, PackedPoint, std::vector<PackedPoint>, std::vector<HistoryPoint>>
      points_;
};

}  // namespace vscaler::dashboard
