// PointRing: packed points in exactly sized storage.
#include "dashboard/point_ring.h"

#include <limits>
#include <type_traits>

namespace vscaler::dashboard {
namespace {

constexpr kube::Int128 kNanosPerUnit = 1'000'000'000;

// True when `value` is an int64 other than kAbsent (which marks "no target").
bool fits(kube::Int128 value) {
  return value > PackedPoint::kAbsent && value <= std::numeric_limits<std::int64_t>::max();
}

HistoryPoint to_point(const PackedPoint& point) {
  return unpack(point);
}
const HistoryPoint& to_point(const HistoryPoint& point) {
  return point;
}

}  // namespace

std::optional<PackedPoint> pack(const HistoryPoint& point) {
  PackedPoint packed;
  packed.time = point.time;
  if (point.cpu) {
    if (!fits(*point.cpu)) return std::nullopt;
    packed.cpu = static_cast<std::int64_t>(*point.cpu);
  }
  if (point.memory) {
    if (*point.memory % kNanosPerUnit != 0 || !fits(*point.memory / kNanosPerUnit)) {
      return std::nullopt;
    }
    packed.memory = static_cast<std::int64_t>(*point.memory / kNanosPerUnit);
  }
  return packed;
}

HistoryPoint unpack(const PackedPoint& point) {
  HistoryPoint unpacked;
  unpacked.time = point.time;
  if (point.cpu != PackedPoint::kAbsent) unpacked.cpu = point.cpu;
  if (point.memory != PackedPoint::kAbsent) {
    unpacked.memory = kube::Int128(point.memory) * kNanosPerUnit;
  }
  return unpacked;
}

template <typename F>
decltype(auto) PointRing::visit(F&& f) const {
  if (const auto* wide = std::get_if<std::vector<HistoryPoint>>(&points_)) {
    return f(std::span<const HistoryPoint>(*wide));
  }
  std::span<const PackedPoint> compact;  // empty for std::monostate
  if (const auto* one = std::get_if<PackedPoint>(&points_)) {
    compact = std::span<const PackedPoint>(one, 1);
  } else if (const auto* many = std::get_if<std::vector<PackedPoint>>(&points_)) {
    compact = *many;
  }
  return f(compact);
}

std::size_t PointRing::size() const {
  return visit([](auto points) { return points.size(); });
}

HistoryPoint PointRing::at(std::size_t index) const {
  return visit([index](auto points) { return HistoryPoint(to_point(points[index])); });
}

std::int64_t PointRing::time_at(std::size_t index) const {
  return visit([index](auto points) { return points[index].time; });
}

std::vector<HistoryPoint> PointRing::points() const {
  std::vector<HistoryPoint> all;
  all.reserve(size());
  visit([&all](auto points) {
    for (const auto& point : points) all.push_back(to_point(point));
  });
  return all;
}

std::size_t PointRing::heap_bytes() const {
  if (const auto* many = std::get_if<std::vector<PackedPoint>>(&points_)) {
    return many->capacity() * sizeof(PackedPoint);
  }
  if (const auto* wide = std::get_if<std::vector<HistoryPoint>>(&points_)) {
    return wide->capacity() * sizeof(HistoryPoint);
  }
  return 0;
}

void PointRing::rebuild(std::size_t first, const HistoryPoint* extra) {
  const std::size_t held = size(), count = held - first + (extra != nullptr ? 1 : 0);
  std::vector<PackedPoint> compact;
  compact.reserve(count);  // exactly `count` (no allocation when 0)
  bool all_pack = visit([&](auto points) {
    for (std::size_t i = first; i < held; ++i) {
      if constexpr (std::is_same_v<decltype(points), std::span<const PackedPoint>>) {
        compact.push_back(points[i]);
      } else if (auto one = pack(points[i])) {
        compact.push_back(*one);
      } else {
        return false;
      }
    }
    return true;
  });
  if (all_pack && extra != nullptr) {
    if (auto one = pack(*extra)) {
      compact.push_back(*one);
    } else {
      all_pack = false;
    }
  }
  if (all_pack) {
    if (count == 0) {
      points_ = std::monostate();
    } else if (count == 1) {
      points_ = compact.front();
    } else {
      points_ = std::move(compact);
    }
    return;
  }
  std::vector<HistoryPoint> wide;
  wide.reserve(count);
  visit([&](auto points) {
    for (std::size_t i = first; i < held; ++i) wide.push_back(to_point(points[i]));
  });
  if (extra != nullptr) wide.push_back(*extra);
  points_ = std::move(wide);
}

bool PointRing::add(const HistoryPoint& point, std::size_t bound) {
  std::size_t held = size();
  bool append = true;
  if (held > 0) {
    HistoryPoint newest = at(held - 1);
    append = newest.cpu != point.cpu || newest.memory != point.memory;
  }
  std::size_t total = held + (append ? 1 : 0);
  std::size_t first = total > bound ? total - bound : 0;  // the oldest to drop
  if (first > held) {                                     // bound 0: not even the new point stays
    rebuild(held, nullptr);
    return append;
  }
  if (append || first > 0) rebuild(first, append ? &point : nullptr);
  return append;
}

bool PointRing::drop_before(std::int64_t window_start) {
  std::size_t first = 0, held = size();
  while (held - first > 1 && time_at(first + 1) <= window_start) ++first;
  if (first == 0) return false;
  rebuild(first, nullptr);
  return true;
}

}  // namespace vscaler::dashboard
