// plan_resources and the writes built from it: merge by value, never remove a key, the validity
// check counting keys the scaler does not set, and admission patches that always apply.
#include "api/resources.h"

#include <doctest/doctest.h>

#include <random>

using nlohmann::json;
using namespace vscaler::api;

namespace {
Scaler scaler_from(const char* spec) {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec", json::parse(spec)}};
  auto parsed = parse_scaler(object);
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error()));
  return *parsed;
}
json deployment(const char* containers) {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}, {"generation", 1}}}};
  json& pod_spec = object["spec"]["template"]["spec"];
  pod_spec["initContainers"] = json::parse(R"([{"name": "init", "image": "busybox"}])");
  pod_spec["containers"] = json::parse(containers);
  return object;
}
}  // namespace

TEST_CASE("declared keys are set; keys the scaler does not declare are kept") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  auto plan = plan_resources(
      scaler, deployment(R"([{"name": "app", "resources": {"requests": {"cpu": "1", "memory":
      "1Gi"}, "limits": {"memory": "2Gi"}, "claims": [{"name": "gpu"}]}}])"));
  REQUIRE(plan.containers.size() == 1);
  CHECK(plan.changed());
  CHECK(plan.invalid.empty());
  CHECK(plan.containers[0].merged == json::parse(R"({"requests": {"cpu": "250m", "memory":
      "1Gi"}, "limits": {"memory": "2Gi"}, "claims": [{"name": "gpu"}]})"));
  CHECK(plan.containers[0].overridden == std::vector<std::string>{"requests.cpu=1"});
}

TEST_CASE("values equal by value are no change and keep their stored text") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [{"name": "app",
      "requests": {"cpu": 1, "memory": "1024Mi"}}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app", "resources": {"requests":
      {"cpu": "1000m", "memory": "1Gi"}}}])"));
  CHECK_FALSE(plan.changed());
  CHECK(plan.containers[0].merged["requests"]["cpu"] == "1000m");
  CHECK(admission_json_patch(plan).empty());
}

TEST_CASE("the wildcard matches every container not named; init containers are never matched") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [
      {"name": "app", "requests": {"cpu": "1"}}, {"name": "*", "requests": {"cpu": "100m"}}]})");
  auto plan = plan_resources(
      scaler, deployment(R"([{"name": "app"}, {"name": "sidecar"}, {"name": "proxy"}])"));
  REQUIRE(plan.containers.size() == 3);
  CHECK(plan.containers[0].merged["requests"]["cpu"] == "1");
  CHECK(plan.containers[1].merged["requests"]["cpu"] == "100m");
  CHECK(plan.containers[2].merged["requests"]["cpu"] == "100m");
  for (const auto& item : plan.containers) CHECK(item.name != "init");
}

TEST_CASE("a named container missing from the Deployment is reported; the others still apply") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [
      {"name": "app", "requests": {"cpu": "1"}}, {"name": "worker", "requests": {"cpu": "2"}}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app"}])"));
  CHECK(plan.missing == std::vector<std::string>{"worker"});
  CHECK(plan.changed());
}

TEST_CASE(
    "an \"Off\" entry is never missing: a sidecar injected into pods is not in the template") {
  // DESIGN's example: istio-proxy named only to be left alone; the scaler is Applied.
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [
      {"name": "app", "requests": {"cpu": "1"}}, {"name": "istio-proxy", "mode": "Off"}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app"}])"));
  CHECK(plan.missing.empty());
  REQUIRE(plan.containers.size() == 1);
  CHECK(plan.containers[0].name == "app");
  // Beside "*" a misspelt one is said: the container it meant is scaled as "*" says.
  scaler = scaler_from(R"({"deploymentName": "web", "containers": [
      {"name": "*", "requests": {"cpu": "1"}}, {"name": "istio-prxy", "mode": "Off"}]})");
  plan = plan_resources(scaler, deployment(R"([{"name": "app"}, {"name": "istio-proxy"}])"));
  CHECK(plan.missing == std::vector<std::string>{"istio-prxy"});
}

