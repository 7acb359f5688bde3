// Startup boost: parsing and validation of spec.startupBoost, the boost applied on top of the
// shared plan (proportional limits, RequestsOnly, pod-level and quota room, QoS kept), the
// annotation's round trip and the resize back.
#include "api/startup_boost.h"

#include <doctest/doctest.h>

#include <random>

using nlohmann::json;
using namespace vscaler::api;

namespace {
Scaler scaler_from(const std::string& spec) {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec", json::parse(spec)}};
  auto parsed = parse_scaler(object);
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error()));
  return *parsed;
}
json pod(const std::string& containers, const std::string& pod_resources = "") {
  json object = {{"metadata", {{"name", "web-1"}, {"namespace", "shop"}}}};
  object["spec"]["containers"] = json::parse(containers);
  if (!pod_resources.empty()) object["spec"]["resources"] = json::parse(pod_resources);
  return object;
}
/// The plan every writer makes, without changes of its own (the pod's values are the scaler's).
ResourcePlan unchanged_plan(const Scaler& scaler, const json& object) {
  DesiredResources own = controlled_values_of(scaler, object);
  return plan_resources(scaler, object, &own);
}
std::string errors_of(const std::string& spec) {
  std::string out;
  for (const auto& error : validate_scaler_spec(json::parse(spec))) out += error + "\n";
  return out;
}
std::string cpu(const json& resources, const char* section) {
  return resources.at(section).at("cpu").get<std::string>();
}
}  // namespace

TEST_CASE("startupBoost parses at spec level and per container; the container's wins") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "startupBoost": {"cpu": {"type": "Factor", "factor": 2, "durationSeconds": 60}},
      "containers": [{"name": "app", "startupBoost": {"cpu": {"type": "Quantity",
                      "quantity": "500m"}}},
                     {"name": "quiet", "mode": "Off"},
                     {"name": "*"}]})");
  REQUIRE(scaler.boosts());
  const StartupBoost* app = scaler.boost_for("app");
  REQUIRE(app != nullptr);
  CHECK(app->type == StartupBoost::Type::kQuantity);
  CHECK(app->boosted(*vscaler::kube::Quantity::parse("250m")).to_string() == "750m");
  const StartupBoost* other = scaler.boost_for("sidecar");
  REQUIRE(other != nullptr);
  CHECK(other->factor == 2);
  CHECK(other->duration_seconds == 60);
  CHECK(other->boosted(*vscaler::kube::Quantity::parse("250m")).to_string() == "500m");
  CHECK(scaler.boost_for("quiet") == nullptr);  // mode "Off" is never boosted
  CHECK_FALSE(scaler_from(R"({"deploymentName": "web"})").boosts());
}

TEST_CASE("invalid startupBoost values are refused naming the field") {
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"type": "Factor",
      "factor": 0}}})")
            .find("spec.startupBoost.cpu.factor: 0 is not an integer of at least 1") !=
        std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"factor": 1.5}}})")
            .find("spec.startupBoost.cpu.factor: 1.5") != std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"factor": 2,
      "durationSeconds": -1}}})")
            .find("spec.startupBoost.cpu.durationSeconds: -1 is not a whole number") !=
        std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"type": "Quantity",
      "quantity": "lots"}}})")
            .find("spec.startupBoost.cpu.quantity:") != std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"type": "Quantity",
      "quantity": "0"}}})")
            .find("must be more than zero") != std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"factor": 2,
      "quantity": "1"}}})")
            .find("spec.startupBoost.cpu: set factor (type: Factor) or quantity (type: "
                  "Quantity), not both") != std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"type": "Percent",
      "factor": 2}}})")
            .find("spec.startupBoost.cpu.type: \"Percent\" is not one of Factor, Quantity") !=
        std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"memory": {"factor": 2}}})")
            .find("spec.startupBoost.memory: only cpu is boosted") != std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "containers": [{"name": "app",
      "startupBoost": {"cpu": {"factor": 0}}}]})")
            .find("spec.containers[0].startupBoost.cpu.factor") != std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "containers": [{"name": "app", "mode": "Off",
      "startupBoost": {"cpu": {"factor": 2}}}]})")
            .find("spec.containers[0].mode: an entry with mode \"Off\"") != std::string::npos);
  CHECK(errors_of(R"({"deploymentName": "web", "startupBoost": {"cpu": {"type": "Factor",
      "factor": 3, "durationSeconds": 30}}})")
            .empty());
}

