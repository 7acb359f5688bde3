// Scalers vscaler makes for namespaces that ask for recommendations (DESIGN.md "Namespaces that
// ask for recommendations"): the namespace label that asks, the label that marks a scaler as
// made (and the only kind vscaler may create or delete), and the name and object of the made
// scaler of one workload. Shared by the controller that makes them and the report that shows
// them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vscaler::api {

/// The namespace label (value "true") that asks for a scaler per workload.
inline constexpr std::string_view kRecommendLabel = "vscaler.dev/recommend";
/// The label every made scaler carries, and its value; a scaler without it is a person's.
inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByNamespace = "vscaler-namespace";

/// "vsc-<lower-case kind>-<workload>": never a person's "web" for Deployment "web". A name over
/// 253 characters (a DNS subdomain's limit) is cut and ends in "-" + 10 hex digits of a hash of
/// the whole, so two long names never meet.
std::string made_scaler_name(std::string_view kind, std::string_view workload);

/// The made scaler of ns/kind/workload: mode "Off", targetRef, the managed-by label.
nlohmann::json made_scaler(std::string_view ns, std::string_view kind, std::string_view workload);

/// True when an object's metadata.labels mark it as made (kManagedByLabel: kManagedByNamespace).
bool is_made_scaler(const nlohmann::json& object);

}  // namespace vscaler::api
