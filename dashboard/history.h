// History: what the dashboard remembers between page views, fed only from the scalers in memory
// (sampled on a timer and at each view, never an API call), so every replica has it: per scaler
// and container a bounded ring of the recommended targets seen in status, and the last change of
// the template's resources it observed, with its cause.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/scaler.h"
#include "dashboard/point_ring.h"
#include "kube/quantity.h"

namespace vscaler::dashboard {

/// A change of status.containers seen between two observations.
struct ObservedChange {
  std::string time;   ///< RFC 3339: lastScaleTime when vscaler wrote, else when it was seen
  std::string cause;  ///< "admission", "bounds" or "fixed value"
};

/// How much is kept.
struct HistoryOptions {
  std::size_t points_per_container = 64;  ///< a ring: the oldest point goes first
  std::chrono::seconds window{6 * 3600};  ///< points older than this (but the last) are dropped
};

/// Per scaler and container, the targets seen (a point when the target changed). Not
/// thread-safe: the owner locks.
class History {
 public:
  explicit History(HistoryOptions options = {}) : options_(options) {}

  /// Folds one snapshot of every scaler in at `now` (Unix seconds): records targets that changed
  /// and changes of the template's resources, and forgets scalers absent from `scalers`.
  void observe(const std::vector<std::shared_ptr<const api::Scaler>>& scalers, std::int64_t now);

  /// The points of `container` of scaler `key` ("namespace/name"), oldest first; empty if none.
  std::vector<HistoryPoint> points(std::string_view key, std::string_view container) const;
  /// The last change observed for `key`, nullptr before any.
  const ObservedChange* last_change(std::string_view key) const;
  /// A number that moves whenever what History holds for `key` changes (0: not tracked), so a
  /// view built from it can be reused while it stays.
  std::uint64_t version(std::string_view key) const;
  /// How many scalers are tracked.
  std::size_t size() const { return tracks_.size(); }
  const HistoryOptions& options() const { return options_; }

 private:
  // One container's points.
  struct Series {
    std::string container;
    PointRing ring;
  };
  // Kept for every scaler, also when nothing changes: hashes instead of strings, the rare
  // change behind a pointer, the points in a flat vector of exactly sized rings (a map of
  // deques, ~600 bytes each even when empty, was the dashboard's 17 MiB of 10,000 scalers of two
  // containers in bench/sections/recommender_memory.sh).
  struct Track {
    std::uint64_t uid = 0;               ///< hash of metadata.uid
    std::uint64_t resource_version = 0;  ///< hash, of the scaler last folded in: same = skip
    std::uint64_t version = 0;
    // Hashes of status.containers (as JSON text), lastScaleTime and lastRecommendationUpdateTime:
    // enough to see them change, at 8 bytes each per scaler.
    std::uint64_t containers = 0;
    std::uint64_t last_scale_time = 0;
    std::uint64_t last_recommendation_time = 0;
    bool reported = false;       ///< status.containers was present
    std::vector<Series> series;  ///< in the order the containers first had a target
    std::unique_ptr<ObservedChange> change;
    std::uint64_t seen = 0;  ///< the observation that last saw it
  };
  void observe_one(const api::Scaler& scaler, std::int64_t now);
  static const PointRing* find_ring(const Track& track, std::string_view container);
  static PointRing& ring_for(Track& track, std::string_view container);

  HistoryOptions options_;
  struct KeyHash {  // lookups by string_view, without a copy of the key
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  std::unordered_map<std::string, Track, KeyHash, std::equal_to<>> tracks_;
  std::uint64_t observation_ = 0;
  std::uint64_t next_version_ = 0;
};

/// The target of each container in status.recommendation (name -> point at `now`).
std::map<std::string, HistoryPoint, std::less<>> recommended_targets(const nlohmann::json& status,
                                                                     std::int64_t now);

}  // namespace vscaler::dashboard
