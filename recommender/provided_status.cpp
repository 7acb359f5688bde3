// status.recommendation and RecommendationProvided from the stored status.
#include "recommender/provided_status.h"

namespace vscaler::recommender {

using nlohmann::json;

std::optional<json> status_update(const json& stored_status, std::int64_t generation,
                                  const Publication& publication, const std::string& now) {
  const json empty = json::object();
  const json& stored = stored_status.is_object() ? stored_status : empty;
  bool changed = false;
  json update = json::object();
  if (publication.recommendation) {
    auto it = stored.find("recommendation");
    if (it == stored.end() || *it != *publication.recommendation) changed = true;
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
