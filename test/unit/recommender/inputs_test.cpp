// Parsing what the recommender reads from the API, on documents shaped like the API server's
// answers: PodMetricsList (metrics.k8s.io/v1beta1), PodList, ReplicaSetList, and a workload's
// spec.selector; the owner-chain filter and OOM kill extraction.
#include <doctest/doctest.h>

#include "kube/json_projection.h"
#include "recommender/pod_metrics.h"
#include "recommender/pods.h"
#include "recommender/selector.h"

using namespace vscaler::recommender;
using nlohmann::json;

namespace {
constexpr double kMi = 1024.0 * 1024.0;

const json kPodMetrics = json::parse(R"({
  "kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
  "metadata": {"resourceVersion": ""},
  "items": [
    {"metadata": {"name": "web-7d4b9c8f6-x2k4p", "namespace": "shop",
                  "creationTimestamp": "2026-11-29T18:00:07Z", "labels": {"app": "web"}},
     "timestamp": "2026-11-29T18:00:00Z", "window": "15.012s",
     "containers": [
       {"name": "app", "usage": {"cpu": "312456789n", "memory": "409600Ki"}},
       {"name": "istio-proxy", "usage": {"cpu": "2m", "memory": "48Mi"}}]},
    {"metadata": {"name": "web-7d4b9c8f6-q9z7m", "namespace": "shop"},
     "timestamp": "2026-11-29T18:00:03.5Z", "window": "1m0s",
     "containers": [{"name": "app", "usage": {"cpu": "0", "memory": "400Mi"}}]},
    {"metadata": {"name": "broken", "namespace": "shop"},
     "timestamp": "2026-11-29T18:00:00Z", "window": "15s",
     "containers": [{"name": "app", "usage": {"cpu": "lots", "memory": "1Mi"}}]}
  ]})");

// A Deployment's pod (via its ReplicaSet), a canary Deployment's pod with the same labels, a
// StatefulSet's pod, and a bare pod.
const json kPods = json::parse(R"({
  "kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "4711"},
  "items": [
    {"metadata": {"name": "web-7d4b9c8f6-x2k4p", "namespace": "shop", "uid": "pod-uid-1",
       "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6"},
       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "name": "web-7d4b9c8f6", "uid": "rs-uid-web", "controller": true,
         "blockOwnerDeletion": true}]},
     "spec": {"initContainers": [{"name": "init", "image": "busybox"}],
       "containers": [
         {"name": "app", "image": "shop/web:1.4",
          "resources": {"requests": {"cpu": "250m", "memory": "512Mi"},
                        "limits": {"cpu": "1", "memory": "1Gi"}}},
         {"name": "istio-proxy", "image": "istio/proxyv2:1.24",
          "resources": {"limits": {"memory": "128Mi"}}}]},
     "status": {"phase": "Running", "containerStatuses": [
       {"name": "app", "ready": true, "restartCount": 3,
        "state": {"running": {"startedAt": "2026-11-29T17:58:00Z"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
          "startedAt": "2026-11-29T17:40:00Z", "finishedAt": "2026-11-29T17:57:59Z"}}},
       {"name": "istio-proxy", "ready": true, "restartCount": 1,
        "state": {"running": {"startedAt": "2026-11-29T17:00:00Z"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
          "finishedAt": "2026-11-29T16:59:59Z"}}}]}},
    {"metadata": {"name": "web-canary-5f6d7-abcde", "namespace": "shop", "uid": "pod-uid-2",
       "labels": {"app": "web"},
       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "name": "web-canary-5f6d7", "uid": "rs-uid-canary", "controller": true}]},
     "spec": {"containers": [{"name": "app", "image": "shop/web:1.5-rc1"}]},
     "status": {"phase": "Running", "containerStatuses": [
       {"name": "app", "restartCount": 0, "lastState": {}}]}},
    {"metadata": {"name": "db-0", "namespace": "shop", "uid": "pod-uid-3",
       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
         "uid": "sts-uid-db", "controller": true}]},
     "spec": {"containers": [{"name": "postgres", "resources": {"requests": {"memory": 2147483648}}}]}},
    {"metadata": {"name": "debug", "namespace": "shop", "uid": "pod-uid-4"},
     "spec": {"containers": [{"name": "sh"}]}}
  ]})");

