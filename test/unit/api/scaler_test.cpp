// parse_scaler / validate_scaler_spec: what a VerticalScaler object becomes, and every rule's
// error naming its field.
#include "api/scaler.h"

#include <doctest/doctest.h>

using nlohmann::json;
using vscaler::api::parse_scaler;
using vscaler::api::UpdateMode;
using vscaler::api::validate_scaler_spec;

namespace {
json scaler_object(json spec) {
  return {{"apiVersion", "scaling.vscaler.dev/v1beta1"},
          {"kind", "VerticalScaler"},
          {"metadata",
           {{"name", "web"},
            {"namespace", "shop"},
            {"uid", "u-1"},
            {"generation", 3},
            {"resourceVersion", "42"},
            {"creationTimestamp", "2026-11-29T18:00:00Z"}}},
          {"spec", std::move(spec)}};
}
json valid_spec() {
  return json::parse(R"({"deploymentName": "web", "updateMode": "Reconcile", "containers": [
    {"name": "app", "requests": {"cpu": 1, "memory": "256Mi"}, "limits": {"cpu": "1500m"}},
    {"name": "*", "requests": {"cpu": "100m"}}]})");
}
std::string first_error(json spec) {
  auto errors = validate_scaler_spec(spec);
  REQUIRE_FALSE(errors.empty());
  return errors.front();
}
}  // namespace

TEST_CASE("a valid scaler parses with metadata, mode and per-container quantities") {
  auto scaler = parse_scaler(scaler_object(valid_spec()));
  REQUIRE(scaler.ok());
  CHECK(scaler->key() == "shop/web");
  CHECK(scaler->generation == 3);
  CHECK(scaler->deployment_name == "web");
  CHECK(scaler->update_mode == UpdateMode::kReconcile);
  REQUIRE(scaler->containers.size() == 2);
  CHECK(scaler->containers[0].requests.at("cpu").to_string() == "1");
  CHECK(scaler->containers[0].limits.at("cpu").to_string() == "1500m");
  CHECK(scaler->containers[1].name == "*");
}

TEST_CASE("updateMode defaults to Auto") {
  json spec = valid_spec();
  spec.erase("updateMode");
  CHECK(parse_scaler(scaler_object(spec))->update_mode == UpdateMode::kAuto);
}

TEST_CASE("a container's own entry wins over the wildcard") {
  auto scaler = parse_scaler(scaler_object(valid_spec()));
  CHECK(scaler->entry_for("app")->name == "app");
  CHECK(scaler->entry_for("sidecar")->name == "*");
  json spec = valid_spec();
  spec["containers"].erase(1);
  CHECK(parse_scaler(scaler_object(spec))->entry_for("sidecar") == nullptr);
}

TEST_CASE("each invalid spec is rejected with an error naming the field") {
  json spec = valid_spec();
  spec.erase("deploymentName");
  CHECK(first_error(spec).rfind("spec.deploymentName:", 0) == 0);

  spec = valid_spec();
  spec["deploymentName"] = "Web_App";
  CHECK(first_error(spec).rfind("spec.deploymentName:", 0) == 0);

  spec = valid_spec();
  spec["containers"] = json::array();
  CHECK(first_error(spec).rfind("spec.containers:", 0) == 0);

  spec = valid_spec();
  spec["containers"][0]["requests"]["gpu"] = "1";
  CHECK(first_error(spec) ==
        "spec.containers[0].requests.gpu: unknown resource name \"gpu\"; only cpu and memory may "
        "be set");

  spec = valid_spec();
  spec["containers"][0]["requests"]["cpu"] = "12 cores";
  CHECK(first_error(spec).rfind("spec.containers[0].requests.cpu: invalid quantity", 0) == 0);

  spec = valid_spec();
  spec["containers"][0]["limits"]["memory"] = "-1Gi";
  CHECK(first_error(spec) == "spec.containers[0].limits.memory: must not be negative, got -1Gi");

  spec = valid_spec();
  spec["containers"][0]["requests"]["cpu"] = "2";
  CHECK(first_error(spec) == "spec.containers[0].requests.cpu: request 2 exceeds limit 1500m");

  spec = valid_spec();
  spec["containers"][1]["name"] = "app";
  CHECK(first_error(spec) == "spec.containers[1].name: duplicate container name \"app\"");

  spec = valid_spec();
  spec["updateMode"] = "Sometimes";
  CHECK(first_error(spec).rfind("spec.updateMode:", 0) == 0);

  spec = valid_spec();
  spec["containers"][0]["requests"]["cpu"] = 0.5;
  CHECK(first_error(spec).rfind("spec.containers[0].requests.cpu: must be a quantity string", 0) ==
        0);
}

TEST_CASE("parse_scaler reports every problem in one message") {
  json spec = valid_spec();
  spec["deploymentName"] = "";
  spec["containers"][0]["requests"]["gpu"] = "1";
  auto scaler = parse_scaler(scaler_object(spec));
  REQUIRE_FALSE(scaler.ok());
  CHECK(scaler.error().find("spec.deploymentName") != std::string::npos);
  CHECK(scaler.error().find("requests.gpu") != std::string::npos);
}