TEST_CASE("a request above the Deployment's own limit is invalid, naming container and resource") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "2"}}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app", "resources": {"limits":
      {"cpu": "1500m"}}}])"));
  CHECK(plan.invalid == "container app: requests.cpu 2 would exceed limits.cpu 1500m");
}

TEST_CASE("a declared limit below the Deployment's own request is invalid too") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "limits": {"memory": "256Mi"}}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app", "resources": {"requests":
      {"memory": "1Gi"}}}])"));
  CHECK(plan.invalid == "container app: requests.memory 1Gi would exceed limits.memory 256Mi");
}

TEST_CASE("an invalid plan names the values as the merged object holds them") {
  // The stored request equals the declared one by value, so it keeps its own text.
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"memory": "2Gi"}}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app", "resources": {"requests":
      {"memory": "2147483648"}, "limits": {"memory": "1Gi"}}}])"));
  CHECK(plan.invalid == "container app: requests.memory 2147483648 would exceed limits.memory 1Gi");
  auto number = plan_resources(scaler, deployment(R"([{"name": "app", "resources": {"requests":
      {"memory": 2147483648}, "limits": {"memory": "1Gi"}}}])"));
  CHECK(number.invalid ==
        "container app: requests.memory 2147483648 would exceed limits.memory 1Gi");
}

TEST_CASE("a changed container's patches carry every declared key, also those it already has") {
  // limits.cpu is stored with the declared text already; requests.cpu differs.
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [
      {"name": "app", "requests": {"cpu": "250m"}, "limits": {"cpu": "1500m"}}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app", "resources": {"requests":
      {"cpu": "100m"}, "limits": {"cpu": "1500m"}}}])"));
  REQUIRE(plan.containers.size() == 1);
  CHECK(plan.containers[0].changed);
  CHECK(plan.containers[0].overridden == std::vector<std::string>{"requests.cpu=100m"});
  CHECK(strategic_merge_patch(scaler, plan) == json::parse(R"({"spec": {"template": {"spec":
      {"containers": [{"name": "app", "resources": {"requests": {"cpu": "250m"}, "limits":
      {"cpu": "1500m"}}}]}}}})"));
  CHECK(resources_json(plan.containers[0].declared) ==
        json::parse(R"({"requests": {"cpu": "250m"}, "limits": {"cpu": "1500m"}})"));
}

TEST_CASE("the strategic merge patch carries only the declared keys of changed containers") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [
      {"name": "app", "requests": {"cpu": "250m"}, "limits": {"memory": "512Mi"}},
      {"name": "*", "requests": {"cpu": "100m"}}]})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "app", "resources": {"requests":
      {"memory": "1Gi"}}}, {"name": "sidecar", "resources": {"requests": {"cpu": "0.1"}}}])"));
  CHECK(strategic_merge_patch(scaler, plan) == json::parse(R"({"spec": {"template": {"spec":
      {"containers": [{"name": "app", "resources": {"requests": {"cpu": "250m"}, "limits":
      {"memory": "512Mi"}}}]}}}})"));
}

TEST_CASE("status containers show merged values when applied and current ones otherwise") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  json object = deployment(R"([{"name": "side"}, {"name": "app", "resources": {"requests":
      {"cpu": "1", "memory": "64Mi"}}}])");
  auto plan = plan_resources(scaler, object);
  CHECK(status_containers(plan) == json::parse(R"([{"name": "app", "requests":
      {"cpu": "250m", "memory": "64Mi"}}])"));
  CHECK(status_containers_now(plan, object) == json::parse(R"([{"name": "app", "requests":
      {"cpu": "1", "memory": "64Mi"}}])"));
  // A matched container without resources has none now.
  json bare = deployment(R"([{"name": "app"}])");
  CHECK(status_containers_now(plan_resources(scaler, bare), bare) ==
        json::parse(R"([{"name": "app"}])"));
}

