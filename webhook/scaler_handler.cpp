// ScalerHandler: validation, then warnings from the index and one live GET of the target.
#include "webhook/scaler_handler.h"

#include "api/resources.h"
#include "webhook/hpa_warning.h"

namespace vscaler::webhook {

using nlohmann::json;

namespace {

// Time kept back from the review's deadline for answering it.
constexpr std::chrono::milliseconds kAnswerMargin{100};
// The bound when the review carried no deadline: the configuration's timeoutSeconds is at least
// this, and the warnings are not worth more.
constexpr std::chrono::milliseconds kDefaultBudget{2'000};

}  // namespace

std::chrono::milliseconds lookup_budget(std::chrono::steady_clock::time_point deadline,
                                        std::chrono::steady_clock::time_point now) {
  if (deadline == std::chrono::steady_clock::time_point{}) return kDefaultBudget;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) - kAnswerMargin;
  return std::min(left, kDefaultBudget);
}

ScalerHandler::ScalerHandler(const controller::ScalerStore& store, controller::ReconcileApi& api)
    : store_(store), api_(api) {}

AdmissionResponse ScalerHandler::handle(const AdmissionRequest& request) {
  if (request.operation != Operation::kCreate && request.operation != Operation::kUpdate) {
    return AdmissionResponse::allow();
  }
  const json& object = request.object;
  if (!object.is_object()) {
    return AdmissionResponse::deny(400, "request.object: must be a VerticalScaler object");
  }
  if (auto metadata = object.find("metadata");
      metadata != object.end() && !metadata->is_object() && !metadata->is_null()) {
    // Checked here because the namespace is filled in below (a 500 before; found by fuzzing).
    return AdmissionResponse::deny(400, "request.object.metadata: must be an object");
  }
  auto spec = object.is_object() && object.contains("spec") ? object["spec"] : json();
  std::vector<std::string> errors = api::validate_scaler_spec(spec);
  if (!errors.empty()) {
    std::string message = "VerticalScaler is invalid: " + errors.front();
    for (std::size_t i = 1; i < errors.size(); ++i) message += "; " + errors[i];
    return AdmissionResponse::deny(422, message, "Invalid");
  }
  json named = object;
  if (!named["metadata"].contains("namespace"))
    named["metadata"]["namespace"] = request.namespace_name;
  auto scaler = api::parse_scaler(named);
  if (!scaler.ok())
    return AdmissionResponse::deny(422, "VerticalScaler is invalid: " + scaler.error(), "Invalid");

  AdmissionResponse response;
  const std::string workload = scaler->target.kind + " " + scaler->target.name;
  for (const auto& other : store_.targeting(scaler->ns, scaler->target)) {
    if (other->name == scaler->name) continue;
    response.warnings.push_back("VerticalScaler " + other->name + " already targets " + workload +
                                "; only the oldest scaler is applied");
    break;
  }
  // The warnings need a live GET; it must end before the API server stops waiting for this
  // review (its ?timeout=), or the answer arrives too late to count.
  auto budget = lookup_budget(request.deadline);
  if (budget <= std::chrono::milliseconds::zero()) return response;  // no time left to look
  auto found = api_.get_workload(scaler->ns, scaler->target, budget);
  if (!found.ok()) {
    if (kube::is_not_found(found.error())) {
      response.warnings.push_back(workload +
                                  " does not exist yet; it is scaled once it is created");
    }
    return response;  // any other failure: no warning is better than a wrong one
  }
  auto plan = api::plan_resources(*scaler, *found);
  if (std::string invalid = api::invalid_without_pod_level(plan); !invalid.empty()) {
    response.warnings.push_back("declared values conflict with " + workload + ": " + invalid +
                                "; nothing will be applied");
  }
  for (const auto& missing : plan.missing) {
    response.warnings.push_back(workload + " has no container " + missing);
  }
  if (scaler->update_mode == api::UpdateMode::kOff) return response;  // it changes nothing
  // An HPA on cpu/memory of the same target: one more read, in what is left of the budget; any
  // failure (RBAC, timeout) only means no warning.
  budget = lookup_budget(request.deadline);
  if (budget <= std::chrono::milliseconds::zero()) return response;
  auto autoscalers = api_.list_horizontal_pod_autoscalers(scaler->ns, budget);
  if (autoscalers.ok()) {
    for (auto& warning : hpa_warnings(*autoscalers, scaler->target.kind, scaler->target.name)) {
      response.warnings.push_back(std::move(warning));
    }
  }
  return response;
}

}  // namespace vscaler::webhook
