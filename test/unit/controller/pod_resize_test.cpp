// plan_in_place: which running pods are resized, to what, and where a resize stands as the
// kubelet reports it (observedGeneration, PodResizePending/PodResizeInProgress, status.resources).
#include "controller/pod_resize.h"

#include <doctest/doctest.h>

#include "recommender/desired.h"

using nlohmann::json;
using namespace vscaler;
using controller::PodResizeState;

namespace {

api::Scaler scaler_from(const char* containers, const char* status = nullptr) {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec",
                  {{"deploymentName", "web"},
                   {"updateMode", "InPlace"},
                   {"containers", json::parse(containers)}}}};
  if (status != nullptr) object["status"] = json::parse(status);
  auto parsed = api::parse_scaler(object);
  REQUIRE(parsed.ok());
  return *parsed;
}

/// A Running pod of generation 1 whose container app asks for `spec` and whose status reports
/// `applied` (the kubelet's view; null: not reported).
json pod(const char* name, const json& spec, const json& applied) {
  json status_entry = {{"name", "app"}, {"ready", true}};
  if (!applied.is_null()) status_entry["resources"] = applied;
  return {{"metadata", {{"name", name}, {"uid", std::string("uid-") + name}, {"generation", 1}}},
          {"spec", {{"containers", json::array({{{"name", "app"}, {"resources", spec}}})}}},
          {"status",
           {{"phase", "Running"},
            {"observedGeneration", 1},
            {"containerStatuses", json::array({status_entry})}}}};
}

json cpu(const char* request) {
  return {{"requests", {{"cpu", request}}}};
}

/// A ResourceQuota headroom of `cpu` left in requests.cpu.
recommender::PodTotals cpu_headroom(const char* cpu) {
  recommender::PodTotals headroom;
  headroom.requests.emplace("cpu", kube::Quantity::parse(cpu).value());
  return headroom;
}

/// Running pods asking for and running at 100m, one per name.
std::vector<json> pods_at_100m(std::initializer_list<const char*> names) {
  std::vector<json> pods;
  for (const char* name : names) pods.push_back(pod(name, cpu("100m"), cpu("100m")));
  return pods;
}

/// The cpu request a due pod's patch asks for.
json patched_cpu(const controller::PodResize& pod) {
  return pod.patch["spec"]["containers"][0]["resources"]["requests"]["cpu"];
}

/// Rules at a fixed `now` under which pod `uid` was resized for a recommendation `ago`.
struct ResizedAgo {
  const recommender::TimePoint now = recommender::from_millis(3'600'000);
  std::map<std::string, recommender::TimePoint> resized_at;
  controller::InPlaceRules rules;
  ResizedAgo(const char* uid, std::chrono::minutes ago) : resized_at{{uid, now - ago}} {
    rules.now = now;
    rules.resized_at = &resized_at;
  }
  ResizedAgo(const ResizedAgo&) = delete;  // rules point at resized_at
  ResizedAgo& operator=(const ResizedAgo&) = delete;
};

std::vector<recommender::ContainerRecommendation> recommendations_of(const api::Scaler& scaler) {
  return *recommender::recommendations_of(scaler);
}

}  // namespace

TEST_CASE("fixed values: a pod that differs is due, all its controlled containers in one patch") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  auto plan = controller::plan_in_place(
      scaler, {pod("a", cpu("100m"), cpu("100m")), pod("b", cpu("300m"), cpu("0.3"))}, {});
  REQUIRE(plan.total() == 2);
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  CHECK(plan.pods[0].patch == json::parse(R"({"spec": {"containers": [{"name": "app",
                        "resources": {"requests": {"cpu": "300m"}}}]}})"));
  CHECK(plan.pods[0].message == "it carries app requests.cpu=100m");
  CHECK(plan.pods[1].state == PodResizeState::kAtTarget);  // equal by value
  CHECK(plan.at_target == 1);
  CHECK(plan.in_progress == 1);
  CHECK(plan.pending == 0);
}

