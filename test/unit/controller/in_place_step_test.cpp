// InPlaceStep against a fake ReconcileApi (the one faked collaborator): which pods it lists and
// keeps, what it sends to pods/resize, what a refusal becomes, that a follower sends nothing, the
// re-check backoff, and transitions counted once. The kubelet's side is e2e (in_place_resize_test).
#include "controller/in_place_step.h"

#include <doctest/doctest.h>

#include <map>

#include "recommender/desired.h"
#include "test/unit/support/fake_pods_api.h"

using nlohmann::json;
using namespace vscaler;
using controller::PodResizeState;

namespace {

using FakeApi = vscaler::test::FakePodsApi;

struct Metrics : controller::ResizeMetrics {
  std::map<std::string, int> counts;
  void on_pod_resize(const char* result) override { ++counts[result]; }
};

json pod(const std::string& name, const char* owner_kind, const std::string& owner,
         const char* cpu) {
  json resources = {{"requests", {{"cpu", cpu}}}};
  return {{"metadata",
           {{"name", name},
            {"uid", "uid-" + name},
            {"generation", 1},
            {"labels", {{"app", "web"}, {"pod-template-hash", "7f9c"}}},
            {"ownerReferences", json::array({{{"apiVersion", "apps/v1"},
                                              {"kind", owner_kind},
                                              {"name", owner},
                                              {"controller", true}}})}}},
          {"spec", {{"containers", json::array({{{"name", "app"}, {"resources", resources}}})}}},
          {"status",
           {{"phase", "Running"},
            {"observedGeneration", 1},
            {"containerStatuses", json::array({{{"name", "app"}, {"resources", resources}}})}}}};
}

api::Scaler scaler(const char* cpu) {
  json object = {
      {"metadata", {{"name", "web"}, {"namespace", "shop"}}},
      {"spec",
       {{"deploymentName", "web"},
        {"updateMode", "InPlace"},
        {"containers", json::array({{{"name", "app"}, {"requests", {{"cpu", cpu}}}}})}}}};
  auto parsed = api::parse_scaler(object);
  REQUIRE(parsed.ok());
  return *parsed;
}

/// A scaler in InPlace whose container app has a stored recommendation of cpu `target` within
/// [`lower`, `upper`].
api::Scaler recommended(const char* target, const char* lower = "250m",
                        const char* upper = "400m") {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec", {{"deploymentName", "web"}, {"updateMode", "InPlace"}}}};
  object["status"]["recommendation"]["containerRecommendations"] =
      json::array({{{"containerName", "app"},
                    {"target", {{"cpu", target}}},
                    {"lowerBound", {{"cpu", lower}}},
                    {"upperBound", {{"cpu", upper}}},
                    {"uncappedTarget", {{"cpu", target}}}}});
  auto parsed = api::parse_scaler(object);
  REQUIRE(parsed.ok());
  return *parsed;
}

/// Two running pods of the workload at 100m, and a step with its API and metrics.
struct TwoPods {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step{api, metrics};
  TwoPods() {
    for (const char* name : {"web-7f9c-a", "web-7f9c-b"}) {
      api.pods[name] = pod(name, "ReplicaSet", "web-7f9c", "100m");
    }
  }
};

const json kWorkload = {{"spec", {{"selector", {{"matchLabels", {{"app", "web"}}}}}}}};

}  // namespace

TEST_CASE("the workload's own running pods are resized; others matching its selector are not") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
  api.pods["web-7f9c-b"] = pod("web-7f9c-b", "ReplicaSet", "web-7f9c", "300m");
  api.pods["other-7f9c-c"] = pod("other-7f9c-c", "ReplicaSet", "other-7f9c", "100m");
  auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  REQUIRE(result.ok());
  CHECK(api.last_selector == "app=web");
  CHECK(result->plan.total() == 2);
  CHECK(api.resized == std::vector<std::string>{"web-7f9c-a"});
  CHECK(result->requested == 1);
  CHECK(result->plan.pods[0].state == PodResizeState::kInProgress);
  CHECK(result->recheck_after == std::chrono::seconds(1));
  CHECK(metrics.counts["requested"] == 1);
  // Not done yet: looked at again later, not resent, and the backoff grows.
  result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  CHECK(api.resized.size() == 1);
  CHECK(result->recheck_after == std::chrono::seconds(2));
  // Done: counted completed once, nothing polls.
  api.kubelet_done();
  result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  CHECK(result->plan.at_target == 2);
  CHECK(result->recheck_after == std::chrono::milliseconds(0));
  CHECK(metrics.counts["completed"] == 1);
  result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  CHECK(metrics.counts["completed"] == 1);
}

