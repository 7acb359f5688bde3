// build_status: the stored status with what one reconcile decided.
#include "controller/status.h"

#include "kube/workloads.h"

namespace vscaler::controller {

using nlohmann::json;

namespace {

// Sets each of `wanted` in `conditions` (a metav1.Condition list), replacing the one of its type;
// the transition time moves only when the status flips.
void set_conditions(json& conditions, const std::vector<Condition>& wanted_conditions,
                    int64_t generation, const std::string& now) {
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
}

}  // namespace

json build_status(const json& stored, int64_t generation, const StatusReport& report,
                  const std::string& now) {
  json status = stored.is_object() ? stored : json::object();
  status["observedGeneration"] = generation;
  // status.target is the kind-neutral form (its ref feeds the TARGET printer column, which is
  // one JSONPath and cannot join kind and name).
  json target = {{"apiVersion", kube::kWorkloadApiVersion},
                 {"kind", report.target.kind},
                 {"name", report.target.name},
                 {"found", report.target_found},
                 {"ref", report.target.ref()}};
  if (!report.target_uid.empty()) target["uid"] = report.target_uid;
  status["target"] = std::move(target);
  const bool deployment = report.target.is_deployment();
  if (deployment) {
    // status.deployment stays for earlier readers of Deployment scalers.
    json legacy = {{"name", report.target.name}, {"found", report.target_found}};
    if (!report.target_uid.empty()) legacy["uid"] = report.target_uid;
    status["deployment"] = std::move(legacy);
  } else {
    status.erase("deployment");
  }
  if (report.containers) status["containers"] = *report.containers;
  if (report.startup_boost) {
    status["startupBoost"] = *report.startup_boost;
  } else {
    status.erase("startupBoost");
  }
  if (report.pods) {
    status["pods"] = *report.pods;
  } else {
    status.erase("pods");
  }
  // A time kept from a patch whose status write failed, unless the stored one is as recent (RFC
  // 3339 times vscaler writes, all UTC to the second, order as text).
  auto set_time = [&status](const char* field, bool now_flag, const std::string& now_text,
                            const std::string& earlier) {
    if (now_flag) {
      status[field] = now_text;
      return;
    }
    if (earlier.empty()) return;
    auto stored_time = status.find(field);
    if (stored_time == status.end() || !stored_time->is_string() ||
        stored_time->get<std::string>() < earlier) {
      status[field] = earlier;
    }
  };
  set_time("lastScaleTime", report.scaled_now, now, report.scaled_at);
  set_time("lastRecommendationUpdateTime", report.recommendation_applied_now, now,
           report.recommendation_applied_at);

  json conditions = status.contains("conditions") && status["conditions"].is_array()
                        ? status["conditions"]
                        : json::array();
  // Deployment targets keep DeploymentFound beside TargetFound; other kinds have none.
  std::vector<Condition> wanted_conditions = report.conditions;
  for (const Condition& wanted : report.conditions) {
    if (deployment && wanted.type == condition::kTargetFound) {
      Condition deployment_found = wanted;
      deployment_found.type = condition::kDeploymentFound;
      wanted_conditions.push_back(std::move(deployment_found));
    }
  }
  if (!deployment) {
    json kept = json::array();
    for (json& existing : conditions) {
      if (existing.is_object() && existing.value("type", "") == condition::kDeploymentFound) {
        continue;
      }
      kept.push_back(std::move(existing));
    }
    conditions = std::move(kept);
  }
  set_conditions(conditions, wanted_conditions, generation, now);
  status["conditions"] = std::move(conditions);
  return status;
}

json build_invalid_status(const json& stored, int64_t generation, const std::string& message,
                          const std::string& now) {
  json status = stored.is_object() ? stored : json::object();
  status["observedGeneration"] = generation;
  json conditions = status.contains("conditions") && status["conditions"].is_array()
                        ? status["conditions"]
                        : json::array();
  set_conditions(conditions, {{condition::kReady, false, reason::kInvalidSpec, message}},
                 generation, now);
  status["conditions"] = std::move(conditions);
  return status;
}

}  // namespace vscaler::controller