TEST_CASE("values that would change the pod's QoS class are not sent: Infeasible, evictable") {
  // A BestEffort pod (no requests, no limits): a request makes it Burstable, which the API
  // server refuses in place. InPlaceOrRecreate recreates it; its replacement is sized at
  // admission, where any class goes.
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  json best_effort = pod("a", json::object(), json::object());
  auto plan = controller::plan_in_place(scaler, {best_effort}, {});
  REQUIRE(plan.total() == 1);
  CHECK(plan.pods[0].state == PodResizeState::kInfeasible);
  CHECK(plan.pods[0].patch.is_null());
  CHECK(plan.pods[0].message ==
        "the declared resources are not set; the resize would make the pod Burstable, and it is "
        "BestEffort: the API server refuses a resize that changes a pod's QoS class; pods "
        "created from now on get the values at admission");
  CHECK(plan.pending == 1);
  CHECK(controller::evictable(plan.pods[0], "Deployment", recommender::TimePoint{}));
  // A class kept: sent as ever.
  plan = controller::plan_in_place(scaler, {pod("b", cpu("100m"), cpu("100m"))}, {});
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  // The class the pod has is the one its status says (the API server compares with it).
  json said_burstable = best_effort;
  said_burstable["status"]["qosClass"] = "Burstable";
  CHECK(controller::plan_in_place(scaler, {said_burstable}, {}).pods[0].state ==
        PodResizeState::kDue);
}

TEST_CASE("pods not Running or being deleted are not counted") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  json pending = pod("p", cpu("100m"), nullptr);
  pending["status"]["phase"] = "Pending";
  json deleting = pod("d", cpu("100m"), cpu("100m"));
  deleting["metadata"]["deletionTimestamp"] = "2026-12-03T10:00:00Z";
  CHECK(controller::plan_in_place(scaler, {pending, deleting}, {}).total() == 0);
}

TEST_CASE("a resize the kubelet has not finished is waited for, never sent again") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  // Asked for 300m; the status still reports 100m.
  json behind = pod("behind", cpu("300m"), cpu("100m"));
  // Not seen yet: generation 2, observedGeneration 1.
  json unseen = pod("unseen", cpu("300m"), cpu("100m"));
  unseen["metadata"]["generation"] = 2;
  // Seen, in progress.
  json progressing = pod("progressing", cpu("300m"), cpu("300m"));
  progressing["status"]["conditions"] =
      json::parse(R"([{"type": "PodResizeInProgress", "status": "True"}])");
  auto plan = controller::plan_in_place(scaler, {behind, unseen, progressing}, {});
  for (const auto& decision : plan.pods) {
    CAPTURE(decision.name);
    CHECK(decision.state == PodResizeState::kInProgress);
    CHECK(decision.patch.is_null());
  }
  CHECK(plan.in_progress == 3);
}