TEST_CASE("a follower decides and reports, and sends nothing") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
  auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, false);
  REQUIRE(result.ok());
  CHECK(api.resized.empty());
  CHECK(result->plan.pods[0].state == PodResizeState::kDue);
  // What the kubelet reports is seen, but counted by the leader only (once, not per replica).
  api.pods["web-7f9c-b"] = pod("web-7f9c-b", "ReplicaSet", "web-7f9c", "300m");
  api.pods["web-7f9c-b"]["status"]["conditions"] = json::array({{{"type", "PodResizePending"},
                                                                 {"status", "True"},
                                                                 {"reason", "Infeasible"},
                                                                 {"message", "node too small"}}});
  result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, false);
  CHECK(result->plan.pods[1].state == PodResizeState::kInfeasible);
  CHECK(metrics.counts["infeasible"] == 0);
  CHECK(result->plan.in_progress == 1);
}

TEST_CASE("a resize the API server refuses is reported, and not sent again unchanged for a while") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
  api.refuse = true;
  const recommender::TimePoint now{std::chrono::hours(1000)};
  auto result = step.run(scaler("64"), kWorkload, {}, nullptr, {}, true, now);
  REQUIRE(result.ok());
  CHECK(result->plan.pending == 1);
  CHECK(result->plan.in_progress == 0);
  CHECK(result->plan.pods[0].state == PodResizeState::kInfeasible);
  CHECK(result->plan.pods[0].refused);
  CHECK(result->plan.pods[0].message.find("NodeCapacity") != std::string::npos);
  CHECK(result->recheck_after == std::chrono::seconds(1));
  CHECK(metrics.counts["infeasible"] == 1);
  // The same patch is held back (the refusal stands, counted once), not resent at every re-check.
  api.refuse = false;
  result = step.run(scaler("64"), kWorkload, {}, nullptr, {}, true, now + std::chrono::seconds(30));
  CHECK(api.resized.empty());
  CHECK(result->plan.pods[0].state == PodResizeState::kInfeasible);
  CHECK(result->plan.pods[0].refused);
  CHECK(result->plan.pods[0].node_capacity);
  CHECK(result->plan.pods[0].message.find("sent again when the values change") !=
        std::string::npos);
  CHECK(metrics.counts["infeasible"] == 1);
  // Other values are a new attempt.
  result = step.run(scaler("32"), kWorkload, {}, nullptr, {}, true, now + std::chrono::seconds(60));
  CHECK(api.resized == std::vector<std::string>{"web-7f9c-a"});
  CHECK(result->plan.pods[0].state == PodResizeState::kInProgress);
}

TEST_CASE("a refused patch is sent again once kRefusedResizeRetry has passed") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
  api.refuse = true;
  const recommender::TimePoint now{std::chrono::hours(1000)};
  REQUIRE(step.run(scaler("64"), kWorkload, {}, nullptr, {}, true, now).ok());
  api.refuse = false;
  auto later = now + controller::kRefusedResizeRetry;
  auto result = step.run(scaler("64"), kWorkload, {}, nullptr, {}, true, later);
  CHECK(api.resized == std::vector<std::string>{"web-7f9c-a"});
  CHECK(result->plan.pods[0].state == PodResizeState::kInProgress);
}

