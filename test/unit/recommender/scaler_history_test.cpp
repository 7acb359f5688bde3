// ScalerHistory: the RecommendationProvided reasons across passes (NoPodsMatched, NoMetrics,
// InsufficientHistory until a pass has samples from every pod, Recommended), the per-pod minimum
// share (among the containers VPA counts), and a restore from its own checkpoint that continues
// where it left off.
#include "recommender/scaler_history.h"

#include <doctest/doctest.h>

using namespace vscaler::recommender;
using std::chrono::minutes;

namespace {
const TimePoint kT0 = from_millis(1'764'547'200'000);
constexpr double kMi = 1024.0 * 1024.0;

PodInfo pod(const std::string& name, int containers) {
  PodInfo p;
  p.name = name;
  p.uid = "uid-" + name;
  for (int i = 0; i < containers; ++i) p.containers.push_back({i == 0 ? "app" : "sidecar", {}, {}});
  return p;
}

PodUsage usage(const std::string& name, int minute, double cpu) {
  return {"shop",
          name,
          kT0 + minutes(minute),
          Duration(15'000),
          {{"app", cpu, 400 * kMi}, {"sidecar", 0.001, 1e6}}};
}
}  // namespace

TEST_CASE("the RecommendationProvided reason follows what the passes saw") {
  AggregateOptions options;
  ScalerHistory history;
  CHECK(history.reason() == ProvidedReason::kInsufficientHistory);
  (void)history.fold({}, {}, options);
  CHECK(history.reason() == ProvidedReason::kNoPodsMatched);
  CHECK(std::string(to_string(history.reason())) == "NoPodsMatched");
  std::vector<PodInfo> pods = {pod("web-1", 2), pod("web-2", 2)};
  (void)history.fold({}, pods, options);
  CHECK(history.reason() == ProvidedReason::kNoMetrics);
  // Metrics for one pod of two: not a full pass yet.
  (void)history.fold({usage("web-1", 0, 0.3)}, pods, options);
  CHECK(history.reason() == ProvidedReason::kInsufficientHistory);
  (void)history.fold({usage("web-1", 1, 0.3), usage("web-2", 1, 0.3)}, pods, options);
  CHECK(history.reason() == ProvidedReason::kRecommended);
  // Once a full pass happened, a pod starting without metrics yet does not withdraw it.
  pods.push_back(pod("web-3", 2));
  (void)history.fold({usage("web-1", 2, 0.3), usage("web-2", 2, 0.3)}, pods, options);
  CHECK(history.reason() == ProvidedReason::kRecommended);
  CHECK(history.aggregates().at("app").state().total_samples_count == 5);
}

TEST_CASE("a history seeded from Prometheus is recommended before the pods have metrics") {
  AggregateOptions options;
  const std::vector<PodInfo> pods = {pod("web-1", 1)};
  ScalerHistory unseeded;
  (void)unseeded.fold({}, pods, options);
  CHECK(unseeded.reason() == ProvidedReason::kNoMetrics);

  UsageHistory days;
  days.cpu.push_back({"web-0", "app", {{kT0, 0.3}, {kT0 + minutes(60), 0.3}}});
  days.memory.push_back({"web-0", "app", {{kT0, 400 * kMi}, {kT0 + minutes(60), 400 * kMi}}});
  ScalerHistory seeded;
  CHECK(seeded.seed(days, options, 60).points == 2);
  (void)seeded.fold({}, pods, options);
  CHECK(seeded.reason() == ProvidedReason::kRecommended);
  // Live metrics came once: their absence afterwards is an outage, said as such.
  (void)seeded.fold({usage("web-1", 120, 0.3)}, pods, options);
  CHECK(seeded.reason() == ProvidedReason::kRecommended);
  (void)seeded.fold({}, pods, options);
  CHECK(seeded.reason() == ProvidedReason::kNoMetrics);
  // An empty history (a workload Prometheus never saw) changes nothing.
  ScalerHistory empty;
  CHECK(empty.seed(UsageHistory{}, options, 60).points == 0);
  (void)empty.fold({}, pods, options);
  CHECK(empty.reason() == ProvidedReason::kNoMetrics);
}

TEST_CASE("recommendations share the per-pod minimums among the pod's containers") {
  AggregateOptions options;
  ScalerHistory history;
  std::vector<PodInfo> pods = {pod("web-1", 2)};
  for (int m = 0; m < 60; ++m) (void)history.fold({usage("web-1", m, 0.3)}, pods, options);
  CHECK(history.containers_sharing_minimums() == 2);
  auto recs = history.recommendations(options, RecommendationOptions{}, [](const std::string& c) {
    AllowedRange range;
    if (c == "app") range.max_allowed[kCpu] = *vscaler::kube::Quantity::parse("300m");
    return range;
  });
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].container_name == "app");
  CHECK(recs[0].target.at(kCpu).to_string() == "300m");
  CHECK(recs[0].uncapped_target.at(kCpu).to_string() == "352m");
  CHECK(recs[1].container_name == "sidecar");
  CHECK(recs[1].target.at(kCpu).to_string() == "13m");       // 25m / 2, rounded up
  CHECK(recs[1].target.at(kMemory).to_string() == "125Mi");  // 250Mi / 2, in whole MiB
  CHECK(history.memory_bytes() < 2 * 1024);
}