TEST_CASE("Deferred, Infeasible and Error are reported with the kubelet's message, not resent") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  auto with_condition = [](const char* name, const char* type, const char* reason) {
    json p = pod(name, cpu("300m"), cpu("100m"));
    p["status"]["conditions"] = json::array(
        {{{"type", type}, {"status", "True"}, {"reason", reason}, {"message", "no room"}}});
    return p;
  };
  auto plan = controller::plan_in_place(scaler,
                                        {with_condition("d", "PodResizePending", "Deferred"),
                                         with_condition("i", "PodResizePending", "Infeasible"),
                                         with_condition("e", "PodResizeInProgress", "Error")},
                                        {});
  REQUIRE(plan.total() == 3);
  CHECK(plan.pods[0].state == PodResizeState::kDeferred);
  CHECK(plan.pods[1].state == PodResizeState::kInfeasible);
  CHECK(plan.pods[2].state == PodResizeState::kError);
  CHECK(plan.pods[1].message == "no room");
  CHECK(plan.pending == 3);
  // The scaler now wants less than the attempt that failed (300m): a new attempt is due.
  auto lower = scaler_from(R"([{"name": "app", "requests": {"cpu": "200m"}}])");
  plan =
      controller::plan_in_place(lower, {with_condition("i", "PodResizePending", "Infeasible")}, {});
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  // More than it: InPlace asks again only for less (VPA's rule), for Error as for Infeasible;
  // InPlaceOrRecreate asks (and evicts when that fails).
  auto higher = scaler_from(R"([{"name": "app", "requests": {"cpu": "400m"}}])");
  plan = controller::plan_in_place(higher,
                                   {with_condition("i", "PodResizePending", "Infeasible"),
                                    with_condition("e", "PodResizeInProgress", "Error"),
                                    with_condition("d", "PodResizePending", "Deferred")},
                                   {});
  CHECK(plan.pods[0].state == PodResizeState::kInfeasible);
  CHECK(plan.pods[0].message ==
        "no room; asked again when the values wanted are below this attempt (InPlace)");
  CHECK(plan.pods[0].patch.is_null());
  CHECK(plan.pods[1].state == PodResizeState::kError);
  CHECK(plan.pods[2].state == PodResizeState::kDue);  // Deferred is no failed attempt
  higher.update_mode = api::UpdateMode::kInPlaceOrRecreate;
  plan = controller::plan_in_place(higher, {with_condition("i", "PodResizePending", "Infeasible")},
                                   {});
  CHECK(plan.pods[0].state == PodResizeState::kDue);
}

TEST_CASE("a pod that reports no status resources (no resize support) is tried, not waited on") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  auto plan = controller::plan_in_place(scaler, {pod("old-node", cpu("100m"), nullptr)}, {});
  CHECK(plan.pods[0].state == PodResizeState::kDue);
}

TEST_CASE("recommended: only a pod out of the bounds is resized, to the target on its own values") {
  auto scaler = scaler_from(R"([{"name": "app"}])", R"({"recommendation":
      {"containerRecommendations": [{"containerName": "app", "target": {"cpu": "300m"},
       "lowerBound": {"cpu": "250m"}, "upperBound": {"cpu": "400m"},
       "uncappedTarget": {"cpu": "300m"}}]}})");
  auto recommendations = recommendations_of(scaler);
  json low = pod("low", {{"requests", {{"cpu", "100m"}}}, {"limits", {{"cpu", "200m"}}}},
                 {{"requests", {{"cpu", "100m"}}}, {"limits", {{"cpu", "200m"}}}});
  json within = pod("within", cpu("350m"), cpu("350m"));
  auto plan = controller::plan_in_place(scaler, {low, within}, recommendations);
  REQUIRE(plan.total() == 2);
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  // 1:2 kept: the limit follows the request (controlledValues RequestsAndLimits).
  CHECK(plan.pods[0].patch["spec"]["containers"][0]["resources"] ==
        json::parse(R"({"requests": {"cpu": "300m"}, "limits": {"cpu": "600m"}})"));
  CHECK(plan.pods[0].message == "container app: cpu request 100m is below lowerBound 250m");
  CHECK(plan.pods[1].state == PodResizeState::kAtTarget);
}

TEST_CASE("values that would make the pod invalid are reported, not sent") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "2"}}])");
  json limited = pod("limited", {{"requests", {{"cpu", "100m"}}}, {"limits", {{"cpu", "1"}}}},
                     {{"requests", {{"cpu", "100m"}}}, {"limits", {{"cpu", "1"}}}});
  auto plan = controller::plan_in_place(scaler, {limited}, {});
  CHECK(plan.pods[0].state == PodResizeState::kInvalid);
  CHECK(plan.pods[0].message == "container app: requests.cpu 2 would exceed limits.cpu 1");
  CHECK(plan.pending == 1);
}