TEST_CASE("the boost raises the request and the limit in proportion; QoS classes are kept") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "startupBoost": {"cpu": {"factor": 2, "durationSeconds": 30}}})");
  // Burstable (limit 2x the request), Guaranteed (equal), no limit, and no cpu request at all.
  json object = pod(R"([
      {"name": "burst", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                      "limits": {"cpu": "500m"}}},
      {"name": "guaranteed", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                           "limits": {"cpu": "1", "memory": "1Gi"}}},
      {"name": "open", "resources": {"requests": {"cpu": "100m"}}},
      {"name": "besteffort"}])");
  ResourcePlan plan = unchanged_plan(scaler, object);
  REQUIRE_FALSE(plan.changed());
  BoostOutcome outcome = apply_startup_boost(scaler, object, plan);
  REQUIRE(outcome.record);
  CHECK(outcome.record->duration_seconds == 30);
  REQUIRE(outcome.record->containers.size() == 3);
  CHECK(cpu(plan.containers[0].merged, "requests") == "500m");
  CHECK(cpu(plan.containers[0].merged, "limits") == "1");
  CHECK(plan.containers[0].merged["requests"]["memory"] == "64Mi");  // memory untouched
  CHECK(cpu(plan.containers[1].merged, "requests") == "2");
  CHECK(cpu(plan.containers[1].merged, "limits") == "2");  // still Guaranteed
  CHECK(cpu(plan.containers[2].merged, "requests") == "200m");
  CHECK_FALSE(plan.containers[2].merged.contains("limits"));
  CHECK_FALSE(plan.containers[3].changed);  // BestEffort stays BestEffort
  CHECK(outcome.notes ==
        std::vector<std::string>{"container besteffort: not boosted, it has no cpu request"});
  CHECK(plan.invalid.empty());
  // The patch writes the boosted values; the resize back restores the base exactly.
  json patch = admission_json_patch(plan);
  CHECK(patch.size() == 3);
  json back = unboost_patch(outcome.record->containers);
  CHECK(back["spec"]["containers"][0] ==
        json::parse(R"({"name": "burst", "resources": {"requests": {"cpu": "250m"},
                        "limits": {"cpu": "500m"}}})"));
  CHECK(back["spec"]["containers"][2] ==
        json::parse(R"({"name": "open", "resources": {"requests": {"cpu": "100m"}}})"));
}

TEST_CASE("the boost starts from the value the plan gives the container (its base)") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "updateMode": "InPlace",
      "startupBoost": {"cpu": {"type": "Quantity", "quantity": "1"}},
      "containers": [{"name": "app", "requests": {"cpu": "300m"}}, {"name": "log"}]})");
  json object = pod(R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}},
                        {"name": "log", "resources": {"requests": {"cpu": "50m"}}}])");
  ResourcePlan plan = plan_resources(scaler, object);  // fixed values: 300m for app
  BoostOutcome outcome = apply_startup_boost(scaler, object, plan);
  REQUIRE(outcome.record);
  CHECK(cpu(plan.containers[0].merged, "requests") == "1300m");
  CHECK(outcome.record->containers[0].base.request->to_string() == "300m");
  CHECK(cpu(plan.containers[1].merged, "requests") == "1050m");
}

TEST_CASE("an unboosted container of the same pod is untouched") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "startupBoost": {"cpu": {"factor": 3}}}, {"name": "*"}]})");
  json object = pod(R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}},
                        {"name": "proxy", "resources": {"requests": {"cpu": "100m"}}}])");
  ResourcePlan plan = unchanged_plan(scaler, object);
  BoostOutcome outcome = apply_startup_boost(scaler, object, plan);
  REQUIRE(outcome.record);
  CHECK(outcome.record->containers.size() == 1);
  CHECK(cpu(plan.containers[0].merged, "requests") == "300m");
  CHECK_FALSE(plan.containers[1].changed);
}

TEST_CASE("RequestsOnly: the limit stays and the request stops 1m below it") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "startupBoost": {"cpu": {"factor": 4}},
      "containers": [{"name": "app", "controlledValues": "RequestsOnly"},
                     {"name": "full", "controlledValues": "RequestsOnly"}]})");
  json object = pod(R"([{"name": "app", "resources": {"requests": {"cpu": "200m"},
                                                      "limits": {"cpu": "500m"}}},
                        {"name": "full", "resources": {"requests": {"cpu": "500m"},
                                                       "limits": {"cpu": "500m"}}}])");
  ResourcePlan plan = unchanged_plan(scaler, object);
  BoostOutcome outcome = apply_startup_boost(scaler, object, plan);
  REQUIRE(outcome.record);
  CHECK(cpu(plan.containers[0].merged, "requests") == "499m");
  CHECK(cpu(plan.containers[0].merged, "limits") == "500m");
  // At its limit already: boosting would make it Burstable (the resize back would be refused).
  CHECK_FALSE(plan.containers[1].changed);
  REQUIRE(outcome.notes.size() == 2);
  CHECK(outcome.notes[1].find("container full: not boosted, no room") != std::string::npos);
}

