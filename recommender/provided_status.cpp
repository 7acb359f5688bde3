// status.recommendation and RecommendationProvided from the stored status.
#include "recommender/provided_status.h"

#include <cmath>

#include "recommender/recommendation.h"

namespace vscaler::recommender {

using nlohmann::json;

namespace {

// Whether two bound maps name the same resources and each value of `next` lies within
// kBoundWriteTolerance of the stored one.
bool bounds_close(const ResourceMap& stored, const ResourceMap& next) {
  if (stored.size() != next.size()) return false;
  for (const auto& [resource, value] : next) {
    auto it = stored.find(resource);
    if (it == stored.end()) return false;
    const double was = it->second.to_double();
    const double now = value.to_double();
    if (std::fabs(now - was) > kBoundWriteTolerance * std::fabs(was)) return false;
  }
  return true;
}

}  // namespace

bool same_recommendation(const json& stored, const json& next) {
  if (stored == next) return true;
  auto was = parse_recommendation(stored);
  auto now = parse_recommendation(next);
  if (!was.ok() || !now.ok() || was.value().size() != now.value().size()) return false;
  for (std::size_t i = 0; i < now.value().size(); ++i) {
    const ContainerRecommendation& a = was.value()[i];
    const ContainerRecommendation& b = now.value()[i];
    if (a.container_name != b.container_name || a.target != b.target ||
        a.uncapped_target != b.uncapped_target || !bounds_close(a.lower_bound, b.lower_bound) ||
        !bounds_close(a.upper_bound, b.upper_bound)) {
      return false;
    }
  }
  return true;
}

std::optional<json> status_update(const json& stored_status, std::int64_t generation,
                                  const Publication& publication, const std::string& now) {
  const json empty = json::object();
  const json& stored = stored_status.is_object() ? stored_status : empty;
  bool changed = false;
  json update = json::object();
  if (publication.recommendation) {
    auto it = stored.find("recommendation");
    if (it == stored.end() || !same_recommendation(*it, *publication.recommendation)) {
      changed = true;
    }
    update["recommendation"] = *publication.recommendation;
  }
  const bool status_true = publication.reason == ProvidedReason::kRecommended;
  json wanted = {{"type", kRecommendationProvided},
                 {"status", status_true ? "True" : "False"},
                 {"reason", to_string(publication.reason)},
                 {"message", publication.message},
                 {"lastTransitionTime", now},
                 {"observedGeneration", generation}};
  json conditions = json::array();
  bool found = false;
  if (auto it = stored.find("conditions"); it != stored.end() && it->is_array()) {
    for (const json& existing : *it) {
      if (!existing.is_object() || existing.value("type", "") != kRecommendationProvided) {
        conditions.push_back(existing);
        continue;
      }
      if (found) {  // a duplicate of ours: dropped
        changed = true;
        continue;
      }
      found = true;
      json next = wanted;
      if (existing.value("status", "") == next["status"] &&
          existing.contains("lastTransitionTime")) {
        next["lastTransitionTime"] = existing["lastTransitionTime"];
      }
      if (next != existing) changed = true;
      conditions.push_back(std::move(next));
    }
  }
  if (!found) {
    changed = true;
    conditions.push_back(std::move(wanted));
  }
  if (!changed) return std::nullopt;
  update["conditions"] = std::move(conditions);
  return update;
}

}  // namespace vscaler::recommender
