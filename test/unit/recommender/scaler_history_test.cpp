// ScalerHistory: the RecommendationProvided reasons across passes (NoPodsMatched, NoMetrics,
// InsufficientHistory until a pass has samples from every running pod, Recommended), the per-pod
// minimum
// share (among the containers VPA counts), a restore from its own checkpoint that continues
// where it left off, a seeded pod's live samples continuing its history's memory window, and
// VPA's garbage collection of expired or orphaned empty aggregates.
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

TEST_CASE("a full pass needs samples from every running pod: Pending and evicted ones have none") {
  AggregateOptions options;
  ScalerHistory history;
  PodInfo pending = pod("web-2", 2);
  pending.running = false;  // unschedulable: no node, no metrics, maybe never
  PodInfo evicted = pod("web-old", 2);
  evicted.running = false;  // Failed, left behind by an eviction
  std::vector<PodInfo> pods = {pod("web-1", 2), pending, evicted};
  // The evicted pod's last metrics, still served, do not stand in for the running one's.
  (void)history.fold({usage("web-old", 0, 0.3)}, pods, options);
  CHECK(history.reason() == ProvidedReason::kInsufficientHistory);
  (void)history.fold({usage("web-1", 1, 0.3)}, pods, options);
  CHECK(history.reason() == ProvidedReason::kRecommended);
  // Only pods that are not running: none with metrics, and none could have them.
  ScalerHistory waiting;
  auto stats = waiting.fold({}, {pending, evicted}, options);
  CHECK(waiting.reason() == ProvidedReason::kNoMetrics);
  CHECK(stats.pods == 2);
  CHECK(stats.running == 0);
}