TEST_CASE("property: every admission patch applies to its object and yields the planned values") {
  std::mt19937 random(20261129);
  const std::vector<std::string> cpu = {"100m", "250m", "0.5", "1", "1500m", "2"};
  const std::vector<std::string> memory = {"64Mi", "128Mi", "0.25Gi", "512Mi", "1Gi"};
  auto pick = [&](const std::vector<std::string>& values) {
    return values[random() % values.size()];
  };
  int applied = 0;
  for (int round = 0; round < 2000; ++round) {
    json containers = json::array();
    int count = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < count; ++i) {
      json container = {{"name", "c" + std::to_string(i)}, {"image", "pause"}};
      if (random() % 3 != 0) {
        json resources = json::object();
        if (random() % 2) resources["requests"]["cpu"] = pick(cpu);
        if (random() % 2) resources["limits"]["cpu"] = pick(cpu);
        if (random() % 2) resources["requests"]["memory"] = pick(memory);
        if (random() % 2) resources["limits"]["memory"] = pick(memory);
        container["resources"] = resources;
      }
      containers.push_back(container);
    }
    json spec = {{"deploymentName", "web"}, {"containers", json::array()}};
    json entry = {{"name", random() % 2 ? "*" : "c0"}};
    if (random() % 2) entry["requests"]["cpu"] = pick(cpu);
    if (random() % 2) entry["limits"]["memory"] = pick(memory);
    spec["containers"].push_back(entry);
    auto scaler = scaler_from(spec.dump().c_str());
    json object = deployment(containers.dump().c_str());
    auto plan = plan_resources(scaler, object);
    if (!plan.invalid.empty()) continue;
    json patched = object.patch(admission_json_patch(plan));
    ++applied;
    // The patched object carries every declared key, and planning again finds nothing to do.
    auto again = plan_resources(scaler, patched);
    CHECK_FALSE(again.changed());
    CHECK(again.invalid.empty());
    CHECK(patched["spec"]["template"]["spec"]["initContainers"] ==
          object["spec"]["template"]["spec"]["initContainers"]);
  }
  CHECK(applied > 500);
}

TEST_CASE(
    "desired values replace a container's declared ones; a recommended container without "
    "any is left as it is; mode Off containers are not matched") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [{"name": "app"},
      {"name": "fixed", "requests": {"cpu": "1"}}, {"name": "proxy", "mode": "Off"}]})");
  json object = deployment(R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}},
      {"name": "fixed"}, {"name": "proxy"}])");
  auto plan = plan_resources(scaler, object);
  REQUIRE(plan.containers.size() == 2);
  CHECK_FALSE(plan.containers[0].changed);
  CHECK(plan.containers[1].changed);
  CHECK(plan.missing.empty());
  DesiredResources desired;
  desired["app"].requests.emplace("cpu", *vscaler::kube::Quantity::parse("300m"));
  plan = plan_resources(scaler, object, &desired);
  CHECK(plan.containers[0].merged["requests"]["cpu"] == "300m");
  CHECK(strategic_merge_patch(scaler, plan) == json::parse(R"({"spec": {"template": {"spec":
      {"containers": [{"name": "app", "resources": {"requests": {"cpu": "300m"}}},
      {"name": "fixed", "resources": {"requests": {"cpu": "1"}}}]}}}})"));
}

TEST_CASE("no spec.containers: every container is matched as recommended") {
  auto scaler = scaler_from(R"({"deploymentName": "web"})");
  auto plan = plan_resources(scaler, deployment(R"([{"name": "a"}, {"name": "b"}])"));
  CHECK(plan.containers.size() == 2);
  CHECK_FALSE(plan.changed());
}

