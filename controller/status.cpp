#include "controller/status.h"

namespace vscaler::controller {

using nlohmann::json;

json build_status(const json& stored, int64_t generation, const StatusReport& report,
                  const std::string& now) {
  json status = stored.is_object() ? stored : json::object();
  status["observedGeneration"] = generation;
  json deployment = {{"name", report.deployment_name}, {"found", report.deployment_found}};
  if (!report.deployment_uid.empty()) deployment["uid"] = report.deployment_uid;
  status["deployment"] = std::move(deployment);
  // status.target is the kind-neutral form (its ref feeds the TARGET printer column, which is
  // one JSONPath and cannot join kind and name); status.deployment stays for earlier readers.
  json target = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"name", report.deployment_name},
                 {"found", report.deployment_found},
                 {"ref", "Deployment/" + report.deployment_name}};
  if (!report.deployment_uid.empty()) target["uid"] = report.deployment_uid;
  status["target"] = std::move(target);
  if (report.containers) status["containers"] = *report.containers;
  if (report.scaled_now) status["lastScaleTime"] = now;
  if (report.recommendation_applied_now) status["lastRecommendationUpdateTime"] = now;

  json conditions = status.contains("conditions") && status["conditions"].is_array()
                        ? status["conditions"]
                        : json::array();
  // TargetFound is the kind-neutral condition; Deployment targets keep DeploymentFound too.
  std::vector<Condition> wanted_conditions = report.conditions;
  for (const Condition& wanted : report.conditions) {
    if (wanted.type == condition::kDeploymentFound) {
      Condition target_found = wanted;
      target_found.type = condition::kTargetFound;
      wanted_conditions.push_back(std::move(target_found));
    }
  }
  for (const Condition& wanted : wanted_conditions) {
    json next = {{"type", wanted.type},       {"status", wanted.status ? "True" : "False"},
                 {"reason", wanted.reason},   {"message", wanted.message},
                 {"lastTransitionTime", now}, {"observedGeneration", generation}};
    bool replaced = false;
    for (json& existing : conditions) {
      if (!existing.is_object() || existing.value("type", "") != wanted.type) continue;
      // The transition time records when the status flipped, not when the reason changed.
      if (existing.value("status", "") == next["status"] &&
          existing.contains("lastTransitionTime")) {
        next["lastTransitionTime"] = existing["lastTransitionTime"];
      }
      existing = std::move(next);
      replaced = true;
      break;
    }
    if (!replaced) conditions.push_back(std::move(next));
  }
  status["conditions"] = std::move(conditions);
  return status;
}

}  // namespace vscaler::controller
