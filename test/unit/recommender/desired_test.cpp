// recommended_containers: which containers a recommendation applies to and the keys it sets, the
// spec entry's policy mapped onto the recommender's (RequestsOnly, controlledResources, the
// min/max clamp is the recommender's: the target is applied as written); recommendations_of's list
// derived once per scaler.
#include "recommender/desired.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

using nlohmann::json;
using namespace vscaler;
using namespace vscaler::recommender;

namespace {

api::Scaler scaler(const char* containers) {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec", {{"deploymentName", "web"}}}};
  if (containers != nullptr) object["spec"]["containers"] = json::parse(containers);
  auto parsed = api::parse_scaler(object);
  REQUIRE(parsed.ok());
  return *parsed;
}

json workload(const char* containers) {
  json object;
  object["spec"]["template"]["spec"]["containers"] = json::parse(containers);
  return object;
}

std::vector<ContainerRecommendation> recommendations(const char* status) {
  auto parsed = parse_recommendation(json::parse(status));
  REQUIRE(parsed.ok());
  return *parsed;
}

const char* kRecs = R"({"containerRecommendations": [
  {"containerName": "app", "target": {"cpu": "300m", "memory": "200Mi"},
   "lowerBound": {"cpu": "250m", "memory": "150Mi"}, "upperBound": {"cpu": "400m", "memory": "300Mi"},
   "uncappedTarget": {"cpu": "5", "memory": "200Mi"}},
  {"containerName": "side", "target": {"cpu": "50m"}, "lowerBound": {"cpu": "10m"},
   "upperBound": {"cpu": "90m"}, "uncappedTarget": {"cpu": "50m"}}]})";

}  // namespace

TEST_CASE("RequestsAndLimits: requests to the target (not uncappedTarget), limits in proportion") {
  auto recs = recommendations(kRecs);
  auto out = recommended_containers(
      scaler(nullptr),
      workload(R"([{"name": "app", "resources": {"requests": {"cpu": "100m", "memory": "100Mi"},
      "limits": {"cpu": "200m"}}}, {"name": "other"}])"),
      recs);
  REQUIRE(out.desired.size() == 1);
  const auto& app = out.desired.at("app");
  CHECK(app.requests.at("cpu").to_string() == "300m");
  CHECK(app.requests.at("memory").to_string() == "200Mi");
  CHECK(app.limits.at("cpu").to_string() == "600m");
  CHECK_FALSE(app.limits.contains("memory"));  // no limit to scale: none is added
  CHECK(out.awaiting == std::vector<std::string>{"other"});
  REQUIRE(out.applied.size() == 1);
  CHECK(out.applied[0].recommendation == &recs[0]);
}

TEST_CASE(
    "RequestsOnly leaves limits alone (the request capped at the limit); controlledResources "
    "limits the keys; fixed and Off entries are not recommended") {
  auto recs = recommendations(kRecs);
  auto out = recommended_containers(
      scaler(R"([{"name": "app", "controlledValues": "RequestsOnly", "controlledResources":
      ["cpu"]}, {"name": "side", "requests": {"cpu": "1"}}, {"name": "*", "mode": "Off"}])"),
      workload(R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}, "limits":
      {"cpu": "250m"}}}, {"name": "side"}, {"name": "x"}])"),
      recs);
  REQUIRE(out.desired.size() == 1);
  const auto& app = out.desired.at("app");
  CHECK(app.requests.size() == 1);
  CHECK(app.requests.at("cpu").to_string() == "250m");
  CHECK(app.limits.empty());
  CHECK(out.awaiting.empty());
}

TEST_CASE("the policy maps controlledValues and the allowed range") {
  api::ContainerResources entry;
  entry.controlled_values = api::ControlledValues::kRequestsOnly;
  entry.controls_memory = false;
  entry.min_allowed.emplace("cpu", *kube::Quantity::parse("50m"));
  auto policy = policy_of(entry);
  CHECK(policy.controlled_values == ControlledValues::kRequestsOnly);
  CHECK(policy.controls("cpu"));
  CHECK_FALSE(policy.controls("memory"));
  CHECK(policy.range.min_allowed.at("cpu").to_string() == "50m");
}