TEST_CASE("the per-pod minimums are shared among the containers VPA counts") {
  // VPA (routines/vpa.go, logic/recommender.go) divides by the container names it has a history
  // for, mode Off left out: every spec container of the pods (samples or not) and any name a
  // checkpoint or an earlier pod left. An idle app (1m, 1 MB) shows the share.
  AggregateOptions options;
  auto idle = [](const std::string& name, int minute, std::vector<std::string> containers) {
    PodUsage u{"shop", name, kT0 + minutes(minute), Duration(15'000), {}};
    for (auto& c : containers) u.containers.push_back({std::move(c), 0.001, 1e6});
    return u;
  };
  auto app_target = [&](const ScalerHistory& history) {
    for (const auto& rec : history.recommendations(options, RecommendationOptions{})) {
      if (rec.container_name == "app") return rec.target;
    }
    return ResourceMap{};
  };
  auto only_app = [](std::string_view c) { return c == "app"; };

  // A sidecar of mode Off is not counted: the app gets the whole pod's minimums.
  ScalerHistory off;
  const std::vector<PodInfo> two = {pod("web-1", 2)};
  for (int m = 0; m < 5; ++m) {
    (void)off.fold({idle("web-1", m, {"app", "sidecar"})}, two, options, only_app);
  }
  CHECK(off.containers_sharing_minimums() == 1);
  CHECK(app_target(off).at(kCpu).to_string() == "25m");
  CHECK(app_target(off).at(kMemory).to_string() == "250Mi");

  // A spec container without samples yet is counted (VPA made its history with the pod).
  ScalerHistory unsampled;
  for (int m = 0; m < 5; ++m) (void)unsampled.fold({idle("web-1", m, {"app"})}, two, options);
  CHECK(unsampled.aggregates().size() == 1);
  CHECK(unsampled.containers_sharing_minimums() == 2);
  CHECK(app_target(unsampled).at(kCpu).to_string() == "13m");

  // A container the pods no longer have keeps its history, and is counted with it.
  ScalerHistory renamed;
  (void)renamed.fold({idle("web-1", 0, {"app", "sidecar"})}, two, options);
  const std::vector<PodInfo> one = {pod("web-2", 1)};
  for (int m = 1; m < 5; ++m) (void)renamed.fold({idle("web-2", m, {"app"})}, one, options);
  CHECK(renamed.containers_sharing_minimums() == 2);
  CHECK(app_target(renamed).at(kMemory).to_string() == "125Mi");
}

TEST_CASE("a history restored from its checkpoint continues: same target, count goes on") {
  AggregateOptions options;
  ScalerHistory history;
  std::vector<PodInfo> pods = {pod("web-1", 1)};
  for (int m = 0; m < 30; ++m) (void)history.fold({usage("web-1", m, 0.3)}, pods, options);
  auto object = history.checkpoint("shop", "web", "scaler-uid");
  auto restored =
      ScalerHistory::restore(nlohmann::json::parse(object.dump()), "scaler-uid", options);
  REQUIRE_MESSAGE(restored.ok(), restored.error());
  auto before = history.recommendations(options, RecommendationOptions{});
  (void)restored->fold({usage("web-1", 29, 0.3)}, pods, options);  // the last sample again
  CHECK(restored->reason() == ProvidedReason::kRecommended);
  CHECK(restored->recommendations(options, RecommendationOptions{}) == before);
  (void)restored->fold({usage("web-1", 30, 0.3)}, pods, options);
  CHECK(restored->aggregates().at("app").state().total_samples_count == 31);
  auto foreign = ScalerHistory::restore(object, "another-uid", options);
  CHECK_FALSE(foreign.ok());
}
