// ScalerHandler: validation, then warnings from the in-memory index only.
#include "webhook/scaler_handler.h"

#include "api/resources.h"

namespace vscaler::webhook {

using nlohmann::json;

ScalerHandler::ScalerHandler(const controller::ScalerStore& store) : store_(store) {}

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
  // A review whose object names another namespace than the request, or none in the request
  // (the API server always sends a namespaced object's), is forged: it learns nothing of that
  // namespace's scalers. It is still validated above: that reads nothing vscaler holds.
  if (request.namespace_name.empty() || scaler->ns != request.namespace_name) return response;
  const std::string workload = scaler->target.kind + " " + scaler->target.name;
  for (const auto& other : store_.targeting(scaler->ns, scaler->target)) {
    if (other->name == scaler->name) continue;
    // The scaler vscaler made for an opted-in namespace gives way to a person's (and is deleted):
    // nothing to warn about.
    if (other->made_for_namespace && !scaler->made_for_namespace) continue;
    response.warnings.push_back("VerticalScaler " + other->name + " already targets " + workload +
                                "; only the oldest scaler is applied");
    break;
  }
  return response;
}

}  // namespace vscaler::webhook