const json kReplicaSets = json::parse(R"({
  "kind": "ReplicaSetList", "apiVersion": "apps/v1", "metadata": {},
  "items": [
    {"metadata": {"name": "web-7d4b9c8f6", "uid": "rs-uid-web",
       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
         "uid": "deploy-uid-web", "controller": true}]}},
    {"metadata": {"name": "web-canary-5f6d7", "uid": "rs-uid-canary",
       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-canary",
         "uid": "deploy-uid-canary", "controller": true}]}}
  ]})");

std::vector<std::string> names(const std::vector<PodInfo>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p.name);
  return out;
}
}  // namespace

TEST_CASE("a PodMetricsList becomes per-pod, per-container samples") {
  auto parsed = parse_pod_metrics_list(kPodMetrics);
  REQUIRE(parsed.ok());
  REQUIRE(parsed->pods.size() == 2);
  const auto& first = parsed->pods[0];
  CHECK(first.name == "web-7d4b9c8f6-x2k4p");
  CHECK(first.namespace_ == "shop");
  CHECK(format_rfc3339(first.timestamp) == "2026-11-29T18:00:00Z");
  CHECK(first.window == Duration(15012));
  REQUIRE(first.containers.size() == 2);
  CHECK(first.containers[0].name == "app");
  CHECK(first.containers[0].cpu_cores == doctest::Approx(0.313));  // whole millicores, up
  CHECK(first.containers[0].memory_bytes == 400 * kMi);
  CHECK(first.containers[1].cpu_cores == doctest::Approx(0.002));
  CHECK(format_rfc3339(parsed->pods[1].timestamp) == "2026-11-29T18:00:03.500Z");
  CHECK(parsed->pods[1].window == Duration(60'000));
  CHECK(parsed->pods[1].containers[0].cpu_cores == 0.0);
  // The broken item is skipped with a message naming the field; the others are kept.
  REQUIRE(parsed->errors.size() == 1);
  CHECK(parsed->errors[0].find("items[2].containers[0].usage.cpu") == 0);
}

TEST_CASE("usage is read in whole millicores and whole bytes, rounded up as VPA reads it") {
  // Quantity.MilliValue() and Value() round up, away from zero: 110.2m is the sample 111m, and
  // 1.5 bytes is 2; an exact value stays as it is.
  auto parsed = parse_pod_metrics_list(json::parse(R"({"items": [
    {"metadata": {"name": "web-1"}, "timestamp": "2026-11-29T18:00:00Z", "window": "15s",
     "containers": [
       {"name": "app", "usage": {"cpu": "110200000n", "memory": "1500m"}},
       {"name": "exact", "usage": {"cpu": "250m", "memory": "409600Ki"}},
       {"name": "tiny", "usage": {"cpu": "1n", "memory": "1n"}}]}]})"));
  REQUIRE(parsed.ok());
  REQUIRE(parsed->pods.size() == 1);
  const auto& containers = parsed->pods[0].containers;
  REQUIRE(containers.size() == 3);
  CHECK(containers[0].cpu_cores == 0.111);
  CHECK(containers[0].memory_bytes == 2.0);
  CHECK(containers[1].cpu_cores == 0.25);
  CHECK(containers[1].memory_bytes == 400 * kMi);
  CHECK(containers[2].cpu_cores == 0.001);
  CHECK(containers[2].memory_bytes == 1.0);
}

TEST_CASE("a document that is not a list is an error") {
  auto parsed = parse_pod_metrics_list(json::parse(R"({"kind": "Status", "code": 503})"));
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().find("items") != std::string::npos);
  CHECK_FALSE(parse_pod_list(json::array()).ok());
  CHECK_FALSE(parse_replica_set_list(json("x")).ok());
}

