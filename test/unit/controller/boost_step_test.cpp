// BoostStep against a fake ReconcileApi (test/unit/support/fake_pods_api.h): a boosted pod is
// held until Ready + durationSeconds, then resized back to the base its annotation records (only
// the containers still boosted); the kubelet's progress, a refusal (reported once, not resent in
// a loop), a failed call (sent again within seconds), a follower sending nothing, the re-check
// delays and the counts that carry on.
#include "controller/boost_step.h"

#include <doctest/doctest.h>

#include <future>
#include <map>

#include "test/unit/support/fake_pods_api.h"

using nlohmann::json;
using namespace vscaler;
using controller::BoostState;
using std::chrono::seconds;

namespace {

struct Metrics : controller::ResizeMetrics {
  std::map<std::string, int> counts;
  void on_startup_boost(const char* result) override { ++counts[result]; }
};

recommender::TimePoint at(const char* rfc3339) {
  auto parsed = recommender::parse_rfc3339(rfc3339);
  REQUIRE(parsed.ok());
  return *parsed;
}

/// A pod admitted boosted: app 250m/500m boosted to 500m/1, log not boosted; `ready_at` empty:
/// not Ready.
json boosted_pod(const std::string& name, const char* ready_at, int duration = 30) {
  json record = {
      {"durationSeconds", duration},
      {"containers", json::array({{{"name", "app"},
                                   {"base", {{"requests", "250m"}, {"limits", "500m"}}},
                                   {"boosted", {{"requests", "500m"}, {"limits", "1"}}}}})}};
  json app = {{"requests", {{"cpu", "500m"}, {"memory", "64Mi"}}}, {"limits", {{"cpu", "1"}}}};
  json log = {{"requests", {{"cpu", "50m"}}}};
  json conditions = json::array();
  if (ready_at[0] != '\0') {
    conditions.push_back({{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", ready_at}});
  }
  return {{"metadata",
           {{"name", name},
            {"uid", "uid-" + name},
            {"generation", 1},
            {"annotations", {{std::string(api::kStartupBoostAnnotation), record.dump()}}}}},
          {"spec",
           {{"containers", json::array({{{"name", "app"}, {"resources", app}},
                                        {{"name", "log"}, {"resources", log}}})}}},
          {"status",
           {{"phase", "Running"},
            {"observedGeneration", 1},
            {"conditions", conditions},
            {"containerStatuses", json::array({{{"name", "app"}, {"resources", app}},
                                               {{"name", "log"}, {"resources", log}}})}}}};
}

api::Scaler scaler() {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec",
                  {{"deploymentName", "web"},
                   {"updateMode", "Off"},
                   {"startupBoost", {{"cpu", {{"factor", 2}, {"durationSeconds", 30}}}}}}}};
  auto parsed = api::parse_scaler(object);
  REQUIRE(parsed.ok());
  return *parsed;
}

std::vector<json> listed(const test::FakePodsApi& api) {
  std::vector<json> out;
  for (const auto& [name, pod] : api.pods) out.push_back(pod);
  return out;
}

/// One pod, web-1, boosted and Ready since 10:00, whose resize calls fail with `kind`.
struct FailingResizes {
  test::FakePodsApi api;
  Metrics metrics;
  controller::BoostStep step{api, metrics};
  FailingResizes(kube::ErrorKind kind, std::string message) {
    api.refuse = true;
    api.refusal_kind = kind;
    api.refusal = std::move(message);
    api.pods["web-1"] = boosted_pod("web-1", "2026-12-03T10:00:00Z");
  }
  controller::BoostResult run(const char* now) {
    return step.run(scaler(), listed(api), true, at(now));
  }
};

/// One pod, web-1, boosted and Ready since 10:00, whose resize back was sent at 11:00.
struct SentBack {
  test::FakePodsApi api;
  Metrics metrics;
  controller::BoostStep step{api, metrics};
  SentBack() {
    api.pods["web-1"] = boosted_pod("web-1", "2026-12-03T10:00:00Z");
    step.run(scaler(), listed(api), true, at("2026-12-03T11:00:00Z"));
    REQUIRE(api.resized.size() == 1);
  }
  controller::BoostResult run(const char* now) {
    return step.run(scaler(), listed(api), true, at(now));
  }
};

}  // namespace

TEST_CASE("a boosted pod is held until Ready + durationSeconds, then resized back to its base") {
  test::FakePodsApi api;
  Metrics metrics;
  controller::BoostStep step(api, metrics);
  api.pods["web-1"] = boosted_pod("web-1", "");
  auto result = step.run(scaler(), listed(api), true, at("2026-12-03T10:00:00Z"));
  REQUIRE(result.pods.size() == 1);
  CHECK(result.pods[0].state == BoostState::kStarting);
  CHECK(result.boosted == 1);
  CHECK(result.boosted_uids.contains("uid-web-1"));
  CHECK(result.recheck_after == seconds(1));  // not Ready: looked at soon, then less often
  CHECK(step.run(scaler(), listed(api), true, at("2026-12-03T10:00:01Z")).recheck_after ==
        seconds(2));

  api.pods["web-1"] = boosted_pod("web-1", "2026-12-03T10:00:05Z");
  result = step.run(scaler(), listed(api), true, at("2026-12-03T10:00:20Z"));
  CHECK(result.pods[0].state == BoostState::kHolding);
  CHECK(result.recheck_after == seconds(15));  // exactly when it is due
  CHECK(api.resized.empty());

  result = step.run(scaler(), listed(api), true, at("2026-12-03T10:00:35Z"));
  CHECK(result.pods[0].state == BoostState::kEnding);
  CHECK(result.requested == 1);
  REQUIRE(api.resized == std::vector<std::string>{"web-1"});
  const json& app = api.pods["web-1"]["spec"]["containers"][0]["resources"];
  CHECK(app["requests"]["cpu"] == "250m");
  CHECK(app["limits"]["cpu"] == "500m");
  CHECK(app["requests"]["memory"] == "64Mi");
  CHECK(api.pods["web-1"]["spec"]["containers"][1]["resources"]["requests"]["cpu"] == "50m");

  api.kubelet_done();
  result = step.run(scaler(), listed(api), true, at("2026-12-03T10:00:37Z"));
  CHECK(result.pods[0].state == BoostState::kEnded);
  CHECK(result.boosted == 0);
  CHECK(result.ended == 1);
  CHECK(metrics.counts["ended"] == 1);
  CHECK(result.recheck_after == seconds(0));  // nothing to wait for: never polled
  CHECK(result.status()["ended"] == 1);
  // Counted once.
  CHECK(step.run(scaler(), listed(api), true, at("2026-12-03T10:00:38Z")).ended == 1);
  CHECK(metrics.counts["ended"] == 1);
}

TEST_CASE("the pod hook's admitted() does not wait for a resize call in flight") {
  test::FakePodsApi api;
  Metrics metrics;
  controller::BoostStep step(api, metrics);
  api.pods["web-1"] = boosted_pod("web-1", "2026-12-03T10:00:05Z");
  // The pod hook admits another boosted pod of the scaler while the step's resize call is out
  // (the API server slow): it must answer within its 2 s timeout, not after the call.
  std::future<void> admission;
  bool answered_in_time = false;
  api.on_resize = [&] {
    admission = std::async(std::launch::async,
                           [&] { step.admitted("shop/web", at("2026-12-03T10:00:35Z")); });
    answered_in_time = admission.wait_for(seconds(2)) == std::future_status::ready;
  };
  auto result = step.run(scaler(), listed(api), true, at("2026-12-03T10:00:35Z"));
  admission.get();
  CHECK(answered_in_time);
  CHECK(result.requested == 1);
  // The admission is kept: the scaler is looked at every second for the pod it announced,
  // though the boosted pod it knows of has ended.
  api.on_resize = nullptr;
  api.kubelet_done();
  result = step.run(scaler(), listed(api), true, at("2026-12-03T10:00:37Z"));
  CHECK(result.pods[0].state == BoostState::kEnded);
  CHECK(result.recheck_after == seconds(1));
}

TEST_CASE("durationSeconds 0 ends the boost as soon as the pod is Ready") {
  test::FakePodsApi api;
  Metrics metrics;
  controller::BoostStep step(api, metrics);
  api.pods["web-1"] = boosted_pod("web-1", "2026-12-03T10:00:05Z", 0);
  auto result = step.run(scaler(), listed(api), true, at("2026-12-03T10:00:05Z"));
  CHECK(result.pods[0].state == BoostState::kEnding);
}

TEST_CASE("a follower decides but sends nothing") {
  test::FakePodsApi api;
  Metrics metrics;
  controller::BoostStep step(api, metrics);
  api.pods["web-1"] = boosted_pod("web-1", "2026-12-03T10:00:00Z");
  auto result = step.run(scaler(), listed(api), false, at("2026-12-03T11:00:00Z"));
  CHECK(result.pods[0].state == BoostState::kDue);
  CHECK(api.resized.empty());
  CHECK(result.recheck_after == seconds(1));
}

TEST_CASE(
    "leadership is asked again before each resize back: a lease lost mid-step sends no more") {
  test::FakePodsApi api;
  Metrics metrics;
  int asked = 0;
  controller::BoostStep step(api, metrics, [&asked] { return ++asked == 1; });
  api.pods["web-1"] = boosted_pod("web-1", "2026-12-03T10:00:00Z");
  api.pods["web-2"] = boosted_pod("web-2", "2026-12-03T10:00:00Z");
  auto result = step.run(scaler(), listed(api), true, at("2026-12-03T11:00:00Z"));
  CHECK(api.resized.size() == 1);
  CHECK(asked == 2);
  CHECK(result.requested == 1);
  CHECK(result.pods[1].state == BoostState::kDue);  // the next leader sends it
}

TEST_CASE("a refused resize back is reported once and not resent in a loop") {
  FailingResizes failing(kube::ErrorKind::kForbidden, "pod updates may not change the QoS class");
  auto& [api, metrics, step] = failing;
  auto result = failing.run("2026-12-03T11:00:00Z");
  CHECK(result.pods[0].state == BoostState::kRefused);
  CHECK(result.stuck == 1);
  CHECK(result.boosted == 1);
  CHECK(result.status()["message"].get<std::string>().find(
            "web-1: the resize back to its base is Refused") != std::string::npos);
  CHECK(metrics.counts["infeasible"] == 1);
  CHECK(api.events == std::vector<std::string>{"Warning StartupBoostStuck"});
  CHECK(result.recheck_after == seconds(60));
  api.refuse = false;
  // Within 5 minutes: not sent again, not counted again.
  result = failing.run("2026-12-03T11:01:00Z");
  CHECK(result.pods[0].state == BoostState::kRefused);
  CHECK(api.resized.empty());
  CHECK(metrics.counts["infeasible"] == 1);
  CHECK(api.events.size() == 1);
  // Then once more.
  result = failing.run("2026-12-03T11:06:00Z");
  CHECK(result.pods[0].state == BoostState::kEnding);
  CHECK(api.resized.size() == 1);
}

TEST_CASE("a resize back whose call failed (503) is sent again within seconds, not held back") {
  FailingResizes failing(kube::ErrorKind::kServerError, "etcdserver: request timed out");
  auto& [api, metrics, step] = failing;
  auto result = failing.run("2026-12-03T11:00:00Z");
  CHECK(result.pods[0].state == BoostState::kDue);
  CHECK(result.pods[0].message.find("sent again shortly") != std::string::npos);
  CHECK(result.stuck == 0);
  CHECK(metrics.counts["infeasible"] == 0);
  CHECK(api.events.empty());
  CHECK(result.recheck_after == controller::kCallFailedRecheck);
  // A step before the 5 s are over (another pod's, a scaler event) sends nothing.
  api.refusal_kind = kube::ErrorKind::kTooManyRequests;
  api.refusal_retry_after = seconds(20);
  result = failing.run("2026-12-03T11:00:01Z");
  CHECK(result.pods[0].state == BoostState::kDue);
  CHECK(result.recheck_after == seconds(4));
  CHECK(api.calls == 1);
  // Throttled (429) with a Retry-After: not sent again before it says.
  result = failing.run("2026-12-03T11:00:05Z");
  CHECK(result.recheck_after == seconds(20));
  CHECK(api.calls == 2);
  result = failing.run("2026-12-03T11:00:15Z");
  CHECK(api.calls == 2);
  // The API server is back: the resize back goes out then, not 5 minutes later.
  api.refuse = false;
  result = failing.run("2026-12-03T11:00:25Z");
  CHECK(result.pods[0].state == BoostState::kEnding);
  CHECK(api.resized.size() == 1);
}

TEST_CASE("a Retry-After holds a resize back 60 s at most; a pod deleted meanwhile is no refusal") {
  FailingResizes failing(kube::ErrorKind::kTooManyRequests, "throttled");
  failing.api.refusal_retry_after = seconds(3600);
  auto result = failing.run("2026-12-03T11:00:00Z");
  CHECK(result.recheck_after == controller::kCallFailedMaxWait);
  // Deleted between the list and the call: a 404 naming the pod.
  FailingResizes gone(kube::ErrorKind::kNotFound, "pods \"web-1\" not found");
  gone.api.refusal_names_pod = true;
  result = gone.run("2026-12-03T11:00:00Z");
  CHECK(result.pods[0].state == BoostState::kDue);
  CHECK(result.pods[0].message == "the pod is gone");
  CHECK(result.stuck == 0);
  CHECK(gone.api.events.empty());
}

TEST_CASE("a resize back refused in a way no retry mends (404) is held back and reported") {
  FailingResizes failing(kube::ErrorKind::kNotFound,
                         "the server could not find the requested resource");
  auto result = failing.run("2026-12-03T11:00:00Z");
  CHECK(result.pods[0].state == BoostState::kRefused);
  CHECK(result.stuck == 1);
  CHECK(failing.api.events == std::vector<std::string>{"Warning StartupBoostStuck"});
  CHECK(result.recheck_after == seconds(60));
}

TEST_CASE("the kubelet's Infeasible on the resize back is reported, not resent") {
  SentBack test;
  auto& api = test.api;
  json& pod = api.pods["web-1"];
  pod["status"]["observedGeneration"] = 2;
  pod["status"]["conditions"].push_back({{"type", "PodResizePending"},
                                         {"status", "True"},
                                         {"reason", "Infeasible"},
                                         {"message", "node too small"},
                                         {"lastTransitionTime", "2026-12-03T11:00:01Z"}});
  // A follower sees it too, but neither counts it nor posts an Event: the leader does, once.
  controller::BoostStep follower{api, test.metrics};
  CHECK(follower.run(scaler(), listed(api), false, at("2026-12-03T11:00:02Z")).stuck == 1);
  CHECK(api.events.empty());
  auto result = test.run("2026-12-03T11:00:02Z");
  CHECK(result.pods[0].state == BoostState::kInfeasible);
  CHECK(result.stuck == 1);
  CHECK(api.resized.size() == 1);
  CHECK(api.events == std::vector<std::string>{"Warning StartupBoostStuck"});
  CHECK(result.status()["message"].get<std::string>().find("node too small") != std::string::npos);
}

TEST_CASE(
    "pods without the annotation, resized elsewhere since, or being deleted are not "
    "boosted") {
  const auto now = at("2026-12-03T11:00:00Z");
  json plain = boosted_pod("plain", "2026-12-03T10:00:00Z");
  plain["metadata"].erase("annotations");
  json moved = boosted_pod("moved", "2026-12-03T10:00:00Z");
  moved["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "300m";  // the in-place step's
  json going = boosted_pod("going", "");
  going["metadata"]["deletionTimestamp"] = "2026-12-03T10:59:00Z";
  json broken = boosted_pod("broken", "");
  broken["metadata"]["annotations"][std::string(api::kStartupBoostAnnotation)] = "[]";
  json finished = boosted_pod("finished", "2026-12-03T10:00:00Z");
  finished["status"]["phase"] = "Failed";
  auto plan = controller::plan_unboost({plain, moved, going, broken, finished}, now);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].name == "moved");
  CHECK(plan[0].state == BoostState::kEnded);
  // Resized since its admission (through pods/resize, as managedFields record) to the very values
  // it was boosted to: not a boost, whatever this process remembers (a restarted one remembers
  // nothing).
  json resized = boosted_pod("resized", "2026-12-03T10:00:00Z");
  resized["metadata"]["generation"] = 2;
  resized["metadata"]["managedFields"] = json::array(
      {{{"manager", "kube-apiserver"}, {"operation", "Update"}, {"subresource", "status"}},
       {{"manager", "kubectl-edit"}, {"operation", "Update"}, {"subresource", "resize"}}});
  resized["status"]["observedGeneration"] = 2;
  plan = controller::plan_unboost({resized}, now);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].state == BoostState::kEnded);
  CHECK(plan[0].patch.is_null());
}