TEST_CASE("evictable: VPA's rules for a pod that cannot be resized, and a DaemonSet's exceptions") {
  using controller::evictable;
  using controller::PodResize;
  const auto now = recommender::from_millis(10'000'000'000);
  auto pod = [&](PodResizeState state, int minutes_ago, bool node_capacity = false) {
    PodResize p;
    p.state = state;
    p.since = now - std::chrono::minutes(minutes_ago);
    p.node_capacity = node_capacity;
    return p;
  };
  CHECK(evictable(pod(PodResizeState::kInfeasible, 0), "Deployment", now));
  CHECK(evictable(pod(PodResizeState::kError, 0), "Deployment", now));
  CHECK_FALSE(evictable(pod(PodResizeState::kDeferred, 4), "Deployment", now));
  CHECK(evictable(pod(PodResizeState::kDeferred, 5), "Deployment", now));
  CHECK_FALSE(evictable(pod(PodResizeState::kInProgress, 59), "StatefulSet", now));
  CHECK(evictable(pod(PodResizeState::kInProgress, 60), "StatefulSet", now));
  CHECK_FALSE(evictable(pod(PodResizeState::kAtTarget, 600), "Deployment", now));
  CHECK_FALSE(evictable(pod(PodResizeState::kInvalid, 600), "Deployment", now));
  // A DaemonSet pod comes back on the same node: only Infeasible or Error, never its room.
  CHECK(evictable(pod(PodResizeState::kInfeasible, 0), "DaemonSet", now));
  CHECK(evictable(pod(PodResizeState::kError, 0), "DaemonSet", now));
  CHECK_FALSE(evictable(pod(PodResizeState::kInfeasible, 0, true), "DaemonSet", now));
  CHECK_FALSE(evictable(pod(PodResizeState::kDeferred, 600), "DaemonSet", now));
  CHECK_FALSE(evictable(pod(PodResizeState::kInProgress, 600), "DaemonSet", now));
  // Refused by a ResourceQuota or LimitRange: the replacement would be refused too.
  PodResize quota = pod(PodResizeState::kInfeasible, 0);
  quota.quota = true;
  CHECK_FALSE(evictable(quota, "Deployment", now));
  // Deferred with no time known is not old enough.
  PodResize unknown;
  unknown.state = PodResizeState::kDeferred;
  CHECK_FALSE(evictable(unknown, "Deployment", now));
}

TEST_CASE("a Deferred condition's lastTransitionTime is kept as since") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  json p = pod("d", cpu("300m"), cpu("100m"));
  p["status"]["conditions"] = json::parse(R"([{"type": "PodResizePending", "status": "True",
      "reason": "Deferred", "lastTransitionTime": "2026-12-03T10:00:00Z"}])");
  auto plan = controller::plan_in_place(scaler, {p}, {});
  REQUIRE(plan.pods[0].since.has_value());
  CHECK(recommender::format_rfc3339(*plan.pods[0].since) == "2026-12-03T10:00:00Z");
}

namespace {
api::Scaler recommended_300m() {
  return scaler_from(R"([{"name": "app"}])", R"({"recommendation":
      {"containerRecommendations": [{"containerName": "app", "target": {"cpu": "300m"},
       "lowerBound": {"cpu": "250m"}, "upperBound": {"cpu": "400m"},
       "uncappedTarget": {"cpu": "300m"}}]}})");
}
}  // namespace

