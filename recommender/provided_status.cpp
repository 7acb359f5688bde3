// status.recommendation and RecommendationProvided from the stored status.
#include "recommender/provided_status.h"

#include <algorithm>
#include <cmath>

#include "recommender/recommendation.h"

namespace vscaler::recommender {

using nlohmann::json;

namespace {

// Whether two bound maps name the same resources and each value of `next` lies within
// kBoundWriteTolerance of the stored one, or, where `ceiling` is given and both values lie at
// or above its request for that resource, within kFarBoundWriteFactor of it.
bool bounds_close(const ResourceMap& stored, const ResourceMap& next,
                  const ResourceMap* ceiling = nullptr) {
  if (stored.size() != next.size()) return false;
  for (const auto& [resource, value] : next) {
    auto it = stored.find(resource);
    if (it == stored.end()) return false;
    const double was = it->second.to_double();
    const double now = value.to_double();
    if (std::fabs(now - was) <= kBoundWriteTolerance * std::fabs(was)) continue;
    if (ceiling == nullptr) return false;
    auto request = ceiling->find(resource);
    const double highest = request == ceiling->end() ? 0.0 : request->second.to_double();
    const double low = std::min(was, now);
    const double high = std::max(was, now);
    if (low < highest || low <= 0.0 || high > kFarBoundWriteFactor * low) return false;
  }
  return true;
}

}  // namespace

void raise_request_ceilings(RequestCeilings& ceilings,
                            const std::vector<PodContainer>& containers) {
  for (const PodContainer& container : containers) {
    ResourceMap& highest = ceilings[container.name];
    auto raise = [&highest](const std::string& resource, const kube::Quantity& value) {
      auto [it, inserted] = highest.try_emplace(resource, value);
      if (!inserted && it->second < value) it->second = value;
    };
    for (const auto& [resource, request] : container.requests) raise(resource, request);
    for (const auto& [resource, limit] : container.limits) {
      if (!container.requests.contains(resource)) raise(resource, limit);
    }
  }
}

bool same_recommendation(const json& stored, const json& next, const RequestCeilings& ceilings) {
  if (stored == next) return true;
  auto was = parse_recommendation(stored);
  auto now = parse_recommendation(next);
  if (!was.ok() || !now.ok() || was.value().size() != now.value().size()) return false;
  for (std::size_t i = 0; i < now.value().size(); ++i) {
    const ContainerRecommendation& a = was.value()[i];
    const ContainerRecommendation& b = now.value()[i];
    auto ceiling = ceilings.find(b.container_name);
    if (a.container_name != b.container_name || a.target != b.target ||
        a.uncapped_target != b.uncapped_target || !bounds_close(a.lower_bound, b.lower_bound) ||
        !bounds_close(a.upper_bound, b.upper_bound,
                      ceiling == ceilings.end() ? nullptr : &ceiling->second)) {
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
    if (it == stored.end() ||
        !same_recommendation(*it, *publication.recommendation, publication.request_ceilings)) {
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
