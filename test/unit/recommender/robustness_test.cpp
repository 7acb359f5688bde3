// Every parser of the recommender on systematically broken inputs: each value of a valid
// document, at every depth, replaced by each JSON type in turn. None may throw; each answers a
// value or an error (the API server, a user or an older vscaler may write anything).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>

#include "recommender/checkpoint.h"
#include "recommender/limit_range.h"
#include "recommender/pod_metrics.h"
#include "recommender/pods.h"
#include "recommender/selector.h"

using namespace vscaler::recommender;
using nlohmann::json;

namespace {

const json kReplacements[] = {nullptr, -1, 3.5,           1e300,          true,
                              "x",     "", json::array(), json::object(), json::array({1})};

// Calls `parse` on `document` with each value (and each whole subtree) replaced in turn.
void mutate_everywhere(const json& document, const std::function<void(const json&)>& parse) {
  json flat = document.flatten();
  std::vector<std::string> pointers;
  for (const auto& [pointer, value] : flat.items()) {
    // Every prefix of a leaf's pointer is a subtree that can be replaced too.
    for (std::size_t slash = pointer.find('/', 1); slash != std::string::npos;
         slash = pointer.find('/', slash + 1)) {
      pointers.push_back(pointer.substr(0, slash));
    }
    pointers.push_back(pointer);
  }
  std::sort(pointers.begin(), pointers.end());
  pointers.erase(std::unique(pointers.begin(), pointers.end()), pointers.end());
  for (const auto& pointer : pointers) {
    for (const auto& replacement : kReplacements) {
      json broken = document;
      broken[json::json_pointer(pointer)] = replacement;
      CAPTURE(pointer);
      CAPTURE(replacement.dump());
      CHECK_NOTHROW(parse(broken));
    }
  }
  for (const auto& replacement : kReplacements) CHECK_NOTHROW(parse(replacement));
}

ContainerAggregates sample_history(const AggregateOptions& options) {
  ContainerAggregates aggregates;
  for (int m = 0; m < 30; ++m) {
    (void)aggregates["app"].add_sample(
        options, pod_key("uid-1"),
        {from_millis(1'764'547'200'000) + std::chrono::minutes(m), 0.1 * m, 1e8 + 1e7 * m});
  }
  return aggregates;
}

}  // namespace

TEST_CASE("checkpoint decoding never throws, whatever is broken") {
  AggregateOptions options;
  auto history = sample_history(options);
  mutate_everywhere(checkpoint_object("shop", "web", "uid-s", history), [&](const json& object) {
    (void)decode_checkpoint_object(object, "uid-s", options).ok();
  });
}

TEST_CASE(
    "PodMetricsList, PodList, ReplicaSetList, LimitRangeList and selector parsing never throw") {
  const json metrics = json::parse(R"({"items": [{"metadata": {"name": "p", "namespace": "n"},
    "timestamp": "2026-11-29T18:00:00Z", "window": "15s",
    "containers": [{"name": "app", "usage": {"cpu": "1m", "memory": "1Mi"}}]}]})");
  mutate_everywhere(metrics, [](const json& j) { (void)parse_pod_metrics_list(j).ok(); });

  const json pods = json::parse(R"({"items": [{"metadata": {"name": "p", "uid": "u",
      "ownerReferences": [{"kind": "ReplicaSet", "name": "r", "uid": "ru", "controller": true}]},
    "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1m"},
      "limits": {"memory": "1Mi"}}}]},
    "status": {"containerStatuses": [{"name": "app", "restartCount": 1, "lastState":
      {"terminated": {"reason": "OOMKilled", "finishedAt": "2026-11-29T18:00:00Z"}}}]}}]})");
  mutate_everywhere(pods, [](const json& j) {
    auto parsed = parse_pod_list(j);
    if (parsed.ok()) (void)owned_pods(parsed->pods, {}, {"StatefulSet", "s", "ru"});
  });

  const json replica_sets = json::parse(R"({"items": [{"metadata": {"name": "r", "uid": "ru",
    "ownerReferences": [{"kind": "Deployment", "uid": "d", "controller": true}]}}]})");
  mutate_everywhere(replica_sets, [](const json& j) { (void)parse_replica_set_list(j).ok(); });

  const json limit_ranges = json::parse(R"({"items": [{"spec": {"limits": [{"type": "Container",
    "max": {"cpu": "2"}, "min": {"memory": "1Mi"}, "default": {"cpu": "1"}}]}}]})");
  mutate_everywhere(limit_ranges, [](const json& j) { (void)container_limit_range(j).ok(); });

  const json selector = json::parse(R"({"matchLabels": {"app": "web"}, "matchExpressions":
    [{"key": "k", "operator": "In", "values": ["a", "b"]}]})");
  mutate_everywhere(selector, [](const json& j) { (void)label_selector_query(j).ok(); });
}