TEST_CASE(
    "a boosted pod whose spec changed otherwise (a scheduling gate, a debug container) ends "
    "its boost") {
  // Any change of a pod's spec raises its generation; only a resize is someone else's values.
  json gated = boosted_pod("gated", "2026-12-03T10:00:00Z");
  gated["metadata"]["generation"] = 2;
  gated["metadata"]["managedFields"] =
      json::array({{{"manager", "kueue"}, {"operation", "Update"}, {"fieldsType", "FieldsV1"}},
                   {{"manager", "kubelet"}, {"operation", "Update"}, {"subresource", "status"}}});
  gated["status"]["observedGeneration"] = 2;
  auto plan = controller::plan_unboost({gated}, at("2026-12-03T11:00:00Z"));
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].state == BoostState::kDue);
  CHECK(plan[0].patch["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m");
}

TEST_CASE(
    "a pod just admitted boosted is looked for until it is listed; memory carries on "
    "from status") {
  test::FakePodsApi api;
  Metrics metrics;
  controller::BoostStep step(api, metrics);
  const auto now = at("2026-12-03T11:00:00Z");
  step.admitted("shop/web", now);
  CHECK(step.watching(scaler()));
  auto result = step.run(scaler(), {}, true, now);
  CHECK(result.recheck_after == seconds(1));
  result = step.run(scaler(), {}, true, now + seconds(31));
  CHECK(result.recheck_after == seconds(0));
  CHECK_FALSE(step.watching(scaler()));

  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}}},
                 {"spec", {{"deploymentName", "web"}}},
                 {"status", {{"startupBoost", {{"boosted", 1}, {"ended", 4}}}}}};
  auto stored = api::parse_scaler(object);
  REQUIRE(stored.ok());
  controller::BoostStep restarted(api, metrics);
  CHECK(restarted.watching(*stored));  // boosts configured once, pods still boosted
  CHECK(restarted.run(*stored, {}, true, now).ended == 4);
  // Also when the pod hook admitted a pod before the first step.
  controller::BoostStep admitted_first(api, metrics);
  admitted_first.admitted("shop/web", now);
  CHECK(admitted_first.run(*stored, {}, true, now).ended == 4);
}

