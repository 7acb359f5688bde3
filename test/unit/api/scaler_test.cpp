// parse_scaler / validate_scaler_spec: what a VerticalScaler object becomes, and every rule's
// error naming its field.
#include "api/scaler.h"

#include <doctest/doctest.h>

#include "api/packed_text.h"

using nlohmann::json;
using vscaler::api::ControlledValues;
using vscaler::api::parse_scaler;
using vscaler::api::TargetRef;
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
  CHECK(scaler->target == TargetRef{"Deployment", "web"});
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
  spec["containers"] = json::object();
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

TEST_CASE("the seed's scaler is valid: a Deployment and nothing else, every container from usage") {
  auto scaler = parse_scaler(scaler_object(json::parse(R"({"deploymentName": "web"})")));
  REQUIRE(scaler.ok());
  CHECK(scaler->target == TargetRef{"Deployment", "web"});
  CHECK(scaler->update_mode == UpdateMode::kAuto);
  CHECK(scaler->containers.empty());
  CHECK(parse_scaler(scaler_object(json::parse(R"({"deploymentName": "web", "containers": []})")))
            ->containers.empty());
}

TEST_CASE("targetRef names a Deployment like deploymentName; exactly one of the two") {
  auto ref = parse_scaler(scaler_object(json::parse(
      R"({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}})")));
  REQUIRE(ref.ok());
  CHECK(ref->target == TargetRef{"Deployment", "web"});
  CHECK(ref->target.ref() == "Deployment/web");

  CHECK(first_error(json::parse(R"({"updateMode": "Auto"})"))
            .rfind("spec.deploymentName: set exactly one", 0) == 0);
  CHECK(
      first_error(
          json::parse(
              R"({"deploymentName": "web", "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}})"))
          .rfind("spec.targetRef: set exactly one", 0) == 0);
  CHECK(first_error(
            json::parse(
                R"({"targetRef": {"apiVersion": "apps/v1", "kind": "CronJob", "name": "x"}})"))
            .rfind("spec.targetRef.kind: \"CronJob\" is not supported", 0) == 0);
  CHECK(first_error(
            json::parse(
                R"({"targetRef": {"apiVersion": "batch/v1", "kind": "Deployment", "name": "x"}})"))
            .rfind("spec.targetRef.apiVersion:", 0) == 0);
  CHECK(first_error(
            json::parse(R"({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment"}})")) ==
        "spec.targetRef.name: required, the name of the workload");
}

TEST_CASE("a recommendation policy parses, with vscaler's defaults where it is silent") {
  auto scaler = parse_scaler(scaler_object(json::parse(R"({"deploymentName": "web", "containers": [
      {"name": "worker", "minAllowed": {"cpu": "50m", "memory": "64Mi"}, "maxAllowed": {"cpu": 4},
       "controlledResources": ["memory"], "controlledValues": "RequestsOnly"},
      {"name": "app"},
      {"name": "istio-proxy", "mode": "Off"}]})")));
  REQUIRE(scaler.ok());
  const auto& worker = scaler->containers[0];
  CHECK_FALSE(worker.fixed());
  CHECK(worker.min_allowed.at("memory").to_string() == "64Mi");
  CHECK(worker.max_allowed.at("cpu").to_string() == "4");
  CHECK_FALSE(worker.controls_cpu);
  CHECK(worker.controls_memory);
  CHECK(worker.controlled_values == ControlledValues::kRequestsOnly);
  const auto& app = scaler->containers[1];
  CHECK(app.controls_cpu);
  CHECK(app.controls_memory);
  CHECK(app.controlled_values == ControlledValues::kRequestsAndLimits);
  CHECK(scaler->containers[2].off);
  CHECK_FALSE(scaler->containers[2].fixed());
}