TEST_CASE("controlled_values_of takes the controlled keys as the template has them") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [
      {"name": "app", "controlledValues": "RequestsOnly", "controlledResources": ["cpu"]},
      {"name": "fixed", "limits": {"memory": "1Gi"}}]})");
  auto values = controlled_values_of(
      scaler, deployment(R"([{"name": "app", "resources": {"requests": {"cpu": "1",
      "memory": "1Gi"}, "limits": {"cpu": "2"}}}, {"name": "fixed", "resources": {"limits":
      {"memory": "512Mi", "cpu": "1"}}}])"));
  REQUIRE(values.size() == 2);
  CHECK(values["app"].requests.size() == 1);
  CHECK(values["app"].requests.at("cpu").to_string() == "1");
  CHECK(values["app"].limits.empty());
  CHECK(values["fixed"].limits.size() == 1);
  CHECK(values["fixed"].limits.at("memory").to_string() == "512Mi");
}

TEST_CASE("templates equal once the controlled cpu/memory keys are ignored, and only then") {
  auto scaler = scaler_from(R"({"deploymentName": "web", "containers": [{"name": "app"},
      {"name": "proxy", "mode": "Off"}]})");
  json before = deployment(R"([{"name": "app", "image": "a:1", "resources": {"requests":
      {"cpu": "1"}, "claims": [{"name": "gpu"}]}}, {"name": "proxy", "resources": {"requests":
      {"cpu": "5m"}}}])");
  json reset = before;
  reset["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m";
  CHECK(templates_equal_ignoring_controlled(scaler, before, reset));
  json removed = before;
  removed["spec"]["template"]["spec"]["containers"][0]["resources"].erase("requests");
  CHECK(templates_equal_ignoring_controlled(scaler, before, removed));
  json image = reset;
  image["spec"]["template"]["spec"]["containers"][0]["image"] = "a:2";
  CHECK_FALSE(templates_equal_ignoring_controlled(scaler, before, image));
  json proxy = before;  // an Off container's resources are the user's: a real change
  proxy["spec"]["template"]["spec"]["containers"][1]["resources"]["requests"]["cpu"] = "6m";
  CHECK_FALSE(templates_equal_ignoring_controlled(scaler, before, proxy));
  json label = before;
  label["spec"]["template"]["metadata"]["labels"]["x"] = "y";
  CHECK_FALSE(templates_equal_ignoring_controlled(scaler, before, label));
  json claims = before;
  claims["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] = json::array();
  CHECK_FALSE(templates_equal_ignoring_controlled(scaler, before, claims));
}

TEST_CASE("a Pod is planned on its own spec and patched at /spec/containers") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  json pod = {{"kind", "Pod"},
              {"spec", {{"containers", json::parse(R"([{"name": "side"}, {"name": "app"}])")}}}};
  auto plan = plan_resources(scaler, pod);
  CHECK(plan.spec_pointer == "/spec");
  REQUIRE(plan.containers.size() == 1);
  CHECK(plan.containers[0].index == 1);
  json patch = admission_json_patch(plan);
  REQUIRE(patch.size() == 1);
  CHECK(patch[0]["path"] == "/spec/containers/1/resources");
  CHECK(pod.patch(patch)["spec"]["containers"][1]["resources"]["requests"]["cpu"] == "250m");
  CHECK(plan_resources(scaler, deployment(R"([{"name": "app"}])")).spec_pointer ==
        "/spec/template/spec");
  CHECK(pod_containers_of(json::array()).empty());
  CHECK(pod_spec_of(json{{"spec", {{"template", 3}}}}) == nullptr);
}