TEST_CASE("pod-level resources and the quota's room cap the boost") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "startupBoost": {"cpu": {"factor": 3}}})");
  json object = pod(R"([{"name": "a", "resources": {"requests": {"cpu": "200m"},
                                                    "limits": {"cpu": "400m"}}},
                        {"name": "b", "resources": {"requests": {"cpu": "200m"}}}])",
                    R"({"requests": {"cpu": "700m"}, "limits": {"cpu": "1"}})");
  ResourcePlan plan = unchanged_plan(scaler, object);
  BoostOutcome outcome = apply_startup_boost(scaler, object, plan);
  REQUIRE(outcome.record);
  // 300m of pod-level request left: a takes it all, limited by the pod limit 1 (a's limit
  // 2x its request: at most 500m request), then b finds no room.
  CHECK(cpu(plan.containers[0].merged, "requests") == "500m");
  CHECK(cpu(plan.containers[0].merged, "limits") == "1");
  CHECK_FALSE(plan.containers[1].changed);

  json plain = pod(R"([{"name": "a", "resources": {"requests": {"cpu": "200m"},
                                                   "limits": {"cpu": "200m"}}}])");
  ResourcePlan quota_plan = unchanged_plan(scaler, plain);
  BoostRoom room;
  room.requests_cpu = *vscaler::kube::Quantity::parse("1");
  room.limits_cpu = *vscaler::kube::Quantity::parse("100m");
  BoostOutcome capped = apply_startup_boost(scaler, plain, quota_plan, room);
  REQUIRE(capped.record);
  CHECK(cpu(quota_plan.containers[0].merged, "requests") == "300m");
  CHECK(cpu(quota_plan.containers[0].merged, "limits") == "300m");
  CHECK(
      capped.notes[0].find("capped by the namespace's ResourceQuota or LimitRange (limits.cpu)") !=
      std::string::npos);
}

TEST_CASE("the annotation round-trips; an unreadable one still marks the pod as boosted") {
  BoostRecord record;
  record.duration_seconds = 45;
  BoostedContainer container;
  container.name = "app";
  container.base = {*vscaler::kube::Quantity::parse("250m"),
                    *vscaler::kube::Quantity::parse("500m")};
  container.boosted = {*vscaler::kube::Quantity::parse("500m"),
                       *vscaler::kube::Quantity::parse("1")};
  record.containers.push_back(container);
  json object = pod(R"([{"name": "app"}])");
  CHECK_FALSE(has_boost_annotation(object));
  object["metadata"]["annotations"][std::string(kStartupBoostAnnotation)] = record.to_json().dump();
  CHECK(has_boost_annotation(object));
  auto read = boost_record_of(object);
  REQUIRE(read);
  CHECK(*read == record);
  object["metadata"]["annotations"][std::string(kStartupBoostAnnotation)] = "{not json";
  CHECK(has_boost_annotation(object));
  CHECK_FALSE(boost_record_of(object));
}

TEST_CASE(
    "property: a boost never lowers a request, never breaks requests <= limits, and "
    "keeps request == limit where it was") {
  std::mt19937 random(7);
  for (int round = 0; round < 500; ++round) {
    const int factor = 1 + static_cast<int>(random() % 5);
    const bool requests_only = random() % 3 == 0;
    std::string spec = R"({"deploymentName": "web", "startupBoost": {"cpu": {"factor": )" +
                       std::to_string(factor) + "}}" +
                       (requests_only ? R"(, "containers": [{"name": "*",
                           "controlledValues": "RequestsOnly"}])"
                                      : "") +
                       "}";
    auto scaler = scaler_from(spec);
    const int request = 1 + static_cast<int>(random() % 2000);
    const int limit = random() % 3 == 0 ? request : request + static_cast<int>(random() % 3000);
    json object =
        pod(R"([{"name": "app", "resources": {"requests": {"cpu": ")" + std::to_string(request) +
            R"(m"}, "limits": {"cpu": ")" + std::to_string(limit) + R"(m"}}}])");
    ResourcePlan plan = unchanged_plan(scaler, object);
    apply_startup_boost(scaler, object, plan);
    CAPTURE(spec);
    CAPTURE(request);
    CAPTURE(limit);
    const CpuValues after = cpu_values_of(plan.containers[0].merged);
    REQUIRE(after.request);
    REQUIRE(after.limit);
    CHECK(after.request->nanos() >= vscaler::kube::Int128(request) * 1'000'000);
    CHECK(*after.request <= *after.limit);
    if (request == limit) CHECK(*after.request == *after.limit);
    if (request < limit) CHECK(*after.request < *after.limit);
  }
}