namespace {

/// Two running pods of 100m (web-7f9c-a and -b) in `api`, and their workload of 2 replicas, whose
/// scaler in InPlaceOrRecreate wants 300m.
struct TwoPodsTo300m {
  api::Scaler recreate = scaler("300m");
  json workload = {{"spec", {{"replicas", 2}, {"selector", kWorkload["spec"]["selector"]}}}};
  explicit TwoPodsTo300m(FakeApi& api) {
    for (const char* name : {"web-7f9c-a", "web-7f9c-b"}) {
      api.pods[name] = pod(name, "ReplicaSet", "web-7f9c", "100m");
    }
    recreate.update_mode = api::UpdateMode::kInPlaceOrRecreate;
  }
};

}  // namespace

namespace {

/// A step over TwoPodsTo300m whose resize calls all fail with `kind` and `message`.
struct FailingResizes {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step{api, metrics};
  TwoPodsTo300m pods{api};
  FailingResizes(kube::ErrorKind kind, std::string message) {
    api.refuse = true;
    api.refusal_kind = kind;
    api.refusal = std::move(message);
  }
  kube::Result<controller::InPlaceResult, kube::ApiError> run(recommender::TimePoint now) {
    return step.run(pods.recreate, pods.workload, {}, nullptr, {}, true, now);
  }
};

const recommender::TimePoint kNow{std::chrono::hours(1000)};

}  // namespace

TEST_CASE("a failed resize call (5xx, 429, timeout) is not a refusal: retried, never evicted") {
  for (auto kind : {kube::ErrorKind::kServerError, kube::ErrorKind::kTooManyRequests,
                    kube::ErrorKind::kTimeout}) {
    CAPTURE(static_cast<int>(kind));
    FailingResizes test(kind, "the server is currently unable to handle the request");
    auto result = test.run(kNow);
    REQUIRE(result.ok());
    CHECK(test.api.calls == 2);
    CHECK(test.api.evicted.empty());
    CHECK(result->plan.pods[0].state == PodResizeState::kDue);
    CHECK_FALSE(result->plan.pods[0].refused);
    CHECK(result->plan.in_progress == 2);
    CHECK(result->plan.pending == 0);
    CHECK(result->recheck_after > std::chrono::milliseconds(0));
    CHECK(test.metrics.counts["infeasible"] == 0);
    // Answered at the first re-check after kCallFailedRecheck: sent, not held back.
    test.api.refuse = false;
    result = test.run(kNow + controller::kCallFailedRecheck);
    CHECK(test.api.resized.size() == 2);
    CHECK(result->plan.in_progress == 2);
  }
}

TEST_CASE("a failed call is sent again after kCallFailedRecheck, or the Retry-After up to a cap") {
  using std::chrono::seconds;
  struct Case {
    std::optional<seconds> retry_after;
    seconds wait;
  };
  for (const Case& expected :
       {Case{std::nullopt, controller::kCallFailedRecheck}, Case{seconds(20), seconds(20)},
        Case{seconds(600), controller::kCallFailedMaxWait}}) {
    CAPTURE(expected.wait.count());
    FailingResizes test(kube::ErrorKind::kTooManyRequests, "too many requests");
    test.api.refusal_retry_after = expected.retry_after;
    auto failed = test.run(kNow);
    REQUIRE(failed.ok());
    REQUIRE(test.api.calls == 2);
    // Not looked at again before the wait is over (each look lists the pods).
    CHECK(failed->recheck_after == expected.wait);
    // Re-checked before the wait is over anyway (another event of the workload): still due, nothing
    // sent, the answer shown.
    test.api.refuse = false;
    auto result = test.run(kNow + expected.wait - seconds(1));
    REQUIRE(result.ok());
    CHECK(test.api.calls == 2);
    CHECK(result->plan.pods[0].state == PodResizeState::kDue);
    CHECK(result->plan.in_progress == 2);
    CHECK(result->plan.pods[0].message.find("too many requests") != std::string::npos);
    CHECK(result->plan.pods[0].message.find("sent again at") != std::string::npos);
    result = test.run(kNow + expected.wait);
    CHECK(test.api.resized.size() == 2);
    CHECK(result->plan.pods[0].state == PodResizeState::kInProgress);
  }
}