TEST_CASE(
    "a namespace's Pod max: the pod's recommended containers fit it, the patch is not due "
    "again once applied") {
  auto recs = recommendations(R"({"containerRecommendations": [
    {"containerName": "app", "target": {"cpu": "1"}, "lowerBound": {"cpu": "900m"},
     "upperBound": {"cpu": "2"}, "uncappedTarget": {"cpu": "1"}}]})");
  LimitRangeItem lr;
  lr.pod_max[kCpu] = *kube::Quantity::parse("1500m");
  auto out = recommended_containers(
      scaler(R"([{"name": "app"}, {"name": "side", "mode": "Off"}])"),
      workload(
          R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}},
                   {"name": "side", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "500m"}}}])"),
      recs, &lr);
  const auto& app = out.desired.at("app");
  // Alone: request 1, limit 2 (the template's 1:2). With the sidecar's 500m the limits would sum
  // to 2500m: the app's are scaled by 1000m / 2000m.
  CHECK(app.limits.at("cpu").to_string() == "1");
  CHECK(app.requests.at("cpu").to_string() == "1");
  REQUIRE(out.applied.size() == 1);
  REQUIRE(out.applied[0].next);
  CHECK(out.applied[0].next->limits.at(kCpu).to_string() == "1");
}

TEST_CASE("pod totals count what ResourceQuota counts: sidecars, an init peak, pod-level values") {
  auto cpu = [](const PodTotals& totals, bool limits = false) {
    const auto& map = limits ? totals.limits : totals.requests;
    auto found = map.find("cpu");
    return found == map.end() ? std::string("-") : found->second.to_string();
  };
  json pod = json::parse(R"({"spec": {
      "containers": [{"name": "app", "resources": {"requests": {"cpu": "300m"},
                                                   "limits": {"cpu": "1"}}},
                     {"name": "web", "resources": {"requests": {"cpu": "100m"}}}],
      "initContainers": [
        {"name": "migrate", "resources": {"requests": {"cpu": "200m"}}},
        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"},
                                                                   "limits": {"cpu": "200m"}}},
        {"name": "warm", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "3"}}}]}})");
  // The init container "warm" runs beside the sidecar started before it: 2 + 0.05 > 0.4 + 0.05.
  CHECK(cpu(pod_totals_of(pod)) == "2050m");
  CHECK(cpu(pod_totals_of(pod), true) == "3200m");
  CHECK(cpu(shared_with_containers(pod)) == "50m");
  pod["spec"]["initContainers"].erase(2);
  CHECK(cpu(pod_totals_of(pod)) == "450m");  // 300m + 100m + the sidecar's 50m
  CHECK(cpu(pod_totals_of(pod), true) == "1200m");
  // Pod-level resources, where they say more, are what the pod counts for.
  pod["spec"]["resources"] = {{"requests", {{"cpu", "1"}}}};
  CHECK(cpu(pod_totals_of(pod)) == "1");
  CHECK(cpu(pod_totals_of(pod), true) == "1200m");
  pod["spec"]["resources"]["limits"]["cpu"] = "1";
  CHECK(cpu(pod_totals_of(pod), true) == "1200m");  // the containers' sum, the larger
  // Raised by a plan: its values, not the object's.
  api::ResourcePlan raised;
  raised.pod_resources_changed = true;
  raised.pod_resources = {{"requests", {{"cpu", "1800m"}}}, {"limits", {{"cpu", "1800m"}}}};
  CHECK(cpu(pod_totals_after(pod, raised)) == "1800m");
  CHECK(cpu(pod_totals_after(pod, raised), true) == "1800m");
  CHECK(cpu(pod_totals_after(pod, api::ResourcePlan{}), true) == "1200m");
  pod["spec"]["resources"].erase("limits");
  // A template's pod spec reads the same.
  json deployment;
  deployment["spec"]["template"] = pod;
  CHECK(cpu(pod_totals_of(deployment)) == "1");
  // A budget for the containers leaves the sidecars' part out.
  PodTotals budget;
  budget.requests.emplace("cpu", kube::Quantity::parse("1").value());
  CHECK(cpu(minus_bounded(budget, shared_with_containers(pod))) == "950m");
}