TEST_CASE("pods parse with their controller, container resources and OOM kills") {
  auto parsed = parse_pod_list(kPods);
  REQUIRE(parsed.ok());
  CHECK(parsed->errors.empty());
  REQUIRE(parsed->pods.size() == 4);
  const auto& web = parsed->pods[0];
  REQUIRE(web.controller);
  CHECK(web.controller->kind == "ReplicaSet");
  CHECK(web.controller->uid == "rs-uid-web");
  REQUIRE(web.containers.size() == 2);  // init containers are not scaled
  CHECK(web.containers[0].requests.at(kCpu).to_string() == "250m");
  CHECK(web.containers[0].limits.at(kMemory).to_string() == "1Gi");
  REQUIRE(web.oom_kills.size() == 2);
  CHECK(web.oom_kills[0].pod_uid == "pod-uid-1");
  CHECK(web.oom_kills[0].container == "app");
  CHECK(web.oom_kills[0].restart_count == 3);
  CHECK(format_rfc3339(web.oom_kills[0].finished_at) == "2026-11-29T17:57:59Z");
  CHECK(web.oom_kills[0].memory_request_bytes == 512 * kMi);
  // No memory request: the limit is what the API server defaulted the request to.
  CHECK(web.oom_kills[1].memory_request_bytes == 128 * kMi);
  // The kubelet reports what the container runs with (a resize in place not done yet, up or
  // down): that is the request the kill happened at, as VPA reads it; the spec only without it.
  json resized = kPods;
  auto& app_status = resized["items"][0]["status"]["containerStatuses"][0];
  app_status["resources"] = {{"requests", {{"memory", "256Mi"}}}, {"limits", {{"memory", "1Gi"}}}};
  auto& proxy_status = resized["items"][0]["status"]["containerStatuses"][1];
  proxy_status["resources"] = {{"limits", {{"memory", "64Mi"}}}};
  auto with_status = parse_pod_list(resized);
  REQUIRE(with_status.ok());
  REQUIRE(with_status->pods[0].oom_kills.size() == 2);
  CHECK(with_status->pods[0].oom_kills[0].memory_request_bytes == 256 * kMi);
  CHECK(with_status->pods[0].oom_kills[1].memory_request_bytes == 64 * kMi);
  CHECK(with_status->pods[0].containers[0].requests.at(kMemory).to_string() == "512Mi");
  // Through the projection the list is read with, too.
  vscaler::kube::ProjectingParser parser;
  auto item = parser.parse(resized["items"][0].dump(), 0, pod_projection());
  REQUIRE(item.ok());
  auto projected = parse_pod_list(json{{"items", json::array({*item})}});
  REQUIRE(projected.ok());
  CHECK(projected->pods[0].oom_kills[0].memory_request_bytes == 256 * kMi);
  CHECK(parsed->pods[1].oom_kills.empty());
  CHECK(parsed->pods[2].containers[0].requests.at(kMemory) ==
        *vscaler::kube::Quantity::parse("2Gi"));
  CHECK_FALSE(parsed->pods[3].controller);
  CHECK(web.running);  // phase Running
  json phases = kPods;
  for (const char* phase : {"Pending", "Succeeded", "Failed"}) {
    CAPTURE(phase);
    phases["items"][0]["status"]["phase"] = phase;
    CHECK_FALSE(parse_pod_list(phases)->pods[0].running);  // no metrics to wait for
  }
  phases["items"][0]["status"].erase("phase");
  CHECK(parse_pod_list(phases)->pods[0].running);  // not set yet: soon running
}

TEST_CASE("a malformed pod is skipped with a message naming the field") {
  json pods = kPods;
  pods["items"][1]["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "-1"}}}};
  pods["items"][2]["status"] = json::parse(R"({"containerStatuses": [{"name": "postgres",
    "restartCount": 1, "lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": 7}}}]})");
  auto parsed = parse_pod_list(pods);
  REQUIRE(parsed.ok());
  CHECK(parsed->pods.size() == 2);
  REQUIRE(parsed->errors.size() == 2);
  CHECK(parsed->errors[0].find("items[1].spec.containers[0].resources.requests.cpu") == 0);
  CHECK(parsed->errors[1].find("items[2].status.containerStatuses[0].lastState.terminated."
                               "finishedAt") == 0);
}

TEST_CASE("only pods whose owner chain leads to the target are kept") {
  auto pods = parse_pod_list(kPods)->pods;
  auto replica_sets = parse_replica_set_list(kReplicaSets);
  REQUIRE(replica_sets.ok());
  using V = std::vector<std::string>;
  CHECK(names(owned_pods(pods, *replica_sets, {"Deployment", "web", "deploy-uid-web"})) ==
        V{"web-7d4b9c8f6-x2k4p"});
  CHECK(names(owned_pods(pods, *replica_sets, {"Deployment", "web-canary", "deploy-uid-canary"})) ==
        V{"web-canary-5f6d7-abcde"});
  CHECK(names(owned_pods(pods, *replica_sets, {"StatefulSet", "db", "sts-uid-db"})) == V{"db-0"});
  // Same name, another uid (the Deployment was recreated): nothing is its.
  CHECK(owned_pods(pods, *replica_sets, {"Deployment", "web", "deploy-uid-new"}).empty());
  // A ReplicaSet the list did not return proves nothing: its pods are left out.
  CHECK(owned_pods(pods, {}, {"Deployment", "web", "deploy-uid-web"}).empty());
  CHECK(owned_pods(pods, *replica_sets, {"DaemonSet", "db", "sts-uid-db"}).empty());
}