TEST_CASE("VPA's long-lived rule: over 12 h and more than 10 % from the target, within bounds") {
  auto scaler = recommended_300m();
  auto recommendations = recommendations_of(scaler);
  controller::InPlaceRules rules;
  rules.now = *recommender::parse_rfc3339("2026-12-03T12:00:00Z");
  auto started = [](const char* request, const char* start) {
    json p = pod("p", cpu(request), cpu(request));
    p["status"]["startTime"] = start;
    return p;
  };
  // 350m is within [250m, 400m] and 16.7 % above 300m.
  auto plan = controller::plan_in_place(scaler, {started("350m", "2026-12-02T23:00:00Z")},
                                        recommendations, nullptr, rules);
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  CHECK(plan.pods[0].recommended_due);
  CHECK(plan.pods[0].message ==
        "the pod has run over 12 h with its cpu requests more than 10 % from the target");
  // Younger than 12 h: left alone.
  plan = controller::plan_in_place(scaler, {started("350m", "2026-12-03T01:00:00Z")},
                                   recommendations, nullptr, rules);
  CHECK(plan.pods[0].state == PodResizeState::kAtTarget);
  // Old, but 320m is within 10 %.
  plan = controller::plan_in_place(scaler, {started("320m", "2026-12-01T00:00:00Z")},
                                   recommendations, nullptr, rules);
  CHECK(plan.pods[0].state == PodResizeState::kAtTarget);
  // --in-recommendation-bounds-eviction-lifetime-threshold 30s: a pod 40 s old is due.
  rules.long_lived = std::chrono::seconds(30);
  plan = controller::plan_in_place(scaler, {started("350m", "2026-12-03T11:59:20Z")},
                                   recommendations, nullptr, rules);
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  CHECK(plan.pods[0].message ==
        "the pod has run over 30 s with its cpu requests more than 10 % from the target");
}

TEST_CASE("VPA's quick-OOM rule: a container OOM-killed soon after it started makes the pod due") {
  auto scaler = recommended_300m();
  auto recommendations = recommendations_of(scaler);
  auto oom = [](const char* started, const char* finished) {
    json p = pod("p", cpu("350m"), cpu("350m"));
    p["status"]["containerStatuses"][0]["lastState"] = {
        {"terminated",
         {{"reason", "OOMKilled"}, {"startedAt", started}, {"finishedAt", finished}}}};
    return p;
  };
  auto plan = controller::plan_in_place(
      scaler, {oom("2026-12-03T10:00:00Z", "2026-12-03T10:02:00Z")}, recommendations);
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  CHECK(plan.pods[0].message == "container app was OOM-killed 120 s after it started");
  CHECK(plan.pods[0].recommended_due);
  CHECK(plan.pods[0].quick_oom_at == *recommender::parse_rfc3339("2026-12-03T10:02:00Z"));
  // Of several containers' quick OOMs, the newest is the one to answer.
  json two = oom("2026-12-03T10:00:00Z", "2026-12-03T10:02:00Z");
  json worker = two["status"]["containerStatuses"][0];
  worker["name"] = "worker";
  worker["lastState"]["terminated"]["startedAt"] = "2026-12-03T10:04:00Z";
  worker["lastState"]["terminated"]["finishedAt"] = "2026-12-03T10:05:00Z";
  two["status"]["containerStatuses"].push_back(worker);
  plan = controller::plan_in_place(scaler, {two}, recommendations);
  CHECK(plan.pods[0].quick_oom_at == *recommender::parse_rfc3339("2026-12-03T10:05:00Z"));
  CHECK(plan.pods[0].message == "container worker was OOM-killed 60 s after it started");
  plan = controller::plan_in_place(scaler, {oom("2026-12-03T10:00:00Z", "2026-12-03T10:30:00Z")},
                                   recommendations);
  CHECK(plan.pods[0].state == PodResizeState::kAtTarget);
  // The OOM stays in lastState for the pod's life: once a resize for a recommendation came after
  // it, it makes the pod due no more, however long ago that resize was. An OOM after it does.
  std::map<std::string, recommender::TimePoint> resized_at{
      {"uid-p", *recommender::parse_rfc3339("2026-12-03T10:10:00Z")}};
  controller::InPlaceRules answered;
  answered.now = *recommender::parse_rfc3339("2026-12-04T10:00:00Z");
  answered.resized_at = &resized_at;
  plan = controller::plan_in_place(scaler, {oom("2026-12-03T10:00:00Z", "2026-12-03T10:02:00Z")},
                                   recommendations, nullptr, answered);
  CHECK(plan.pods[0].state == PodResizeState::kAtTarget);
  resized_at["uid-p"] = *recommender::parse_rfc3339("2026-12-03T10:01:00Z");
  plan = controller::plan_in_place(scaler, {oom("2026-12-03T10:00:00Z", "2026-12-03T10:02:00Z")},
                                   recommendations, nullptr, answered);
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  CHECK(plan.pods[0].message == "container app was OOM-killed 120 s after it started");
}