TEST_CASE("a failed call's wait holds back that patch only: other values go at once") {
  FailingResizes test(kube::ErrorKind::kTooManyRequests, "too many requests");
  test.api.refusal_retry_after = std::chrono::seconds(60);
  REQUIRE(test.run(kNow).ok());
  REQUIRE(test.api.calls == 2);
  test.api.refuse = false;
  test.pods.recreate = scaler("400m");  // the user changed the fixed value
  test.pods.recreate.update_mode = api::UpdateMode::kInPlaceOrRecreate;
  auto result = test.run(kNow + std::chrono::seconds(1));
  REQUIRE(result.ok());
  CHECK(test.api.resized.size() == 2);
}

TEST_CASE("a resize no retry mends (404: no pods/resize on this API server) is a refusal") {
  FailingResizes test(kube::ErrorKind::kNotFound,
                      "the server could not find the requested resource");
  auto result = test.run(kNow);
  REQUIRE(result.ok());
  CHECK(result->plan.pods[0].refused);
  CHECK(result->plan.pending == 2);
  CHECK(test.api.evicted.size() == 1);  // InPlaceOrRecreate: recreated sized, one pod at a time
}

TEST_CASE("a pod replaced between the list and its eviction (same name, new uid) is kept") {
  // A StatefulSet's pod is re-created under its name, sized at admission: the eviction names the
  // uid listed, so the API server refuses it (409) instead of evicting the newcomer.
  FailingResizes test(kube::ErrorKind::kNotFound,
                      "the server could not find the requested resource");
  std::vector<std::string> asked;
  test.api.on_evict = [&](const std::string& name) {
    asked.push_back(name);
    test.api.pods[name]["metadata"]["uid"] = "uid-of-the-replacement";
  };
  auto result = test.run(kNow);
  REQUIRE(result.ok());
  CHECK(asked.size() == 1);
  CHECK(test.api.evicted.empty());
  CHECK(test.api.pods.size() == 2);
}

TEST_CASE("a pod deleted between the list and its resize (404 naming it) is no refusal") {
  FailingResizes test(kube::ErrorKind::kNotFound, "pods not found");
  test.api.refusal_names_pod = true;
  auto result = test.run(kNow);
  REQUIRE(result.ok());
  for (const auto& pod : result->plan.pods) {
    CHECK_FALSE(pod.refused);
    CHECK(pod.message == "the pod is gone");
  }
  CHECK(test.api.evicted.empty());
  CHECK(test.metrics.counts["infeasible"] == 0);
}

TEST_CASE("InPlaceOrRecreate evicts a refused pod only while the whole workload runs") {
  TwoPods test;
  auto& [api, metrics, step] = test;
  api::Scaler recreate = scaler("64");
  recreate.update_mode = api::UpdateMode::kInPlaceOrRecreate;
  const json selector = kWorkload["spec"]["selector"];
  const recommender::TimePoint now{std::chrono::hours(1000)};
  api.refuse = true;
  // Three replicas wanted, two listed: one is still to come (an evicted pod's replacement, or
  // a pod the boost step holds while it starts). Nothing is evicted meanwhile.
  auto result = step.run(recreate, {{"spec", {{"replicas", 3}, {"selector", selector}}}}, {},
                         nullptr, {}, true, now);
  REQUIRE(result.ok());
  CHECK(result->plan.starting == 1);
  CHECK(result->plan.pending == 2);
  CHECK(api.evicted.empty());
  // Whole (two of two running): one pod, and only one, is evicted.
  result = step.run(recreate, {{"spec", {{"replicas", 2}, {"selector", selector}}}}, {}, nullptr,
                    {}, true, now + std::chrono::seconds(1));
  REQUIRE(result.ok());
  CHECK(api.evicted.size() == 1);
  CHECK(result->evicted == 1);
}