TEST_CASE("policy rules: not both kinds of entry, Off carries nothing, min <= max, known names") {
  auto entry = [](const char* text) {
    json spec = json::parse(R"({"deploymentName": "web"})");
    spec["containers"] = json::array({json::parse(text)});
    return first_error(spec);
  };
  CHECK(entry(R"({"name": "app", "requests": {"cpu": "1"}, "maxAllowed": {"cpu": "2"}})")
            .rfind("spec.containers[0]: an entry has fixed values", 0) == 0);
  CHECK(entry(R"({"name": "app", "mode": "Off", "minAllowed": {"cpu": "1"}})")
            .rfind("spec.containers[0].mode: an entry with mode \"Off\"", 0) == 0);
  CHECK(entry(R"({"name": "app", "minAllowed": {"cpu": "1500m"}, "maxAllowed": {"cpu": 1}})") ==
        "spec.containers[0].minAllowed.cpu: 1500m exceeds maxAllowed 1");
  CHECK(entry(R"({"name": "app", "controlledResources": ["cpu", "disk"]})") ==
        "spec.containers[0].controlledResources[1]: \"disk\" is not one of cpu, memory");
  CHECK(entry(R"({"name": "app", "controlledValues": "LimitsOnly"})")
            .rfind("spec.containers[0].controlledValues:", 0) == 0);
  CHECK(entry(R"({"name": "app", "mode": "Sometimes"})").rfind("spec.containers[0].mode:", 0) == 0);
}

TEST_CASE("an unquoted Off (the boolean false) is rejected with the hint to quote it") {
  json spec = json::parse(R"({"deploymentName": "web", "updateMode": false})");
  CHECK(first_error(spec) ==
        "spec.updateMode: got the boolean false, not a mode: YAML reads an unquoted Off as false; "
        "write updateMode: \"Off\" (quoted)");
  spec =
      json::parse(R"({"deploymentName": "web", "containers": [{"name": "app", "mode": false}]})");
  CHECK(first_error(spec) ==
        "spec.containers[0].mode: got the boolean false, not a mode: YAML reads an unquoted Off as "
        "false; write mode: \"Off\" (quoted)");
}

TEST_CASE("updateMode Initial is accepted") {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec", {{"deploymentName", "web"}, {"updateMode", "Initial"}}}};
  auto parsed = parse_scaler(object);
  REQUIRE(parsed.ok());
  CHECK(parsed->update_mode == UpdateMode::kInitial);
  CHECK(to_string(parsed->update_mode) == "Initial");
}

TEST_CASE("updateMode InPlaceOrRecreate and InPlace are accepted; a misspelling names them all") {
  for (const auto& [text, mode] : {std::pair{"InPlaceOrRecreate", UpdateMode::kInPlaceOrRecreate},
                                   std::pair{"InPlace", UpdateMode::kInPlace}}) {
    CAPTURE(text);
    json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                   {"spec", {{"deploymentName", "web"}, {"updateMode", text}}}};
    auto parsed = parse_scaler(object);
    REQUIRE(parsed.ok());
    CHECK(parsed->update_mode == mode);
    CHECK(in_place(parsed->update_mode));
    CHECK(to_string(parsed->update_mode) == text);
  }
  CHECK_FALSE(in_place(UpdateMode::kInitial));
  json spec = json::parse(R"({"deploymentName": "web", "updateMode": "InplaceOrRecreate"})");
  CHECK(first_error(spec) ==
        "spec.updateMode: \"InplaceOrRecreate\" is not one of Auto, Reconcile, Initial, "
        "InPlaceOrRecreate, InPlace, \"Off\"");
}