TEST_CASE("a boost ends once: later resizes of the pod are the in-place step's, not the boost's") {
  SentBack test;
  auto& api = test.api;
  api.kubelet_done();
  REQUIRE(test.run("2026-12-03T11:00:01Z").pods[0].state == BoostState::kEnded);
  // The in-place step resizes it to what the boost once gave it (a new fixed value): not taken
  // for a boost, not put back.
  json& pod = api.pods["web-1"];
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m";
  pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "1";
  pod["metadata"]["generation"] = 3;
  api.kubelet_done();
  auto result = test.run("2026-12-03T11:05:00Z");
  CHECK(result.pods[0].state == BoostState::kEnded);
  CHECK(result.boosted_uids.empty());
  CHECK(api.resized.size() == 1);
  CHECK(test.metrics.counts["ended"] == 1);
}

TEST_CASE("a pod back at its base CPU is not boosted while its memory is resized") {
  // A process that never saw the boost end (restarted since): the kubelet runs the base CPU,
  // and a resize of the memory is in flight, the in-place step's to follow.
  json pod = boosted_pod("web-1", "2026-12-03T10:00:00Z");
  json base = {{"requests", {{"cpu", "250m"}, {"memory", "64Mi"}}}, {"limits", {{"cpu", "500m"}}}};
  pod["status"]["containerStatuses"][0]["resources"] = base;
  base["requests"]["memory"] = "128Mi";
  pod["spec"]["containers"][0]["resources"] = base;
  pod["metadata"]["generation"] = 3;
  pod["status"]["observedGeneration"] = 3;
  pod["status"]["conditions"].push_back({{"type", "PodResizeInProgress"},
                                         {"status", "True"},
                                         {"lastTransitionTime", "2026-12-03T11:00:00Z"}});
  auto plan = controller::plan_unboost({pod}, at("2026-12-03T11:00:01Z"));
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].state == BoostState::kEnded);
  // While the kubelet still runs the boosted CPU, the resize back is what is in flight.
  pod["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = "500m";
  plan = controller::plan_unboost({pod}, at("2026-12-03T11:00:01Z"));
  CHECK(plan[0].state == BoostState::kEnding);
}