TEST_CASE("InPlaceOrRecreate: a finished pod still listed does not keep the workload from whole") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  auto [recreate, workload] = TwoPodsTo300m(api);
  // Evicted by the kubelet under node pressure a day ago: Failed, kept until garbage collected.
  api.pods["web-7f9c-c"] = pod("web-7f9c-c", "ReplicaSet", "web-7f9c", "100m");
  api.pods["web-7f9c-c"]["status"]["phase"] = "Failed";
  api.refuse = true;
  auto result = step.run(recreate, workload, {}, nullptr, {}, true, kNow);
  REQUIRE(result.ok());
  CHECK(result->plan.pending == 2);
  CHECK(api.evicted.size() == 1);
  // Being deleted, it counts until it is gone, whatever its phase: nothing more is evicted.
  api.pods["web-7f9c-c"] = pod("web-7f9c-c", "ReplicaSet", "web-7f9c", "100m");
  api.pods["web-7f9c-c"]["status"]["phase"] = "Failed";
  api.pods["web-7f9c-c"]["metadata"]["deletionTimestamp"] = "2026-12-03T10:00:00Z";
  api.pods["web-7f9c-d"] = pod("web-7f9c-d", "ReplicaSet", "web-7f9c", "100m");
  result = step.run(recreate, workload, {}, nullptr, {}, true, kNow + std::chrono::seconds(1));
  REQUIRE(result.ok());
  CHECK(api.evicted.size() == 1);
}

TEST_CASE("InPlaceOrRecreate evicts a pod whose resize has been in progress for over an hour") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  auto [recreate, workload] = TwoPodsTo300m(api);
  // The kubelet took up web-7f9c-a's resize to 300m an hour and a minute ago, and is still at it.
  json& stuck = api.pods["web-7f9c-a"];
  stuck["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "300m";
  stuck["metadata"]["generation"] = 2;
  stuck["status"]["observedGeneration"] = 2;
  stuck["status"]["conditions"] = json::array(
      {{{"type", "PodResizeInProgress"},
        {"status", "True"},
        {"lastTransitionTime", recommender::format_rfc3339(kNow - std::chrono::minutes(61))}}});
  // web-7f9c-b is resized at once: both in progress, nothing pending.
  auto result = step.run(recreate, workload, {}, nullptr, {}, true, kNow);
  REQUIRE(result.ok());
  CHECK(result->plan.pending == 0);
  CHECK(result->plan.in_progress == 2);
  CHECK(api.evicted == std::vector<std::string>{"web-7f9c-a"});
}

TEST_CASE("a workload without a usable selector is an error, not a list of the namespace") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  auto result = step.run(scaler("300m"), json{{"spec", json::object()}}, {}, nullptr, {}, true);
  CHECK_FALSE(result.ok());
  CHECK(api.last_selector.empty());
}

TEST_CASE("a recommendation resizes one pod at most once per --min-update-interval") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics, std::chrono::minutes(10));
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
  const auto t0 = *recommender::parse_rfc3339("2026-12-03T10:00:00Z");
  auto first = recommended("300m", "250m", "400m");
  auto result =
      step.run(first, kWorkload, *recommender::recommendations_of(first), nullptr, {}, true, t0);
  REQUIRE(result.ok());
  CHECK(api.resized.size() == 1);
  api.kubelet_done();
  // 5 minutes later the recommendation moved far above: held until t0 + 10 min.
  auto second = recommended("900m", "800m", "1");
  result = step.run(second, kWorkload, *recommender::recommendations_of(second), nullptr, {}, true,
                    t0 + std::chrono::minutes(5));
  CHECK(api.resized.size() == 1);
  CHECK(result->plan.pods[0].state == PodResizeState::kHeld);
  CHECK(result->plan.held == 1);
  CHECK(result->recheck_after == std::chrono::minutes(5));
  result = step.run(second, kWorkload, *recommender::recommendations_of(second), nullptr, {}, true,
                    t0 + std::chrono::minutes(10));
  CHECK(api.resized.size() == 2);
  // Fixed values are never held.
  api.kubelet_done();
  result = step.run(scaler("50m"), kWorkload, {}, nullptr, {}, true, t0 + std::chrono::minutes(11));
  CHECK(api.resized.size() == 3);
}