TEST_CASE(
    "a ResourceQuota's headroom caps recommended resizes, pod after pod; none left: reported") {
  auto scaler = recommended_300m();
  auto recommendations = recommendations_of(scaler);
  // Three pods at 100m, each due for 300m (+200m each); 250m of requests.cpu left.
  auto plan = controller::plan_in_place(scaler, pods_at_100m({"a", "b", "c"}), recommendations,
                                        nullptr, {}, cpu_headroom("250m"));
  REQUIRE(plan.total() == 3);
  // a: the whole +200m; b: the 50m left (150m); c: nothing left.
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  CHECK(patched_cpu(plan.pods[0]) == "300m");
  CHECK(plan.pods[1].state == PodResizeState::kDue);
  CHECK(patched_cpu(plan.pods[1]) == "150m");
  CHECK(plan.pods[1].message.find("capped to the namespace's ResourceQuota headroom") !=
        std::string::npos);
  CHECK(plan.pods[2].state == PodResizeState::kInfeasible);
  CHECK(plan.pods[2].quota);
  CHECK(plan.pods[2].message.find("ResourceQuota leaves no room") != std::string::npos);
  CHECK_FALSE(controller::evictable(plan.pods[2], "Deployment", recommender::from_millis(0)));
  REQUIRE(plan.quota_left.has_value());
  CHECK(plan.quota_left->requests.at("cpu").to_string() == "0");
  // Without a quota: all three to 300m.
  plan = controller::plan_in_place(scaler, pods_at_100m({"a"}), recommendations);
  CHECK_FALSE(plan.quota_left.has_value());
  CHECK(patched_cpu(plan.pods[0]) == "300m");
}

TEST_CASE(
    "a pod held by --min-update-interval leaves its share of the quota to the pods after it") {
  auto scaler = recommended_300m();
  auto recommendations = recommendations_of(scaler);
  // Two pods at 100m, each due for 300m (+200m each); 250m of requests.cpu left. Pod a was
  // resized for a recommendation 2 minutes ago, within the 10-minute interval: held.
  ResizedAgo held("uid-a", std::chrono::minutes(2));
  controller::InPlaceRules& rules = held.rules;
  const auto now = held.now;
  auto plan = controller::plan_in_place(scaler, pods_at_100m({"a", "b"}), recommendations, nullptr,
                                        rules, cpu_headroom("250m"));
  REQUIRE(plan.total() == 2);
  CHECK(plan.pods[0].state == PodResizeState::kHeld);
  CHECK(plan.pods[0].since == now - std::chrono::minutes(2));
  CHECK(plan.pods[0].message.find("(--min-update-interval)") != std::string::npos);
  CHECK(plan.held == 1);
  CHECK(plan.pending == 1);
  // b gets the whole +200m: a's growth is not counted while it waits.
  CHECK(plan.pods[1].state == PodResizeState::kDue);
  CHECK(patched_cpu(plan.pods[1]) == "300m");
  CHECK(plan.in_progress == 1);
  CHECK(plan.quota_left->requests.at("cpu").to_string() == "50m");
  // Once the interval is over, a goes first and takes its share again.
  rules.now = now + std::chrono::minutes(9);
  plan = controller::plan_in_place(scaler, pods_at_100m({"a", "b"}), recommendations, nullptr,
                                   rules, cpu_headroom("250m"));
  CHECK(plan.pods[0].state == PodResizeState::kDue);
  CHECK(patched_cpu(plan.pods[1]) == "150m");
}