TEST_CASE("a history point stands for resolution / interval samples, fractions kept") {
  AggregateOptions options;
  // Four CPU points 90 s apart (--history-resolution=90s) seeded as at 60 s, 180 s and 30 s
  // intervals: 1.5, 0.5 and 3 samples a point in weight; the count is whole, carried over.
  auto seeded = [&options](double per_point) {
    UsageHistory days;
    days.cpu.push_back({"web-0",
                        "app",
                        {{kT0, 0.3},
                         {kT0 + std::chrono::seconds(90), 0.3},
                         {kT0 + std::chrono::seconds(180), 0.3},
                         {kT0 + std::chrono::seconds(270), 0.3}}});
    ScalerHistory history;
    REQUIRE(history.seed(days, options, per_point).points == 4);
    return history.aggregates().at("app").state();
  };
  const AggregateState one_and_half = seeded(1.5);
  const AggregateState half = seeded(0.5);
  const AggregateState three = seeded(3.0);
  CHECK(one_and_half.total_samples_count == 6);
  CHECK(three.total_samples_count == 12);
  // Less than a sample a point: the first counts one, the rest pay it back (4 x 0.5 = 2).
  CHECK(half.total_samples_count == 2);
  CHECK(three.cpu.total_weight() == doctest::Approx(2 * one_and_half.cpu.total_weight()));
  CHECK(one_and_half.cpu.total_weight() == doctest::Approx(3 * half.cpu.total_weight()));
  // Thirty points of a tenth: three samples (0.1 added thirty times falls short of 3 by a hair,
  // which must not lose one).
  UsageHistory tenths;
  PodSeries series{"web-0", "app", {}};
  for (int i = 0; i < 30; ++i) series.points.push_back({kT0 + std::chrono::seconds(6 * i), 0.3});
  tenths.cpu.push_back(series);
  ScalerHistory history;
  REQUIRE(history.seed(tenths, options, 0.1).points == 30);
  CHECK(history.aggregates().at("app").state().total_samples_count == 3);
  // A point dropped (a negative rate) spends nothing: the first point folded still counts one.
  UsageHistory dropped_first;
  dropped_first.cpu.push_back(
      {"web-0", "app", {{kT0, -1.0}, {kT0 + std::chrono::seconds(90), 0.3}}});
  ScalerHistory after_drop;
  REQUIRE(after_drop.seed(dropped_first, options, 0.5).points == 1);
  CHECK(after_drop.aggregates().at("app").state().total_samples_count == 1);
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

TEST_CASE("a pod alive at seeding continues its history's memory window, as in VPA") {
  // VPA keys a pod's ContainerState by namespace and name for history and live samples alike:
  // the live pod's first sample lands in the window its history opened, so the day keeps one
  // peak for the pod (replaced when higher), not a second one.
  AggregateOptions options;
  UsageHistory loaded;
  PodSeries cpu{"web-1", "app", {}};
  PodSeries memory{"web-1", "app", {}};
  for (int hour = 10; hour > 0; --hour) {
    cpu.points.push_back({kT0 - std::chrono::hours(hour), 0.3});
    memory.points.push_back({kT0 - std::chrono::hours(hour), 400 * kMi});
  }
  loaded.cpu = {cpu};
  loaded.memory = {memory};
  ScalerHistory history;
  REQUIRE(history.seed(loaded, options, 60).points == 10);
  const ContainerAggregate& seeded = history.aggregates().at("app");
  const double peaks = seeded.state().memory.total_weight();
  REQUIRE(seeded.memory_window(pod_key("web-1")));
  const TimePoint window_end = seeded.memory_window(pod_key("web-1"))->end;
  CHECK(window_end == kT0 - std::chrono::hours(10) + options.memory_aggregation_interval);

  // The same pod, live (its uid is no key): a higher usage replaces the window's peak.
  PodUsage live{"shop", "web-1", kT0, Duration(15'000), {{"app", 0.3, 500 * kMi}}};
  REQUIRE(history.fold({live}, {pod("web-1", 1)}, options).samples_added == 1);
  const ContainerAggregate& app = history.aggregates().at("app");
  CHECK(app.state().memory.total_weight() == doctest::Approx(peaks));
  REQUIRE(app.memory_window(pod_key("web-1")));
  CHECK(app.memory_window(pod_key("web-1"))->end == window_end);
  CHECK(app.memory_window(pod_key("web-1"))->memory_peak == doctest::Approx(500 * kMi));
}

TEST_CASE("a container without samples for 8 days is dropped, as VPA's garbage collector does") {
  // VPA (model/cluster.go, aggregate_container_state.go isExpired): an aggregate whose last
  // sample is memory aggregation interval x count (24 h x 8) old is deleted; so is one without
  // samples once that long has passed since its creation, or at once when no pod has its
  // container.
  AggregateOptions options;
  REQUIRE(options.history_length() == std::chrono::hours(24 * 8));
  const auto eight_days = options.history_length();
  auto sample = [](const std::string& pod_name, TimePoint at, std::vector<std::string> names) {
    PodUsage u{"shop", pod_name, at, Duration(15'000), {}};
    for (auto& c : names) u.containers.push_back({std::move(c), 0.3, 400 * kMi});
    return u;
  };
  auto names = [](const ScalerHistory& history) {
    std::vector<std::string> out;
    for (const auto& rec : history.recommendations(AggregateOptions{}, RecommendationOptions{})) {
      out.push_back(rec.container_name);
    }
    return out;
  };
  const std::vector<PodInfo> before = {pod("web-1", 2)};  // app, sidecar
  const std::vector<PodInfo> after = {pod("web-2", 1)};   // the sidecar was removed

  SUBCASE("a removed container: its recommendation, checkpoint entry and share go") {
    ScalerHistory history;
    (void)history.fold({sample("web-1", kT0, {"app", "sidecar"})}, before, options, {}, kT0);
    const TimePoint last = kT0 + eight_days - minutes(1);
    auto stats = history.fold({sample("web-2", last, {"app"})}, after, options, {}, last);
    CHECK(stats.aggregates_dropped == 0);
    CHECK(names(history) == std::vector<std::string>{"app", "sidecar"});
    CHECK(history.containers_sharing_minimums() == 2);
    const auto revision = history.revision();

    // No new sample of app in this pass (stale), yet the sidecar's is 8 days old now.
    stats = history.fold({sample("web-2", last, {"app"})}, after, options, {}, kT0 + eight_days);
    CHECK(stats.aggregates_dropped == 1);
    CHECK(names(history) == std::vector<std::string>{"app"});
    CHECK(history.containers_sharing_minimums() == 1);
    CHECK(history.revision() == revision + 1);  // the checkpoint is written without it
    const auto object = history.checkpoint("shop", "web", "scaler-uid");
    CHECK(object.dump().find("sidecar") == std::string::npos);
  }

  SUBCASE("a history restored from a checkpoint expires by the same rule") {
    ScalerHistory written;
    (void)written.fold({sample("web-1", kT0, {"app", "sidecar"})}, before, options, {}, kT0);
    auto restored = ScalerHistory::restore(written.checkpoint("shop", "web", "scaler-uid"),
                                           "scaler-uid", options);
    REQUIRE_MESSAGE(restored.ok(), restored.error());
    const TimePoint now = kT0 + eight_days;
    auto stats = restored->fold({sample("web-2", now, {"app"})}, after, options, {}, now);
    CHECK(stats.aggregates_dropped == 1);
    CHECK(names(*restored) == std::vector<std::string>{"app"});
  }

  SUBCASE("without samples: at once when no pod has the container, else 8 days after") {
    PodInfo killed = pod("web-1", 2);
    OomKill kill;
    kill.pod_uid = killed.uid;
    kill.container = "sidecar";
    kill.restart_count = 1;
    kill.finished_at = kT0;
    kill.memory_request_bytes = 100 * kMi;
    killed.oom_kills = {kill};
    ScalerHistory history;
    (void)history.fold({sample("web-1", kT0, {"app"})}, {killed}, options, {}, kT0);
    REQUIRE(history.aggregates().contains("sidecar"));  // an OOM kill alone: no samples
    CHECK(history.aggregates().at("sidecar").empty());
    const TimePoint later = kT0 + eight_days - minutes(1);
    (void)history.fold({sample("web-1", later, {"app"})}, before, options, {}, later);
    CHECK(history.aggregates().contains("sidecar"));
    SUBCASE("its container gone") {
      (void)history.fold({sample("web-2", later, {"app"})}, after, options, {}, later);
      CHECK_FALSE(history.aggregates().contains("sidecar"));
    }
    SUBCASE("its container still there, 8 days after it was first held") {
      (void)history.fold({}, before, options, {}, kT0 + eight_days);
      CHECK_FALSE(history.aggregates().contains("sidecar"));
      CHECK(history.aggregates().contains("app"));
    }
  }

  SUBCASE("without the pass's time, nothing is dropped") {
    ScalerHistory history;
    (void)history.fold({sample("web-1", kT0, {"app", "sidecar"})}, before, options);
    (void)history.fold({sample("web-2", kT0 + 30 * eight_days, {"app"})}, after, options);
    CHECK(history.aggregates().contains("sidecar"));
  }
}

TEST_CASE("a checkpoint leaves out the open interval of the pods owned at the last pass only") {
  AggregateOptions options;
  ScalerHistory history;
  const std::vector<PodInfo> pods = {pod("web-1", 1)};
  for (int m = 0; m < 3; ++m) {
    (void)history.fold({usage("web-1", m, 0.3)}, pods, options, {}, kT0 + minutes(m));
  }
  auto memory_of = [&](const ScalerHistory& h) {
    return h.checkpoint("shop", "web", "scaler-uid", &options)["spec"]["containers"][0]["memory"];
  };
  // web-1 runs: its 400Mi of today is left out (a restore opens its interval anew).
  CHECK(memory_of(history)["buckets"].empty());
  // Without the options (a plain encode): the histogram as it is.
  CHECK_FALSE(
      history.checkpoint("shop", "web", "scaler-uid")["spec"]["containers"][0]["memory"]["buckets"]
          .empty());
  // web-1 gone: its last peak is kept, and the change is one to write.
  const auto revision = history.revision();
  (void)history.fold({}, {}, options, {}, kT0 + minutes(4));
  CHECK(history.revision() > revision);
  CHECK_FALSE(memory_of(history)["buckets"].empty());
}