TEST_CASE("a quick OOM resizes its pod at once, once: later moves within the bounds leave it") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics, std::chrono::minutes(10));
  auto oom_killed = [&](const char* started, const char* finished) {
    api.pods["web-7f9c-a"]["status"]["containerStatuses"][0]["lastState"] = {
        {"terminated",
         {{"reason", "OOMKilled"}, {"startedAt", started}, {"finishedAt", finished}}}};
  };
  auto run = [&](const char* target, const char* now) {
    auto scaler = recommended(target);
    auto result = step.run(scaler, kWorkload, *recommender::recommendations_of(scaler), nullptr, {},
                           true, *recommender::parse_rfc3339(now));
    REQUIRE(result.ok());
    return *result;
  };
  // 350m is within the bounds: only the quick OOM makes the pod due.
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "350m");
  oom_killed("2026-12-03T09:59:00Z", "2026-12-03T10:00:00Z");
  run("300m", "2026-12-03T10:05:00Z");
  CHECK(api.resized.size() == 1);
  api.kubelet_done();
  // The same OOM, still in lastState, was answered by that resize: a target moved within the
  // bounds leaves the pod alone, a minute later and past --min-update-interval alike.
  auto result = run("320m", "2026-12-03T10:06:00Z");
  CHECK(api.resized.size() == 1);
  CHECK(result.plan.pods[0].state == PodResizeState::kAtTarget);
  result = run("320m", "2026-12-03T11:00:00Z");
  CHECK(api.resized.size() == 1);
  CHECK(result.plan.pods[0].state == PodResizeState::kAtTarget);
  // A new quick OOM is answered at once.
  oom_killed("2026-12-03T11:00:10Z", "2026-12-03T11:00:30Z");
  run("320m", "2026-12-03T11:01:00Z");
  CHECK(api.resized.size() == 2);
}

namespace {
/// One pod at 100m whose resizes the API server refuses for its ResourceQuota.
struct QuotaRefused {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step{api, metrics};
  QuotaRefused() {
    api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
    api.refuse = true;
    api.refusal =
        "pods \"web-7f9c-a\" is forbidden: exceeded quota: cpu, requested: requests.cpu=200m, "
        "used: requests.cpu=1, limited: requests.cpu=1";
  }
};
}  // namespace

TEST_CASE("a resize refused by the ResourceQuota is marked quota, never a node's capacity") {
  QuotaRefused test;
  auto& [api, metrics, step] = test;
  recommender::PodTotals headroom;
  headroom.requests.emplace("cpu", kube::Quantity::parse("100m").value());
  const recommender::TimePoint now{std::chrono::hours(1000)};
  auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, headroom, true, now);
  REQUIRE(result.ok());
  CHECK(result->plan.pods[0].quota);
  CHECK_FALSE(result->plan.pods[0].node_capacity);
  CHECK(result->plan.pods[0].state == PodResizeState::kInfeasible);
  CHECK(api.calls == 1);
  // The namespace as it was: the same patch would be refused the same way, so it waits.
  api.refuse = false;
  result = step.run(scaler("300m"), kWorkload, {}, nullptr, headroom, true,
                    now + std::chrono::seconds(30));
  CHECK(api.calls == 1);
  CHECK(result->plan.pods[0].quota);
  CHECK(result->plan.pods[0].message.find("sent again when the values, the namespace's quota "
                                          "headroom or its LimitRange change") !=
        std::string::npos);
  // Less room (another pod grew) cannot take it either.
  recommender::PodTotals less;
  less.requests.emplace("cpu", kube::Quantity::parse("50m").value());
  result =
      step.run(scaler("300m"), kWorkload, {}, nullptr, less, true, now + std::chrono::seconds(40));
  CHECK(api.calls == 1);
  CHECK(result->plan.pods[0].quota);
  // Unlike a node's refusal, it goes as soon as the namespace offers more: the quota deleted.
  result =
      step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true, now + std::chrono::seconds(60));
  CHECK(api.resized == std::vector<std::string>{"web-7f9c-a"});
  CHECK(result->plan.pods[0].state == PodResizeState::kInProgress);
}