TEST_CASE("pod-level resources: raised where the merged containers outgrow them") {
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"memory": "300Mi"},
                      "limits": {"memory": "600Mi"}}]})");
  auto with_pod_level = [](const char* resources) {
    json object = deployment(R"([{"name": "app"}, {"name": "other", "resources":
        {"requests": {"memory": "100Mi"}}}])");
    object["spec"]["template"]["spec"]["resources"] = json::parse(resources);
    return object;
  };
  // 300Mi + 100Mi fits 512Mi, and 600Mi fits the 1Gi limit: nothing to raise.
  auto plan = plan_resources(
      scaler, with_pod_level(R"({"requests": {"memory": "512Mi"}, "limits": {"memory": "1Gi"}})"));
  CHECK(plan.invalid.empty());
  CHECK_FALSE(plan.pod_resources_changed);
  CHECK(strategic_merge_patch(scaler, plan)["spec"]["template"]["spec"].count("resources") == 0);
  // The request must grow to the containers' total.
  json object = with_pod_level(R"({"requests": {"memory": "350Mi"}, "limits": {"memory": "1Gi"}})");
  plan = plan_resources(scaler, object);
  CHECK(plan.invalid.empty());
  REQUIRE(plan.pod_resources_changed);
  CHECK(plan.pod_resources ==
        json::parse(R"({"requests": {"memory": "400Mi"}, "limits": {"memory": "1Gi"}})"));
  CHECK(plan.pod_resources_note == "requests.memory 350Mi was below the containers' total 400Mi");
  // The template patch raises it in the same write (strategic merge: the maps merge).
  json merge = strategic_merge_patch(scaler, plan);
  CHECK(merge["spec"]["template"]["spec"]["resources"] == plan.pod_resources);
  CHECK(merge["spec"]["template"]["spec"]["containers"][0]["name"] == "app");
  // The admission patch raises it first, and the result is what the API server accepts.
  json patch = admission_json_patch(plan);
  REQUIRE(patch.size() == 2);
  CHECK(patch[0]["path"] == "/spec/template/spec/resources");
  json admitted = object.patch(patch);
  CHECK(admitted["spec"]["template"]["spec"]["resources"]["requests"]["memory"] == "400Mi");
  CHECK(admitted["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] ==
        "600Mi");
  // Taken without copies: the same patch; the plan keeps its names and overrides, not the values.
  ResourcePlan taken = plan;
  CHECK(take_admission_json_patch(taken) == patch);
  CHECK(taken.pod_resources.is_null());
  CHECK(taken.containers[0].merged.is_null());
  CHECK(taken.containers[0].name == "app");
  CHECK(taken.containers[0].changed);
  // The limit must grow to the largest container limit.
  plan = plan_resources(scaler, with_pod_level(R"({"limits": {"memory": "512Mi"}})"));
  CHECK(plan.pod_resources == json::parse(R"({"limits": {"memory": "600Mi"}})"));
  CHECK(plan.pod_resources_note == "limits.memory 512Mi was below container app's limit 600Mi");
  // Pod-level cpu only: memory is not checked against it.
  plan = plan_resources(scaler, with_pod_level(R"({"requests": {"cpu": "1"}})"));
  CHECK_FALSE(plan.pod_resources_changed);
}