TEST_CASE("a resize the quota cannot hold once the pod-level values are kept valid is not sent") {
  // A Burstable pod at pod level (requests 500m, 1Gi; limits 1, 1Gi), app at 100m, due for 1:
  // 500m of requests.cpu and no limits.cpu left. The pod-level request rises to 1, and its cpu
  // limit to 1001m so that the pod stays Burstable: above what limits.cpu leaves.
  auto scaler = scaler_from(R"([{"name": "app"}])", R"({"recommendation":
      {"containerRecommendations": [{"containerName": "app", "target": {"cpu": "1"},
       "lowerBound": {"cpu": "900m"}, "upperBound": {"cpu": "2"},
       "uncappedTarget": {"cpu": "1"}}]}})");
  json p = pod("p", cpu("100m"), cpu("100m"));
  p["spec"]["resources"] = json::parse(R"({"requests": {"cpu": "500m", "memory": "1Gi"},
      "limits": {"cpu": "1", "memory": "1Gi"}})");
  recommender::PodTotals headroom = cpu_headroom("900m");
  headroom.limits.emplace("cpu", kube::Quantity::parse("0").value());
  auto plan =
      controller::plan_in_place(scaler, {p}, recommendations_of(scaler), nullptr, {}, headroom);
  REQUIRE(plan.total() == 1);
  CHECK(plan.pods[0].state == PodResizeState::kInfeasible);
  CHECK(plan.pods[0].quota);
  CAPTURE(plan.pods[0].message);
  CHECK(plan.pods[0].message.find(
            "ResourceQuota has room for less: limits.cpu 1m above the 0 left") !=
        std::string::npos);
  // Resized for a recommendation a minute ago: held by the rate limit first, not reported.
  ResizedAgo held("uid-p", std::chrono::minutes(1));
  CHECK(controller::plan_in_place(scaler, {p}, recommendations_of(scaler), nullptr, held.rules,
                                  headroom)
            .pods[0]
            .state == PodResizeState::kHeld);
  // With room on limits.cpu it goes, the pod kept Burstable.
  headroom.limits.at("cpu") = kube::Quantity::parse("1").value();
  plan = controller::plan_in_place(scaler, {p}, recommendations_of(scaler), nullptr, {}, headroom);
  REQUIRE(plan.pods[0].state == PodResizeState::kDue);
  CHECK(plan.pods[0].patch["spec"]["resources"]["limits"]["cpu"] == "1001m");
}

TEST_CASE("pod-level resources the containers outgrow are raised in the same resize") {
  auto scaler = scaler_from(R"([{"name": "app", "requests": {"cpu": "300m"}}])");
  json p = pod("pl", cpu("100m"), cpu("100m"));
  p["spec"]["resources"] = json::parse(R"({"requests": {"cpu": "200m"}})");
  auto plan = controller::plan_in_place(scaler, {p}, {});
  REQUIRE(plan.pods[0].state == PodResizeState::kDue);
  CHECK(plan.pods[0].patch["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "300m");
  CHECK(plan.pods[0].patch["spec"]["resources"]["requests"]["cpu"] == "300m");
  // Within the pod-level values: only the containers.
  p["spec"]["resources"] = json::parse(R"({"requests": {"cpu": "500m"}})");
  plan = controller::plan_in_place(scaler, {p}, {});
  CHECK_FALSE(plan.pods[0].patch["spec"].contains("resources"));
}

TEST_CASE("a QoS-changing resize of a pod resized a minute ago is held first, never reported") {
  // Held by --min-update-interval before anything else: not Infeasible, so not evicted either.
  auto scaler = recommended_300m();
  json best_effort = pod("a", json::object(), json::object());
  ResizedAgo held("uid-a", std::chrono::minutes(1));
  auto plan = controller::plan_in_place(scaler, {best_effort}, recommendations_of(scaler), nullptr,
                                        held.rules);
  CHECK(plan.pods[0].state == PodResizeState::kHeld);
  held.rules.now += std::chrono::minutes(10);
  plan = controller::plan_in_place(scaler, {best_effort}, recommendations_of(scaler), nullptr,
                                   held.rules);
  CHECK(plan.pods[0].state == PodResizeState::kInfeasible);
  CHECK(plan.pods[0].message.find("QoS class") != std::string::npos);
}