TEST_CASE("a ResourceQuota's refusal while no quota was known here is not held back") {
  // The quota list lags the API server's: refused under a quota this process has not listed yet,
  // then the quota deleted before it did. Nothing it knew changed, yet the patch must go.
  QuotaRefused test;
  auto& [api, metrics, step] = test;
  const recommender::TimePoint now{std::chrono::hours(1000)};
  auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true, now);
  REQUIRE(result.ok());
  CHECK(result->plan.pods[0].quota);
  api.refuse = false;
  result =
      step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true, now + std::chrono::seconds(30));
  CHECK(api.resized == std::vector<std::string>{"web-7f9c-a"});
}

TEST_CASE("a resize the LimitRange refuses is marked quota too (reported, never evicted)") {
  for (const char* refusal :
       {"pods \"web-7f9c-a\" is forbidden: maximum cpu usage per Container is 1, but limit is 2",
        "pods \"web-7f9c-a\" is forbidden: maximum memory usage per Pod is 1Gi, but limit is "
        "2147483648"}) {
    CAPTURE(refusal);
    FakeApi api;
    Metrics metrics;
    controller::InPlaceStep step(api, metrics);
    api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
    api.refuse = true;
    api.refusal = refusal;
    auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
    REQUIRE(result.ok());
    CHECK(result->plan.pods[0].quota);
    CHECK_FALSE(result->plan.pods[0].node_capacity);
    CHECK(result->plan.pods[0].state == PodResizeState::kInfeasible);
  }
}

TEST_CASE("under a quota, a pod whose refused patch waits leaves its share to the pods after it") {
  TwoPods test;
  auto& [api, metrics, step] = test;
  // Both due for 300m (+200m each), 250m of requests.cpu left: a gets 300m, b the 150m left,
  // and the node refuses both.
  recommender::PodTotals headroom;
  headroom.requests.emplace("cpu", kube::Quantity::parse("250m").value());
  auto scaler = recommended("300m");
  auto recommendations = *recommender::recommendations_of(scaler);
  const recommender::TimePoint now{std::chrono::hours(1000)};
  api.refuse = true;
  auto result = step.run(scaler, kWorkload, recommendations, nullptr, headroom, true, now);
  REQUIRE(result.ok());
  CHECK(api.calls == 2);
  // 30 s later a's refused patch still waits, so b may take the whole +200m: sent at 300m.
  api.refuse = false;
  result = step.run(scaler, kWorkload, recommendations, nullptr, headroom, true,
                    now + std::chrono::seconds(30));
  CHECK(api.resized == std::vector<std::string>{"web-7f9c-b"});
  CHECK(api.pods["web-7f9c-b"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "300m");
  CHECK(result->plan.pods[0].refused);
  CHECK(result->plan.quota_left->requests.at("cpu").to_string() == "50m");
}

TEST_CASE("the API server's PodResizeValidator refusal (cause NodeCapacity) is the node's room") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
  api.refuse = true;
  // As Kubernetes 1.36 words it: the cause type carries the name, the message does not.
  api.refusal =
      "pods \"web-7f9c-a\" is forbidden: node didn't have enough allocatable resources: cpu, "
      "requested: 3000, allocatable: 1000";
  api.refusal_cause = "NodeCapacity";
  auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  REQUIRE(result.ok());
  CHECK(result->plan.pods[0].node_capacity);
  CHECK_FALSE(result->plan.pods[0].quota);
  CHECK(result->plan.pods[0].state == PodResizeState::kInfeasible);
}

