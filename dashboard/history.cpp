// History: rings of recommended targets and the last observed change, per scaler.
#include "dashboard/history.h"

#include <chrono>
#include <utility>

#include "base/time.h"

namespace vscaler::dashboard {
namespace {

using nlohmann::json;

std::string text_at(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<kube::Int128> nanos_at(const json& resources, const char* key) {
  std::string text = text_at(resources, key);
  if (text.empty()) return std::nullopt;
  auto parsed = kube::Quantity::parse(text);
  if (!parsed.ok()) return std::nullopt;
  return parsed->nanos();
}

std::uint64_t hash(std::string_view text) {
  return std::hash<std::string_view>{}(text);
}

// True when any container the scaler names has fixed values.
bool has_fixed(const api::Scaler& scaler) {
  for (const auto& entry : scaler.containers) {
    if (entry.fixed()) return true;
  }
  return false;
}

}  // namespace

std::map<std::string, HistoryPoint, std::less<>> recommended_targets(const json& status,
                                                                     std::int64_t now) {
  std::map<std::string, HistoryPoint, std::less<>> targets;
  if (!status.is_object()) return targets;
  auto recommendation = status.find("recommendation");
  if (recommendation == status.end() || !recommendation->is_object()) return targets;
  auto list = recommendation->find("containerRecommendations");
  if (list == recommendation->end() || !list->is_array()) return targets;
  for (const auto& item : *list) {
    std::string name = text_at(item, "containerName");
    if (name.empty()) continue;
    const json& target = item.is_object() && item.contains("target") ? item["target"] : json();
    targets[name] = HistoryPoint{now, nanos_at(target, "cpu"), nanos_at(target, "memory")};
  }
  return targets;
}

void History::observe(const std::vector<std::shared_ptr<const api::Scaler>>& scalers,
                      std::int64_t now) {
  ++observation_;
  for (const auto& scaler : scalers) {
    if (scaler) observe_one(*scaler, now);
  }
  std::erase_if(tracks_, [this](const auto& entry) { return entry.second.seen != observation_; });
}

void History::observe_one(const api::Scaler& scaler, std::int64_t now) {
  auto [it, inserted] = tracks_.try_emplace(scaler.key());
  Track& track = it->second;
  std::uint64_t uid = hash(scaler.uid), resource_version = hash(scaler.resource_version);
  if (!inserted && track.uid != uid) {  // deleted and created again: start afresh
    track = Track{};
    inserted = true;
  }
  track.seen = observation_;
  if (!inserted && track.resource_version == resource_version) {
    // The same object as last time: nothing to fold in, but the window still moves.
    bool dropped = false;
    for (auto& series : track.series) {
      dropped = series.ring.drop_before(now - options_.window.count()) || dropped;
    }
    if (dropped) track.version = ++next_version_;
    return;
  }
  track.resource_version = resource_version;
  track.version = ++next_version_;
  const json status = scaler.status();
  bool reported = status.is_object() && status.contains("containers");
  std::uint64_t containers = reported ? hash(status["containers"].dump()) : 0;
  std::string scale_time = text_at(status, "lastScaleTime");
  std::string recommendation_time = text_at(status, "lastRecommendationUpdateTime");
  std::uint64_t scale_hash = hash(scale_time), recommendation_hash = hash(recommendation_time);
  bool first_report = !track.reported && scale_hash == track.last_scale_time;
  if (!inserted && containers != track.containers && !first_report) {
    ObservedChange change;
    if (recommendation_hash != track.last_recommendation_time && !recommendation_time.empty()) {
      change = {recommendation_time, "bounds"};
    } else if (scale_hash != track.last_scale_time && !scale_time.empty()) {
      change = {scale_time, has_fixed(scaler) ? "fixed value" : "patch"};
    } else {
      // The template changed and vscaler did not write it: the admission hook set the values in
      // someone's write (or, in Off mode, the values it would apply moved).
      change = {base::rfc3339_seconds(now), "admission"};
    }
    track.change = std::make_unique<ObservedChange>(std::move(change));
  }
  track.uid = uid;
  track.containers = containers;
  track.reported = reported;
  track.last_scale_time = scale_hash;
  track.last_recommendation_time = recommendation_hash;

  auto window_start = now - options_.window.count();
  for (auto& [name, point] : recommended_targets(status, now)) {
    PointRing& ring = ring_for(track, name);
    ring.add(point, options_.points_per_container);
    ring.drop_before(window_start);
  }
}

const PointRing* History::find_ring(const Track& track, std::string_view container) {
  for (const auto& series : track.series) {
    if (series.container == container) return &series.ring;
  }
  return nullptr;
}

PointRing& History::ring_for(Track& track, std::string_view container) {
  for (auto& series : track.series) {
    if (series.container == container) return series.ring;
  }
  // Grown one at a time: a scaler has a handful of containers, and a vector's doubling would
  // leave room unused in each of 10,000s of tracks.
  track.series.reserve(track.series.size() + 1);
  track.series.push_back(Series{std::string(container), PointRing()});
  return track.series.back().ring;
}

std::vector<HistoryPoint> History::points(std::string_view key, std::string_view container) const {
  auto it = tracks_.find(key);
  if (it == tracks_.end()) return {};
  const PointRing* ring = find_ring(it->second, container);
  return ring != nullptr ? ring->points() : std::vector<HistoryPoint>();
}

std::uint64_t History::version(std::string_view key) const {
  auto it = tracks_.find(key);
  return it == tracks_.end() ? 0 : it->second.version;
}

const ObservedChange* History::last_change(std::string_view key) const {
  auto it = tracks_.find(key);
  if (it == tracks_.end() || !it->second.change) return nullptr;
  return it->second.change.get();
}

}  // namespace vscaler::dashboard
