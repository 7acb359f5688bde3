// One recommender pass over API-shaped documents: the target's pods' metrics are folded, a
// canary's are not, a repeated PodMetrics answer is skipped, an OOM kill seen in three passes is
// counted once, and the resulting recommendation follows.
#include "recommender/pass.h"

#include <doctest/doctest.h>

#include "recommender/recommendation.h"

using namespace vscaler::recommender;
using nlohmann::json;

namespace {
constexpr double kMi = 1024.0 * 1024.0;

json pod(const std::string& name, const std::string& uid, const std::string& rs_uid,
         bool oom_killed, const char* cpu_request = "200m") {
  json p = {
      {"metadata",
       {{"name", name},
        {"uid", uid},
        {"ownerReferences",
         json::array({{{"kind", "ReplicaSet"}, {"uid", rs_uid}, {"controller", true}}})}}},
      {"spec",
       {{"containers",
         json::array({{{"name", "app"},
                       {"resources", {{"requests", {{"cpu", cpu_request}, {"memory", "512Mi"}}}}}},
                      {{"name", "sidecar"}}})}}}};
  if (oom_killed) {
    p["status"]["containerStatuses"] = json::array(
        {{{"name", "app"},
          {"restartCount", 1},
          {"lastState",
           {{"terminated", {{"reason", "OOMKilled"}, {"finishedAt", "2026-11-29T18:00:30Z"}}}}}}});
  }
  return p;
}

json metrics(const std::string& timestamp, const char* canary_cpu) {
  auto item = [&](const std::string& name, const char* cpu) {
    return json{
        {"metadata", {{"name", name}, {"namespace", "shop"}}},
        {"timestamp", timestamp},
        {"window", "15s"},
        {"containers",
         json::array({{{"name", "app"}, {"usage", {{"cpu", cpu}, {"memory", "400Mi"}}}},
                      {{"name", "sidecar"}, {"usage", {{"cpu", "1m"}, {"memory", "20Mi"}}}}})}};
  };
  return {{"items", json::array({item("web-1", "300m"), item("web-2", "300m"),
                                 item("canary-1", canary_cpu)})}};
}
}  // namespace

TEST_CASE("a pass folds the target's pods only, skips repeats, counts an OOM kill once") {
  json pods = {{"items", json::array({pod("web-1", "uid-1", "rs-web", true),
                                      pod("web-2", "uid-2", "rs-web", false),
                                      pod("canary-1", "uid-3", "rs-canary", false)})}};
  json replica_sets = json::parse(R"({"items": [
    {"metadata": {"name": "web-1a", "uid": "rs-web", "ownerReferences": [
      {"kind": "Deployment", "uid": "deploy-web", "controller": true}]}},
    {"metadata": {"name": "canary-1a", "uid": "rs-canary", "ownerReferences": [
      {"kind": "Deployment", "uid": "deploy-canary", "controller": true}]}}]})");
  auto owned = owned_pods(parse_pod_list(pods)->pods, *parse_replica_set_list(replica_sets),
                          {"Deployment", "web", "deploy-web"});
  REQUIRE(owned.size() == 2);

  AggregateOptions options;
  OomDedup dedup;
  ContainerAggregates aggregates;
  auto only_app = [](std::string_view c) { return c == "app"; };
  // Three passes; metrics-server answered the same sample twice, then a new one. The canary
  // uses 4 cores: if it leaked in, the target would jump.
  const char* stamps[] = {"2026-11-29T18:00:00Z", "2026-11-29T18:00:00Z", "2026-11-29T18:01:00Z"};
  std::size_t added = 0, stale = 0, ooms = 0;
  for (const char* stamp : stamps) {
    auto parsed = parse_pod_metrics_list(metrics(stamp, "4"));
    REQUIRE(parsed.ok());
    auto stats = fold_pass(aggregates, parsed->pods, owned, dedup, options, only_app);
    CHECK(stats.pods == 2);
    CHECK(stats.pods_with_metrics == 2);
    CHECK(stats.oom_errors.empty());
    added += stats.samples_added;
    stale += stats.samples_stale;
    ooms += stats.oom_kills_counted;
  }
  CHECK(added == 4);  // 2 pods x 2 distinct timestamps, app only
  CHECK(stale == 2);
  CHECK(ooms == 1);
  REQUIRE(aggregates.size() == 1);  // the sidecar was not asked for
  const auto& app = aggregates.at("app");
  CHECK(app.state().total_samples_count == 4);
  // The OOM kill: used = max(request 512Mi, peak 400Mi); 1.2 x 512Mi = 614.4Mi > 612Mi.
  REQUIRE(app.memory_window(pod_key("web-1")));  // pods are keyed by name, as in VPA
  CHECK(app.memory_window(pod_key("web-1"))->oom_peak == doctest::Approx(614.4 * kMi));

  auto r = recommend("app", estimate(app, options, RecommendationOptions{}, 2), {});
  CHECK(r.target.at(kCpu).to_string() == "352m");  // 0.3 core's bucket end x 1.15, no canary
  CHECK(r.target.at(kMemory).to_double() >= 614.4 * kMi * 1.15);
}

TEST_CASE("a pass with no metrics for the pods reports it") {
  json pods = {{"items", json::array({pod("web-1", "uid-1", "rs-web", false)})}};
  auto owned = parse_pod_list(pods)->pods;
  AggregateOptions options;
  OomDedup dedup;
  ContainerAggregates aggregates;
  auto stats = fold_pass(aggregates, {}, owned, dedup, options);
  CHECK(stats.pods == 1);
  CHECK(stats.pods_with_metrics == 0);
  CHECK(stats.samples_added == 0);
  CHECK(aggregates.empty());
}