TEST_CASE("pods still to come or starting are waited for: a new pod is resized once it runs") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "300m");
  json workload = kWorkload;
  workload["spec"]["replicas"] = 2;
  // One pod carries the values; the second is not even listed yet (admitted a moment ago).
  auto result = step.run(scaler("300m"), workload, {}, nullptr, {}, true);
  REQUIRE(result.ok());
  CHECK(result->plan.starting == 1);
  CHECK(result->recheck_after == std::chrono::seconds(1));
  // Listed, Pending: still starting, looked at again later.
  json pending = pod("web-7f9c-b", "ReplicaSet", "web-7f9c", "100m");
  pending["status"] = {{"phase", "Pending"}};
  api.pods["web-7f9c-b"] = pending;
  result = step.run(scaler("300m"), workload, {}, nullptr, {}, true);
  CHECK(result->plan.starting == 1);
  CHECK(result->recheck_after == std::chrono::seconds(2));
  CHECK(api.resized.empty());
  // Running without the values (the admission hook could not give them): resized.
  api.pods["web-7f9c-b"] = pod("web-7f9c-b", "ReplicaSet", "web-7f9c", "100m");
  result = step.run(scaler("300m"), workload, {}, nullptr, {}, true);
  CHECK(result->plan.starting == 0);
  CHECK(api.resized == std::vector<std::string>{"web-7f9c-b"});
  // All there and carrying the values: nothing polls.
  api.kubelet_done();
  result = step.run(scaler("300m"), workload, {}, nullptr, {}, true);
  CHECK(result->recheck_after == std::chrono::milliseconds(0));
}

TEST_CASE("containers the kubelet restarted for a resize this process sent are counted") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "100m");
  auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  REQUIRE(result.ok());
  CHECK(api.resized.size() == 1);
  // The kubelet applies it and, the container's resizePolicy saying RestartContainer, restarts it.
  api.kubelet_done();
  api.pods["web-7f9c-a"]["status"]["containerStatuses"][0]["restartCount"] = 1;
  result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  CHECK(result->plan.at_target == 1);
  CHECK(result->restarted == 1);
  CHECK(metrics.counts["completed"] == 1);
  // A restart that is not a resize's (the pod was not resized since) is not counted.
  api.pods["web-7f9c-a"]["status"]["containerStatuses"][0]["restartCount"] = 2;
  result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  CHECK(result->restarted == 1);
}

TEST_CASE("evictions and restarts counted by an earlier process carry on from status") {
  FakeApi api;
  Metrics metrics;
  controller::InPlaceStep step(api, metrics);
  api.pods["web-7f9c-a"] = pod("web-7f9c-a", "ReplicaSet", "web-7f9c", "300m");
  json object = {
      {"metadata", {{"name", "web"}, {"namespace", "shop"}}},
      {"spec",
       {{"deploymentName", "web"},
        {"updateMode", "InPlace"},
        {"containers", json::parse(R"([{"name": "app", "requests": {"cpu": "300m"}}])")}}},
      {"status", {{"pods", {{"evicted", 2}, {"restarted", 5}}}}}};
  auto parsed = api::parse_scaler(object);
  REQUIRE(parsed.ok());
  auto result = step.run(*parsed, kWorkload, {}, nullptr, {}, true);
  REQUIRE(result.ok());
  CHECK(result->evicted == 2);
  CHECK(result->restarted == 5);
}

TEST_CASE("leadership is asked again before each resize: a lease lost mid-step sends no more") {
  FakeApi api;
  Metrics metrics;
  int asked = 0;
  // Leading for the first resize only (frozen, or slowed past the lease, after it).
  controller::InPlaceStep step(api, metrics, std::chrono::minutes(10), {},
                               [&asked] { return ++asked == 1; });
  for (const char* name : {"web-7f9c-a", "web-7f9c-b", "web-7f9c-c"}) {
    api.pods[name] = pod(name, "ReplicaSet", "web-7f9c", "100m");
  }
  auto result = step.run(scaler("300m"), kWorkload, {}, nullptr, {}, true);
  REQUIRE(result.ok());
  CHECK(api.resized.size() == 1);
  CHECK(asked == 2);  // asked before the second, which is not sent, nor the third
  CHECK(result->plan.in_progress == 3);  // two still due: the next leader sends them
}