TEST_CASE("recommendations_of: derived once per scaler, again when its text is another") {
  api::Scaler with = scaler(nullptr);
  CHECK(recommendations_of(with)->empty());  // none stored
  with.stored_recommendation = json::parse(kRecs).dump();
  auto first = recommendations_of(with);
  REQUIRE(first->size() == 2);
  CHECK((*first)[0].container_name == "app");
  CHECK((*first)[0].target.at("cpu").to_string() == "300m");
  // The next reader of the same scaler gets what the first derived, not a parse of its own.
  CHECK(recommendations_of(with).get() == first.get());
  // A copy starts without it, and derives the same.
  api::Scaler copy = with;
  auto copied = recommendations_of(copy);
  CHECK(copied.get() != first.get());
  CHECK((*copied)[1].container_name == "side");
  // A scaler whose text changed in place is not answered with the old list.
  with.stored_recommendation = json::parse(R"({"containerRecommendations": [
      {"containerName": "app", "target": {"cpu": "1"}, "lowerBound": {"cpu": "1"},
       "upperBound": {"cpu": "1"}, "uncappedTarget": {"cpu": "1"}}]})")
                                   .dump();
  auto changed = recommendations_of(with);
  REQUIRE(changed->size() == 1);
  CHECK(changed->front().target.at("cpu").to_string() == "1");
  CHECK(first->size() == 2);  // the first readers' list lives on while they hold it
  // Unreadable: empty, and kept so (not parsed again).
  with.stored_recommendation = R"({"containerRecommendations": 3})";
  auto unreadable = recommendations_of(with);
  CHECK(unreadable->empty());
  CHECK(recommendations_of(with).get() == unreadable.get());
}

TEST_CASE("recommendations_of: readers of one shared scaler on several threads at once") {
  // The store's scalers are shared by the webhook's event loops and the workers (TSan checks the
  // kept value's hand-over).
  api::Scaler shared_scaler = scaler(nullptr);
  shared_scaler.stored_recommendation = json::parse(kRecs).dump();
  const api::Scaler& shared = shared_scaler;
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        auto list = recommendations_of(shared);
        if (list->size() != 2 || (*list)[1].container_name != "side") ++wrong;
      }
    });
  }
  for (auto& reader : readers) reader.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("headroom grew: a bound gone, or more left of some bounded key") {
  using vscaler::recommender::grew;
  using vscaler::recommender::PodTotals;
  auto totals = [](const char* cpu, const char* memory) {
    PodTotals out;
    if (cpu != nullptr) out.requests.emplace("cpu", vscaler::kube::Quantity::parse(cpu).value());
    if (memory != nullptr) {
      out.limits.emplace("memory", vscaler::kube::Quantity::parse(memory).value());
    }
    return out;
  };
  const std::optional<PodTotals> none;
  CHECK_FALSE(grew(none, none));
  CHECK(grew(totals("100m", nullptr), none));        // the quota deleted
  CHECK_FALSE(grew(none, totals("100m", nullptr)));  // a quota created
  CHECK_FALSE(grew(totals("100m", "1Gi"), totals("100m", "1Gi")));
  CHECK_FALSE(grew(totals("100m", "1Gi"), totals("50m", "1Gi")));
  CHECK(grew(totals("100m", "1Gi"), totals("0.2", "1Gi")));
  CHECK(grew(totals("100m", "1Gi"), totals("50m", "2Gi")));           // one key is enough
  CHECK(grew(totals("100m", "1Gi"), totals("100m", nullptr)));        // memory no longer bounded
  CHECK_FALSE(grew(totals("100m", nullptr), totals("100m", "1Gi")));  // a new bound
}
