// The metrics source's pure parts: the workload parse (uid, selector, template requests), the
// supported kinds, and which API answers count as "no metrics API" (NoMetrics) rather than a
// failure.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "kube/errors.h"
#include "recommender/metrics_source.h"
#include "recommender/workload.h"

using namespace vscaler::recommender;
using nlohmann::json;

namespace {

json deployment() {
  return json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
    "spec": {"selector": {"matchLabels": {"app": "web"},
                          "matchExpressions": [{"key": "track", "operator": "NotIn",
                                                "values": ["canary"]}]},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [
                            {"name": "app", "resources": {"requests": {"cpu": "100m",
                                                                       "memory": "128Mi"},
                                                          "limits": {"memory": "1Gi"}}},
                            {"name": "sidecar"}]}}}})");
}

}  // namespace

TEST_CASE("parse_workload reads uid, the selector query and the template's resources") {
  auto info = parse_workload(deployment(), "Deployment");
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error()));
  CHECK(info->ref.kind == "Deployment");
  CHECK(info->ref.name == "web");
  CHECK(info->ref.uid == "u-1");
  CHECK(info->selector == "app=web,track notin (canary)");
  REQUIRE(info->template_containers.size() == 2);
  CHECK(info->template_containers[0].name == "app");
  CHECK(info->template_containers[0].requests.at("cpu").to_double() == doctest::Approx(0.1));
  CHECK(info->template_containers[0].limits.at("memory").to_double() == 1024.0 * 1024 * 1024);
  CHECK(info->template_containers[1].requests.empty());
}

TEST_CASE("parse_workload names the field that is wrong") {
  auto no_uid = deployment();
  no_uid["metadata"].erase("uid");
  auto a = parse_workload(no_uid, "Deployment");
  REQUIRE_FALSE(a.ok());
  CHECK(a.error() == "metadata.uid: is required");

  auto empty_selector = deployment();
  empty_selector["spec"]["selector"] = json::object();
  auto b = parse_workload(empty_selector, "Deployment");
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().rfind("spec.selector: ", 0) == 0);

  auto bad_quantity = deployment();
  bad_quantity["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "x";
  auto c = parse_workload(bad_quantity, "Deployment");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().rfind("spec.template.spec.containers[0].resources.requests.cpu: ", 0) == 0);
}

TEST_CASE("workload_resource knows the apps/v1 workload kinds only") {
  REQUIRE(workload_resource("Deployment") != nullptr);
  CHECK(workload_resource("Deployment")->path("ns", "w") ==
        "/apis/apps/v1/namespaces/ns/deployments/w");
  CHECK(workload_resource("StatefulSet")->path("ns", "w") ==
        "/apis/apps/v1/namespaces/ns/statefulsets/w");
  CHECK(workload_resource("DaemonSet")->path("ns", "w") ==
        "/apis/apps/v1/namespaces/ns/daemonsets/w");
  CHECK(workload_resource("ReplicaSet") == nullptr);
  CHECK(workload_resource("deployment") == nullptr);
}

TEST_CASE("404 and 503 from the metrics API mean NoMetrics; other answers are failures") {
  using vscaler::kube::error_from_response;
  CHECK(is_metrics_unavailable(error_from_response(404, "404 page not found")));
  CHECK(is_metrics_unavailable(error_from_response(
      503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable",)"
           R"("message":"the server is currently unable to handle the request"})")));
  CHECK_FALSE(is_metrics_unavailable(error_from_response(403, "forbidden")));
  CHECK_FALSE(is_metrics_unavailable(error_from_response(500, "boom")));
  CHECK_FALSE(is_metrics_unavailable(
      vscaler::kube::make_error(vscaler::kube::ErrorKind::kTransport, "connection refused")));
  CHECK(kPodMetrics.path("shop") == "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods");
  SourceError error{SourceErrorKind::kMetricsUnavailable, "list pods.metrics.k8s.io in shop: x",
                    std::nullopt};
  CHECK(error.to_string() == "MetricsUnavailable: list pods.metrics.k8s.io in shop: x");
}

namespace {
// A pod of the namespace-wide lists, with `labels`, controlled by ReplicaSet `rs`.
PodInfo labelled_pod(const std::string& name, Labels labels, const std::string& rs) {
  PodInfo pod;
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.labels = std::move(labels);
  pod.controller = ControllerRef{"ReplicaSet", rs, "uid-" + rs};
  return pod;
}
}  // namespace