TEST_CASE("a LabelSelector renders as a labelSelector query value") {
  auto s = label_selector_query(json::parse(R"({
    "matchLabels": {"app": "web", "tier": "frontend"},
    "matchExpressions": [
      {"key": "track", "operator": "In", "values": ["stable", "beta"]},
      {"key": "env", "operator": "NotIn", "values": ["dev"]},
      {"key": "owner", "operator": "Exists"},
      {"key": "canary", "operator": "DoesNotExist"}]})"));
  REQUIRE(s.ok());
  CHECK(*s == "app=web,tier=frontend,track in (beta,stable),env notin (dev),owner,!canary");
  CHECK(*label_selector_query(json::parse(R"({"matchLabels": {"app": "db"}})")) == "app=db");
}

TEST_CASE("labels match a LabelSelector as the API server matches them") {
  auto parsed = parse_label_selector(json::parse(R"({
    "matchLabels": {"app": "web"},
    "matchExpressions": [
      {"key": "track", "operator": "In", "values": ["stable", "beta"]},
      {"key": "env", "operator": "NotIn", "values": ["dev"]},
      {"key": "owner", "operator": "Exists"},
      {"key": "canary", "operator": "DoesNotExist"}]})"));
  REQUIRE(parsed.ok());
  const LabelSelector& selector = *parsed;
  CHECK(matches(selector, {{"app", "web"}, {"track", "beta"}, {"owner", "x"}}));
  CHECK(matches(selector, {{"app", "web"}, {"track", "stable"}, {"owner", ""}, {"env", "prod"}}));
  CHECK_FALSE(matches(selector, {{"app", "db"}, {"track", "beta"}, {"owner", "x"}}));
  CHECK_FALSE(matches(selector, {{"app", "web"}, {"track", "alpha"}, {"owner", "x"}}));
  CHECK_FALSE(matches(selector, {{"app", "web"}, {"owner", "x"}}));  // In needs the key
  CHECK_FALSE(
      matches(selector, {{"app", "web"}, {"track", "beta"}, {"owner", "x"}, {"env", "dev"}}));
  CHECK_FALSE(matches(selector, {{"app", "web"}, {"track", "beta"}}));  // Exists
  CHECK_FALSE(
      matches(selector, {{"app", "web"}, {"track", "beta"}, {"owner", "x"}, {"canary", "1"}}));
  CHECK(to_query(selector) == *label_selector_query(json::parse(R"({
    "matchLabels": {"app": "web"},
    "matchExpressions": [
      {"key": "track", "operator": "In", "values": ["beta", "stable"]},
      {"key": "env", "operator": "NotIn", "values": ["dev"]},
      {"key": "owner", "operator": "Exists"},
      {"key": "canary", "operator": "DoesNotExist"}]})")));
}

TEST_CASE("a pod's labels are parsed (a namespace-wide read matches them)") {
  auto parsed = parse_pod_list(json::parse(R"({"items": [{
    "metadata": {"name": "p", "uid": "u", "labels": {"app": "web", "n": 1}},
    "spec": {"containers": [{"name": "app"}]}}]})"));
  REQUIRE(parsed.ok());
  REQUIRE(parsed->pods.size() == 1);
  CHECK(parsed->pods[0].labels == Labels{{"app", "web"}});  // a non-string value is not a label
}

TEST_CASE("a bad LabelSelector is an error naming the field") {
  auto op = label_selector_query(
      json::parse(R"({"matchExpressions": [{"key": "a", "operator": "Like", "values": ["x"]}]})"));
  REQUIRE_FALSE(op.ok());
  CHECK(op.error().find("spec.selector.matchExpressions[0].operator") == 0);
  auto no_values = label_selector_query(
      json::parse(R"({"matchExpressions": [{"key": "a", "operator": "In"}]})"));
  REQUIRE_FALSE(no_values.ok());
  CHECK(no_values.error().find("values") != std::string::npos);
  auto empty = label_selector_query(json::object());
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().find("every pod") != std::string::npos);
  CHECK_FALSE(label_selector_query(json::parse(R"({"matchLabels": {"app": 1}})")).ok());
  CHECK_FALSE(label_selector_query(json::parse(R"({"matchLabels": []})")).ok());
}