TEST_CASE("pod-level resources: checked on the pod as the API server defaults it at creation") {
  // A container's missing request is its limit; a missing pod-level request, once pod-level
  // limits are set, the containers' total, which the pod-level limit must hold.
  auto plan_for = [](const char* scaler_containers, const char* pod_level, const char* log) {
    json object = deployment((std::string(R"([{"name": "app", "resources":
        {"requests": {"cpu": "1"}}}, {"name": "log", "resources": )") +
                              log + "}]")
                                 .c_str());
    object["spec"]["template"]["spec"]["resources"] = json::parse(pod_level);
    return plan_resources(scaler_from((std::string(R"({"deploymentName": "web", "containers": )") +
                                       scaler_containers + "}")
                                          .c_str()),
                          object);
  };
  // Pod-level limits only: 1800m + 500m = 2300m is what the pod's request becomes, above the 2
  // limit: the limit is raised to it.
  auto plan = plan_for(R"([{"name": "app", "requests": {"cpu": "1800m"}}])",
                       R"({"limits": {"cpu": "2"}})", R"({"requests": {"cpu": "500m"}})");
  REQUIRE(plan.pod_resources_changed);
  CHECK(plan.pod_resources == json::parse(R"({"limits": {"cpu": "2300m"}})"));
  CHECK(plan.pod_resources_note == "limits.cpu 2 was below the containers' total request 2300m");
  // A container with a limit and no request counts its limit: 1200m + 500m above the pod's
  // 1500m (the request alone, 1200m, would fit).
  plan = plan_for(R"([{"name": "app", "requests": {"cpu": "1200m"}}])",
                  R"({"requests": {"cpu": "1500m"}, "limits": {"cpu": "4"}})",
                  R"({"limits": {"cpu": "500m"}})");
  REQUIRE(plan.pod_resources_changed);
  CHECK(plan.pod_resources == json::parse(R"({"requests": {"cpu": "1700m"},
      "limits": {"cpu": "4"}})"));
  // So does a container given a limit by the scaler and no request: 1 + 2.
  plan = plan_for(R"([{"name": "log", "limits": {"cpu": "2"}}])",
                  R"({"requests": {"cpu": "1500m"}, "limits": {"cpu": "4"}})",
                  R"({"limits": {"cpu": "500m"}})");
  CHECK(plan.pod_resources["requests"]["cpu"] == "3");
  // Within the limit, a missing pod-level request needs nothing.
  plan = plan_for(R"([{"name": "app", "requests": {"cpu": "1200m"}}])",
                  R"({"limits": {"cpu": "2"}})", R"({"requests": {"cpu": "500m"}})");
  CHECK_FALSE(plan.pod_resources_changed);
  // Pod-level Guaranteed (requests == limits) stays Guaranteed: both raised together.
  const char* guaranteed = R"({"requests": {"cpu": "2", "memory": "1Gi"},
                               "limits": {"cpu": "2", "memory": "1Gi"}})";
  plan = plan_for(R"([{"name": "app", "requests": {"cpu": "1"}, "limits": {"cpu": "1500m"}}])",
                  guaranteed, R"({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}})");
  CHECK_FALSE(plan.pod_resources_changed);  // 1 + 500m requests, limits 1500m and 1: fit 2
  // A container limit above the pod's: the limit is raised, and the request with it.
  plan = plan_for(R"([{"name": "app", "requests": {"cpu": "1"}, "limits": {"cpu": "3"}}])",
                  guaranteed, R"({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}})");
  REQUIRE(plan.pod_resources_changed);
  CHECK(plan.pod_resources == json::parse(R"({"requests": {"cpu": "3", "memory": "1Gi"},
      "limits": {"cpu": "3", "memory": "1Gi"}})"));
  // A running Burstable pod (as the API server defaulted it: requests 1500m, 1Gi; limits 2, 1Gi)
  // whose raise would make requests equal limits keeps a cpu limit 1m above its request: a resize
  // may not change the QoS class.
  const char* burstable = R"({"requests": {"cpu": "1500m", "memory": "1Gi"},
                              "limits": {"cpu": "2", "memory": "1Gi"}})";
  json pod = {{"metadata", {{"name", "web-1"}, {"namespace", "shop"}}},
              {"spec",
               {{"containers", json::parse(R"([{"name": "app", "resources":
                    {"requests": {"cpu": "1"}}}, {"name": "log", "resources":
                    {"requests": {"cpu": "500m"}}}])")},
                {"resources", json::parse(burstable)}}}};
  plan = plan_resources(scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "1800m"}}]})"),
                        pod);
  REQUIRE(plan.pod_resources_changed);
  CHECK(plan.pod_resources == json::parse(R"({"requests": {"cpu": "2300m", "memory": "1Gi"},
      "limits": {"cpu": "2301m", "memory": "1Gi"}})"));
  // A template's new pods may be Guaranteed: no extra 1m there.
  plan = plan_for(R"([{"name": "app", "requests": {"cpu": "1800m"}}])", burstable,
                  R"({"requests": {"cpu": "500m"}})");
  CHECK(plan.pod_resources["limits"]["cpu"] == "2300m");
}