TEST_CASE(
    "targetRef names a StatefulSet or a DaemonSet; any other kind is denied naming the field") {
  auto db = parse_scaler(scaler_object(json::parse(
      R"({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}})")));
  REQUIRE(db.ok());
  CHECK(db->target == TargetRef{"StatefulSet", "db"});
  CHECK(db->target.ref() == "StatefulSet/db");
  CHECK_FALSE(db->target.is_deployment());
  auto agent = parse_scaler(scaler_object(json::parse(
      R"({"targetRef": {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent"}})")));
  REQUIRE(agent.ok());
  CHECK(agent->target == TargetRef{"DaemonSet", "agent"});
  for (const char* kind : {"ReplicaSet", "CronJob", "statefulset", "Pod", ""}) {
    json spec = json::parse(R"({"targetRef": {"apiVersion": "apps/v1", "name": "x"}})");
    spec["targetRef"]["kind"] = kind;
    CAPTURE(kind);
    CHECK(first_error(spec) == "spec.targetRef.kind: \"" + std::string(kind) +
                                   "\" is not supported; use Deployment, StatefulSet or DaemonSet");
  }
  // A kind of another group is still denied by its apiVersion and its kind.
  auto errors = validate_scaler_spec(
      json::parse(R"({"targetRef": {"apiVersion": "batch/v1", "kind": "CronJob", "name": "x"}})"));
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].rfind("spec.targetRef.apiVersion:", 0) == 0);
  CHECK(errors[1].rfind("spec.targetRef.kind:", 0) == 0);
}

TEST_CASE("the stored status is kept as compact text and reads back as the same object") {
  json object = scaler_object(valid_spec());
  auto bare = parse_scaler(object);
  REQUIRE(bare.ok());
  CHECK(bare->packed_status.empty());
  CHECK(bare->status().is_null());
  CHECK(bare->recommendation().is_null());

  json status = json::parse(R"({"observedGeneration": 3, "conditions": [
    {"type": "Ready", "status": "True", "reason": "UpToDate", "message": "a \"quoted\" text"}],
    "target": {"ref": "Deployment/web", "uid": "d-1"},
    "recommendation": {"containerRecommendations": [{"containerName": "app",
      "target": {"cpu": "250m", "memory": "128Mi"}}]}})");
  object["status"] = status;
  auto scaler = parse_scaler(object);
  REQUIRE(scaler.ok());
  CHECK(scaler->status() == status);
  CHECK(scaler->recommendation() == status["recommendation"]);
  // The recommendation is kept once, apart from the rest.
  CHECK(vscaler::api::unpack_status_text(scaler->packed_status).find("containerRecommendations") ==
        std::string::npos);
  CHECK(json::parse(scaler->stored_recommendation) == status["recommendation"]);

  object["status"].erase("recommendation");
  auto without = parse_scaler(object);
  REQUIRE(without.ok());
  CHECK(without->stored_recommendation.empty());
  CHECK(without->status() == object["status"]);
  CHECK(without->recommendation().is_null());
}

TEST_CASE("recommendation_targets: each container's target in order, the bounds left out") {
  json recommendation = json::parse(R"({"containerRecommendations":[
    {"containerName":"app","target":{"cpu":"300m","memory":"489Mi"},
     "lowerBound":{"cpu":"200m"},"upperBound":{"cpu":"2"},"uncappedTarget":{"cpu":"300m"}},
    {"containerName":"sidecar","target":{"cpu":"10m"}}]})");
  json targets = vscaler::api::recommendation_targets(recommendation);
  CHECK(targets == json::parse(R"([["app",{"cpu":"300m","memory":"489Mi"}],
                                    ["sidecar",{"cpu":"10m"}]])"));
  json moved = recommendation;
  moved["containerRecommendations"][0]["upperBound"]["cpu"] = "4";
  CHECK(vscaler::api::recommendation_targets(moved) == targets);
  moved["containerRecommendations"][1]["target"]["cpu"] = "20m";
  CHECK(vscaler::api::recommendation_targets(moved) != targets);
  CHECK(vscaler::api::recommendation_targets(json()) == json::array());
  CHECK(vscaler::api::recommendation_targets(json{{"containerRecommendations", 3}}) ==
        json::array());
  // Only Off reads the targets alone.
  CHECK_FALSE(vscaler::api::reconciler_reads_bounds(UpdateMode::kOff));
  for (auto mode : {UpdateMode::kAuto, UpdateMode::kReconcile, UpdateMode::kInitial,
                    UpdateMode::kInPlaceOrRecreate, UpdateMode::kInPlace}) {
    CHECK(vscaler::api::reconciler_reads_bounds(mode));
  }
}