TEST_CASE("pods of unequal CPU requests give the same recommendation as pods of equal ones") {
  // A rollout in progress, or pods resized in place at different times: requests 1000m / 500m /
  // 100m, usage 0.08 / 0.4 / 0.9 cores. Weighted by request (VPA before 1.8) the busiest pod
  // would count a tenth of the idlest and get half of what it uses.
  auto fold = [](const char* r1, const char* r2, const char* r3) {
    json pods = {{"items", json::array({pod("web-1", "uid-1", "rs-web", false, r1),
                                        pod("web-2", "uid-2", "rs-web", false, r2),
                                        pod("web-3", "uid-3", "rs-web", false, r3)})}};
    auto owned = parse_pod_list(pods)->pods;
    AggregateOptions options;
    OomDedup dedup;
    ContainerAggregates aggregates;
    for (int minute = 0; minute < 10; ++minute) {
      auto item = [&](const char* name, const char* cpu) {
        return json{
            {"metadata", {{"name", name}, {"namespace", "shop"}}},
            {"timestamp", "2026-11-29T18:0" + std::to_string(minute) + ":00Z"},
            {"window", "15s"},
            {"containers",
             json::array({{{"name", "app"}, {"usage", {{"cpu", cpu}, {"memory", "400Mi"}}}}})}};
      };
      json list = {{"items", json::array({item("web-1", "80m"), item("web-2", "400m"),
                                          item("web-3", "900m")})}};
      auto parsed = parse_pod_metrics_list(list);
      REQUIRE(parsed.ok());
      (void)fold_pass(aggregates, parsed->pods, owned, dedup, options);
    }
    return recommend("app", estimate(aggregates.at("app"), options, RecommendationOptions{}, 1),
                     {});
  };
  auto unequal = fold("1000m", "500m", "100m");
  auto equal = fold("500m", "500m", "500m");
  CHECK(unequal.target == equal.target);
  CHECK(unequal.lower_bound == equal.lower_bound);
  CHECK(unequal.upper_bound == equal.upper_bound);
  // Equal weights: p90 of {0.08, 0.4, 0.9} x 10 samples each is the 0.9-core bucket, so the
  // busiest pod gets at least what it uses plus the 15% margin.
  CHECK(unequal.target.at(kCpu).to_double() >= 0.9 * 1.15);
}

TEST_CASE("a steady 110.2m lands in VPA's bucket: samples count in whole millicores") {
  // VPA reads usage.cpu through MilliValue(), which rounds 110.2m up to 111m: that sample lies in
  // the bucket above 110.26m, whose end 125.78m x 1.15 is 145m rounded once (VPA truncates to
  // 125m first, then 143m: README "Rounding once"). The exact 110.2m would give 127m.
  json pods = {{"items", json::array({pod("web-1", "uid-1", "rs-web", false)})}};
  auto owned = parse_pod_list(pods)->pods;
  AggregateOptions options;
  OomDedup dedup;
  ContainerAggregates aggregates;
  for (int minute = 0; minute < 10; ++minute) {
    json list = {
        {"items",
         json::array(
             {{{"metadata", {{"name", "web-1"}, {"namespace", "shop"}}},
               {"timestamp", "2026-11-29T18:0" + std::to_string(minute) + ":00Z"},
               {"window", "15s"},
               {"containers",
                json::array({{{"name", "app"},
                              {"usage", {{"cpu", "110200000n"}, {"memory", "400Mi"}}}}})}}})}};
    auto parsed = parse_pod_metrics_list(list);
    REQUIRE(parsed.ok());
    (void)fold_pass(aggregates, parsed->pods, owned, dedup, options);
  }
  auto r =
      recommend("app", estimate(aggregates.at("app"), options, RecommendationOptions{}, 1), {});
  CHECK(r.target.at(kCpu).to_string() == "145m");
}

TEST_CASE("samples of init containers and native sidecars are not folded") {
  // PodMetrics report every running container, init containers included; VPA's feeder drops the
  // samples of spec.initContainers (restartPolicy: Always sidecars too) and of any name that is
  // not in spec.containers.
  json p = pod("web-1", "uid-1", "rs-web", false);
  p["spec"]["initContainers"] =
      json::array({{{"name", "migrate"}}, {{"name", "proxy"}, {"restartPolicy", "Always"}}});
  json pods = {{"items", json::array({p})}};
  auto owned = parse_pod_list(pods)->pods;
  REQUIRE(owned.size() == 1);
  json list = {
      {"items",
       json::array(
           {{{"metadata", {{"name", "web-1"}, {"namespace", "shop"}}},
             {"timestamp", "2026-11-29T18:00:00Z"},
             {"window", "15s"},
             {"containers",
              json::array(
                  {{{"name", "app"}, {"usage", {{"cpu", "300m"}, {"memory", "400Mi"}}}},
                   {{"name", "migrate"}, {"usage", {{"cpu", "2"}, {"memory", "1Gi"}}}},
                   {{"name", "proxy"}, {"usage", {{"cpu", "50m"}, {"memory", "64Mi"}}}},
                   {{"name", "gone"}, {"usage", {{"cpu", "1m"}, {"memory", "1Mi"}}}}})}}})}};
  auto parsed = parse_pod_metrics_list(list);
  REQUIRE(parsed.ok());
  AggregateOptions options;
  OomDedup dedup;
  ContainerAggregates aggregates;
  auto stats = fold_pass(aggregates, parsed->pods, owned, dedup, options);
  CHECK(stats.samples_added == 1);
  REQUIRE(aggregates.size() == 1);
  CHECK(aggregates.contains("app"));
}