TEST_CASE("template keys: one namespace and kind is taken out whole, and no other") {
  CHECK(template_key("shop", "Deployment/web") == "shop/Deployment/web");
  CHECK(template_prefix("shop", "Deployment") == "shop/Deployment/");
  TemplateResources templates;
  for (const char* key : {"shop/Deployment/web", "shop/Deployment/api", "shop/DaemonSet/agent",
                          "shop-2/Deployment/web", "shopX/Deployment/web"}) {
    templates[key]["app"] = json{{"requests", {{"cpu", "100m"}}}};
  }
  TemplateResources taken = extract_templates(templates, "shop", "Deployment");
  CHECK(taken.size() == 2);
  CHECK(taken.contains("shop/Deployment/web"));
  CHECK(taken.contains("shop/Deployment/api"));
  CHECK(taken.at("shop/Deployment/web").at("app") == json{{"requests", {{"cpu", "100m"}}}});
  CHECK(templates.size() == 3);
  CHECK_FALSE(templates.contains("shop/Deployment/web"));
  CHECK(templates.contains("shop-2/Deployment/web"));
  CHECK(extract_templates(templates, "shop", "Deployment").empty());
}

TEST_CASE("the QoS class a plan leaves a pod with, as the kubelet computes it") {
  auto pod = [](const char* containers, const char* init = "[]") {
    return json{
        {"metadata", {{"name", "p"}}},
        {"spec", {{"containers", json::parse(containers)}, {"initContainers", json::parse(init)}}}};
  };
  const ResourcePlan none;
  CHECK(qos_class_after(pod(R"([{"name": "app"}])"), none) == "BestEffort");
  // Zero counts as unset; other resources do not count.
  CHECK(qos_class_after(pod(R"([{"name": "app", "resources": {"requests": {"cpu": "0",
                          "ephemeral-storage": "1Gi"}}}])"),
                        none) == "BestEffort");
  CHECK(qos_class_after(pod(R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])"),
                        none) == "Burstable");
  const char* guaranteed = R"([{"name": "app", "resources": {
      "requests": {"cpu": "500m", "memory": "128Mi"},
      "limits": {"cpu": "0.5", "memory": "134217728"}}}])";
  CHECK(qos_class_after(pod(guaranteed), none) == "Guaranteed");
  // Every container counts, init containers too.
  CHECK(qos_class_after(pod(guaranteed, R"([{"name": "init"}])"), none) == "Burstable");
  // Pod-level resources decide alone.
  json pod_level = pod(R"([{"name": "app"}])");
  pod_level["spec"]["resources"] = json::parse(
      R"({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}})");
  CHECK(qos_class_after(pod_level, none) == "Guaranteed");
  // A plan setting requests on a BestEffort pod, or lowering a Guaranteed request alone.
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  json best_effort = pod(R"([{"name": "app"}])");
  CHECK(qos_class_after(best_effort, plan_resources(scaler, best_effort)) == "Burstable");
  json full = pod(guaranteed);
  CHECK(qos_class_after(full, plan_resources(scaler, full)) == "Burstable");
  auto both = scaler_from(R"({"deploymentName": "web", "containers": [{"name": "app",
      "requests": {"cpu": "250m"}, "limits": {"cpu": "250m"}}]})");
  CHECK(qos_class_after(full, plan_resources(both, full)) == "Guaranteed");
}

TEST_CASE("the QoS class counts a limit without a request as that request (API defaulting)") {
  auto pod = [](const char* containers) {
    return json{{"metadata", {{"name", "p"}}}, {"spec", {{"containers", json::parse(containers)}}}};
  };
  // Limits only, of cpu and memory: defaulted to requests equal to them.
  CHECK(qos_class_after(pod(R"([{"name": "app", "resources": {
                          "limits": {"cpu": "1", "memory": "1Gi"}}}])"),
                        ResourcePlan{}) == "Guaranteed");
  // A BestEffort container given limits alone by a plan: the pod would be Guaranteed.
  auto scaler = scaler_from(R"({"deploymentName": "web",
      "containers": [{"name": "app", "limits": {"cpu": "1", "memory": "1Gi"}}]})");
  json best_effort = pod(R"([{"name": "app"}])");
  CHECK(qos_class_after(best_effort, plan_resources(scaler, best_effort)) == "Guaranteed");
}
