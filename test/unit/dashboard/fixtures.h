// Scalers for the dashboard's unit tests: parsed from VerticalScaler objects as the informer
// stores them, with a status written by hand.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "api/scaler.h"

namespace vscaler::dashboard::testing {

/// A parsed scaler ns/name with `spec` and `status` (uid "uid-<name>" unless `uid` is given).
inline std::shared_ptr<const api::Scaler> scaler(const std::string& ns, const std::string& name,
                                                 nlohmann::json spec, nlohmann::json status,
                                                 const std::string& resource_version = "1",
                                                 const std::string& uid = "") {
  nlohmann::json object{{"apiVersion", "scaling.vscaler.dev/v1beta1"},
                        {"kind", "VerticalScaler"},
                        {"metadata",
                         {{"name", name},
                          {"namespace", ns},
                          {"uid", uid.empty() ? "uid-" + name : uid},
                          {"generation", 1},
                          {"resourceVersion", resource_version},
                          {"creationTimestamp", "2026-11-29T18:00:00Z"}}},
                        {"spec", std::move(spec)},
                        {"status", std::move(status)}};
  auto parsed = api::parse_scaler(object);
  if (!parsed.ok()) throw std::runtime_error(parsed.error());
  return std::make_shared<const api::Scaler>(std::move(*parsed));
}

/// A status: the template carries `requests` for container `container`, and the recommender
/// recommends `target` (the bounds and the uncapped target equal to it).
inline nlohmann::json status_with(const std::string& container, nlohmann::json requests,
                                  nlohmann::json target) {
  return nlohmann::json{
      {"target", {{"ref", "Deployment/web"}}},
      {"containers", nlohmann::json::array({{{"name", container}, {"requests", requests}}})},
      {"recommendation",
       {{"containerRecommendations", nlohmann::json::array({{{"containerName", container},
                                                             {"target", target},
                                                             {"lowerBound", target},
                                                             {"upperBound", target},
                                                             {"uncappedTarget", target}}})}}}};
}

}  // namespace vscaler::dashboard::testing
