// Parsing the status the recommender wrote, then recommender::decide_update.
#include "controller/recommendation_step.h"

#include <chrono>

namespace vscaler::controller {

RecommendationStep plan_recommendation(const api::Scaler& scaler, const nlohmann::json& workload,
                                       recommender::Duration min_update_interval,
                                       recommender::TimePoint now,
                                       const recommender::LimitRangeItem* limit_range,
                                       const std::string& applied_since) {
  RecommendationStep step;
  nlohmann::json status = scaler.status();
  if (!status.is_object()) status = nlohmann::json::object();
  if (auto found = status.find("recommendation"); found != status.end()) {
    auto parsed = recommender::parse_recommendation(*found);
    if (parsed.ok()) {
      step.recommendations = std::move(parsed).value();
    } else {
      step.error = parsed.error();
    }
  }
  std::optional<recommender::TimePoint> last_update;
  if (auto found = status.find("lastRecommendationUpdateTime");
      found != status.end() && found->is_string()) {
    auto parsed = recommender::parse_rfc3339(found->get_ref<const std::string&>());
    if (parsed.ok()) last_update = *parsed;
  }
  if (!applied_since.empty()) {
    auto parsed = recommender::parse_rfc3339(applied_since);
    if (parsed.ok() && (!last_update || *parsed > *last_update)) last_update = *parsed;
  }
  step.containers =
      recommender::recommended_containers(scaler, workload, step.recommendations, limit_range);
  step.decision =
      recommender::decide_update(step.containers.applied, last_update, min_update_interval, now);
  return step;
}

recommender::TimePoint wall_now() {
  return std::chrono::time_point_cast<recommender::Duration>(std::chrono::system_clock::now());
}

}  // namespace vscaler::controller