TEST_CASE("a pass's indexed lists select exactly the pods a scan of every pod would") {
  // Property: for random pods and selectors, IndexedLists::select (a label bucket, then the
  // selector) equals matching every pod (what the API server's labelSelector does).
  std::mt19937 random(20261204);
  const std::vector<std::string> keys = {"app", "tier", "track"};
  const std::vector<std::string> values = {"a", "b", "c", "d"};
  auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(random)];
  };
  for (int round = 0; round < 200; ++round) {
    WorkloadLists lists;
    for (int i = 0; i < 40; ++i) {
      Labels labels;
      for (const auto& key : keys) {
        if (random() % 3 != 0) labels[key] = pick(values);
      }
      lists.pods.push_back(labelled_pod("p" + std::to_string(i), labels, "rs"));
    }
    IndexedLists indexed(lists);
    LabelSelector selector;
    const int requirements = 1 + static_cast<int>(random() % 3);
    for (int r = 0; r < requirements; ++r) {
      LabelSelector::Requirement requirement;
      requirement.key = pick(keys);
      requirement.op = static_cast<LabelSelector::Requirement::Op>(random() % 5);
      if (requirement.op == LabelSelector::Requirement::Op::kEquals) {
        requirement.values = {pick(values)};
      } else if (requirement.op == LabelSelector::Requirement::Op::kIn ||
                 requirement.op == LabelSelector::Requirement::Op::kNotIn) {
        requirement.values = {pick(values)};
        if (random() % 2) requirement.values.push_back(pick(values));
        std::sort(requirement.values.begin(), requirement.values.end());
      }
      selector.requirements.push_back(requirement);
    }
    std::vector<std::string> expected;
    for (const auto& pod : lists.pods) {
      if (matches(selector, pod.labels)) expected.push_back(pod.name);
    }
    std::vector<std::string> got;
    for (const auto& pod : indexed.select(selector)) got.push_back(pod.name);
    std::sort(expected.begin(), expected.end());
    std::sort(got.begin(), got.end());
    CHECK_MESSAGE(got == expected, "round " << round << ": " << to_query(selector));
  }
}

TEST_CASE("a pass's indexed lists find ReplicaSets by uid and PodMetrics by pod name") {
  WorkloadLists lists;
  lists.pods.push_back(labelled_pod("web-1", {{"app", "web"}}, "web-rs"));
  lists.replica_sets.push_back({"web-rs", "uid-web-rs", ControllerRef{"Deployment", "web", "d1"}});
  lists.metrics.push_back({"shop", "web-1", TimePoint{}, Duration{0}, {}});
  IndexedLists indexed(lists);
  REQUIRE(indexed.replica_set("uid-web-rs") != nullptr);
  CHECK(indexed.replica_set("uid-web-rs")->name == "web-rs");
  CHECK(indexed.replica_set("uid-other") == nullptr);
  REQUIRE(indexed.metrics_of("web-1") != nullptr);
  CHECK(indexed.metrics_of("web-2") == nullptr);
  // The owner chain through the index: the pod is web's, not another Deployment's.
  auto lookup = [&indexed](const std::string& uid) { return indexed.replica_set(uid); };
  CHECK(owned_pods_by_lookup(lists.pods, lookup, {"Deployment", "web", "d1"}).size() == 1);
  CHECK(owned_pods_by_lookup(lists.pods, lookup, {"Deployment", "web", "d2"}).empty());
}

TEST_CASE("a workload list's projection keeps every field parse_workload reads") {
  auto render = [](const vscaler::kube::Result<WorkloadInfo>& info) {
    if (!info.ok()) return "error: " + info.error();
    std::string out =
        info->ref.kind + " " + info->ref.name + " " + info->ref.uid + " " + info->selector;
    for (const auto& c : info->template_containers) {
      out += " | " + c.name;
      for (const auto& [name, quantity] : c.requests)
        out += " " + name + "=" + quantity.to_string();
      out += " /";
      for (const auto& [name, quantity] : c.limits) out += " " + name + "=" + quantity.to_string();
    }
    return out;
  };
  auto slim = [](const json& object) {
    vscaler::kube::ProjectingParser parser;
    const std::string text = object.dump();
    auto parsed = parser.parse(text, 0, workload_projection());
    REQUIRE(parsed.ok());
    return std::move(parsed).value();
  };
  std::vector<json> objects(5, deployment());
  objects[1]["metadata"].erase("uid");
  objects[2]["spec"]["selector"] = json::object();
  objects[3]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "x";
  objects[4]["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  objects[4]["status"] = {{"replicas", 3}};
  for (const auto& object : objects) {
    CHECK(render(parse_workload(slim(object), "Deployment")) ==
          render(parse_workload(object, "Deployment")));
  }
  CHECK_FALSE(slim(objects[4]).contains("status"));
  CHECK_FALSE(slim(objects[4])["metadata"].contains("managedFields"));
}