namespace {

// Each list item is parsed through its reader's projection (kube/json_projection.h): what the
// projection leaves out, the parser must never read. These render everything a parse yields.
json projected(const json& item, const vscaler::kube::JsonProjection& projection) {
  vscaler::kube::ProjectingParser parser;
  const std::string text = item.dump();
  auto parsed = parser.parse(text, 0, projection);
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

std::string rendered(const ResourceMap& resources) {
  std::string out;
  for (const auto& [name, quantity] : resources) out += name + "=" + quantity.to_string() + " ";
  return out;
}

std::string rendered(const std::optional<ControllerRef>& ref) {
  return ref ? ref->kind + "/" + ref->name + "/" + ref->uid : "-";
}

std::string rendered(const vscaler::kube::Result<PodInfo>& pod) {
  if (!pod.ok()) return "error: " + pod.error();
  std::string out = pod->name + " " + pod->uid + " " + rendered(pod->controller) +
                    (pod->running ? " running" : " not running") + " labels:";
  for (const auto& [key, value] : pod->labels) out += key + "=" + value + " ";
  for (const auto& c : pod->containers) {
    out += "| " + c.name + " " + rendered(c.requests) + "/ " + rendered(c.limits);
  }
  for (const auto& kill : pod->oom_kills) {
    out += "| oom " + kill.pod_uid + " " + kill.container + " " +
           std::to_string(kill.restart_count) + " " + format_rfc3339(kill.finished_at) + " " +
           std::to_string(kill.memory_request_bytes);
  }
  return out;
}

std::string rendered(const vscaler::kube::Result<PodUsage>& pod) {
  if (!pod.ok()) return "error: " + pod.error();
  std::string out = pod->name + " " + pod->namespace_ + " " + format_rfc3339(pod->timestamp) + " " +
                    std::to_string(pod->window.count());
  for (const auto& c : pod->containers) {
    out += "| " + c.name + " " + std::to_string(c.cpu_cores) + " " + std::to_string(c.memory_bytes);
  }
  return out;
}

}  // namespace

TEST_CASE("each list's projection keeps every field its parser reads") {
  SUBCASE("pods, well formed and malformed, with what the projection drops") {
    json pods = kPods;
    json managed = json::array({{{"manager", "kubelet"}, {"fieldsV1", {{"f:status", {}}}}}});
    pods["items"][0]["metadata"]["managedFields"] = managed;
    json broken = kPods;
    broken["items"][1]["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "-1"}}}};
    broken["items"][2]["status"] = json::parse(R"({"containerStatuses": [{"name": "postgres",
      "restartCount": 1, "lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": 7}}}]})");
    broken["items"][3]["spec"]["containers"] = json::object();
    broken["items"][0]["metadata"].erase("uid");
    pods["items"][1]["status"]["phase"] = "Pending";
    int compared = 0;
    for (const json* list : {&pods, &broken}) {
      for (std::size_t i = 0; i < (*list)["items"].size(); ++i) {
        const json& item = (*list)["items"][i];
        const json slim = projected(item, pod_projection());
        const std::string path = "items[" + std::to_string(i) + "]";
        CHECK(rendered(parse_pod(slim, path)) == rendered(parse_pod(item, path)));
        ++compared;
      }
    }
    CHECK(compared == 8);
    const json slim = projected(pods["items"][0], pod_projection());
    CHECK_FALSE(slim["metadata"].contains("managedFields"));
    CHECK_FALSE(slim["spec"].contains("initContainers"));
    CHECK(slim["status"]["phase"] == "Running");
    CHECK_FALSE(slim["status"]["containerStatuses"][0].contains("state"));
    CHECK(slim.dump().size() < pods["items"][0].dump().size());
  }
  SUBCASE("PodMetrics") {
    for (std::size_t i = 0; i < kPodMetrics["items"].size(); ++i) {
      const json& item = kPodMetrics["items"][i];
      const json slim = projected(item, pod_metrics_projection());
      CHECK(rendered(parse_pod_metrics(slim, "m")) == rendered(parse_pod_metrics(item, "m")));
    }
  }
  SUBCASE("ReplicaSets") {
    json slim_list = {{"items", json::array()}};
    for (const auto& item : kReplicaSets["items"]) {
      slim_list["items"].push_back(projected(item, replica_set_projection()));
    }
    auto full = parse_replica_set_list(kReplicaSets);
    auto slim = parse_replica_set_list(slim_list);
    REQUIRE(full.ok());
    REQUIRE(slim.ok());
    REQUIRE(full->size() == slim->size());
    for (std::size_t i = 0; i < full->size(); ++i) {
      CHECK((*slim)[i].name == (*full)[i].name);
      CHECK((*slim)[i].uid == (*full)[i].uid);
      CHECK(rendered((*slim)[i].controller) == rendered((*full)[i].controller));
    }
  }
}
