// The recommender loop with one fake (loop_fixture.h: the API calls, inputs, scaler status,
// checkpoints) and everything else real (ScalerHistory, the estimator, the checkpoint codec, the
// status builder, the metrics registry): it restores before it folds, reads a namespace once,
// keeps the last recommendation on NoMetrics, folds only recommended containers, publishes only
// the resources each controls, drops state when not leading, forgets deleted scalers, and its
// thread stops cleanly with a last checkpoint.
// Its status writes are loop_status_test.cpp's.
#include "recommender/loop.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "kube/errors.h"
#include "test/unit/recommender/loop_fixture.h"

using namespace vscaler;
using namespace vscaler::recommender;
using namespace vscaler::recommender::testing;
using nlohmann::json;

TEST_CASE("a namespace of three scalers or more is read once per pass; fewer, per scaler") {
  Fixture f;
  for (const char* name : {"a", "b", "c"}) {
    f.add_scaler(scaler_object(name, std::string("u-") + name));
    f.api.inputs[name] = usage(1, 0);
  }
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  CHECK(loop.run_pass().scalers == 3);
  REQUIRE(f.api.passes.size() == 1);
  CHECK(f.api.passes[0] == std::set<std::string>{"shop"});
  f.api.scalers.erase("c");
  f.refresh();
  CHECK(loop.run_pass().scalers == 2);
  REQUIRE(f.api.passes.size() == 2);
  CHECK(f.api.passes[1].empty());
}

TEST_CASE("reasons: InsufficientHistory, NoMetrics keeps the recommendation, NoPodsMatched") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  // Two pods, metrics for one: not a full pass yet.
  ScalerInputs partial = usage(2, 0);
  partial.metrics.pop_back();
  f.api.inputs["web"] = partial;
  (void)loop.run_pass();
  CHECK(f.condition("web")["reason"] == "InsufficientHistory");
  CHECK(f.condition("web")["status"] == "False");
  CHECK_FALSE(f.api.scalers.at("web")["status"].contains("recommendation"));

  f.api.inputs["web"] = usage(2, 1);
  (void)loop.run_pass();
  CHECK(f.condition("web")["reason"] == "Recommended");
  json recommendation = f.api.scalers.at("web")["status"]["recommendation"];

  ScalerInputs down = usage(2, 2, false);
  down.metrics_error = SourceError{SourceErrorKind::kMetricsUnavailable, "503", std::nullopt};
  f.api.inputs["web"] = down;
  f.refresh();
  (void)loop.run_pass();
  CHECK(f.condition("web")["reason"] == "NoMetrics");
  CHECK(f.condition("web")["status"] == "False");
  CHECK(f.condition("web")["message"] == "2 pods, metrics API unavailable: 503");
  CHECK(f.api.scalers.at("web")["status"]["recommendation"] == recommendation);

  f.api.inputs["web"] = ScalerInputs{};
  f.refresh();
  (void)loop.run_pass();
  CHECK(f.condition("web")["reason"] == "NoPodsMatched");
  CHECK(f.condition("web")["message"] == "no pod of Deployment/web (0 matched its selector)");
  CHECK(f.api.scalers.at("web")["status"]["recommendation"] == recommendation);
}

TEST_CASE("only recommended containers are folded; minAllowed/maxAllowed clamp") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1",
                             json::array({{{"name", "istio-proxy"}, {"mode", "Off"}},
                                          {{"name", "app"},
                                           {"minAllowed", {{"cpu", "500m"}}},
                                           {"maxAllowed", {{"memory", "300Mi"}}}}})));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(2, 0);
  CHECK(loop.run_pass().samples == 2);
  const json& recs =
      f.api.scalers.at("web")["status"]["recommendation"]["containerRecommendations"];
  REQUIRE(recs.size() == 1);
  CHECK(recs[0]["containerName"] == "app");
  CHECK(recs[0]["target"]["cpu"] == "500m");
  CHECK(recs[0]["uncappedTarget"]["cpu"] == "352m");
  CHECK(recs[0]["target"]["memory"] == "300Mi");
  const ScalerHistory* history = loop.history("u1");
  REQUIRE(history != nullptr);
  CHECK(history->aggregates().count("istio-proxy") == 0);
}

TEST_CASE("a resource controlledResources leaves out is not published, nor exported") {
  // VPA's FilterControlledResources: a cpu-only container's recommendation has no memory in any
  // bound; a container without an entry of its own keeps both (the "*" entry's default).
  Fixture f;
  f.add_scaler(scaler_object(
      "web", "u1",
      json::array({{{"name", "app"}, {"controlledResources", {"cpu"}}}, {{"name", "*"}}})));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(2, 0);
  CHECK(loop.run_pass().published == 1);
  const json& recs =
      f.api.scalers.at("web")["status"]["recommendation"]["containerRecommendations"];
  REQUIRE(recs.size() == 2);
  CHECK(recs[0]["containerName"] == "app");
  for (const char* bound : {"target", "lowerBound", "upperBound", "uncappedTarget"}) {
    CAPTURE(bound);
    CHECK(recs[0][bound] == json{{"cpu", recs[0][bound]["cpu"]}});
    CHECK(recs[1][bound].contains("memory"));
  }
  CHECK(recs[0]["target"]["cpu"] == "352m");
  CHECK(recs[1]["containerName"] == "istio-proxy");
  const std::string rendered = f.rendered();
  CHECK(rendered.find(R"(container="app",resource="cpu")") != std::string::npos);
  CHECK(rendered.find(R"(container="app",resource="memory")") == std::string::npos);
  CHECK(rendered.find(R"(container="istio-proxy",resource="memory")") != std::string::npos);
}

TEST_CASE("the namespace's LimitRange caps the published bounds; uncappedTarget does not move") {
  Fixture f;
  f.add_scaler(
      scaler_object("web", "u1", json::array({{{"name", "app"}, {"maxAllowed", {{"cpu", "2"}}}}})));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  ScalerInputs in = usage(2, 0);
  in.limit_range = LimitRangeItem{{{"memory", kube::Quantity::parse("500Mi").value()}},
                                  {{"cpu", kube::Quantity::parse("200m").value()}},
                                  {}};
  f.api.inputs["web"] = in;
  CHECK(loop.run_pass().published == 1);
  const json& recs =
      f.api.scalers.at("web")["status"]["recommendation"]["containerRecommendations"];
  REQUIRE(recs.size() == 1);  // only the listed container
  const json& app = recs[0];
  CHECK(app["uncappedTarget"]["cpu"] == "352m");
  CHECK(app["target"]["cpu"] == "200m");  // LimitRange max, below maxAllowed 2
  CHECK(app["upperBound"]["cpu"] == "200m");
  CHECK(app["target"]["memory"] == "500Mi");  // LimitRange min
  CHECK(app["lowerBound"]["memory"] == "500Mi");
}

TEST_CASE("the largest node and the global flags cap; maxAllowed wins; nodes listed once a pass") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1", json::array({{{"name", "app"}}})));
  f.add_scaler(scaler_object("api", "u2",
                             json::array({{{"name", "app"}, {"maxAllowed", {{"cpu", "300m"}}}}})));
  LoopOptions options;
  options.max_allowed[kMemory] = kube::Quantity::parse("300Mi").value();
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  f.api.largest = {{kCpu, kube::Quantity::parse("250m").value()},
                   {kMemory, kube::Quantity::parse("4Gi").value()}};
  f.api.inputs["web"] = usage(2, 0);
  f.api.inputs["api"] = usage(2, 0);
  CHECK(loop.run_pass().published == 2);
  CHECK(f.api.node_lists == 1);
  auto app = [&](const char* scaler) {
    return f.api.scalers.at(scaler)["status"]["recommendation"]["containerRecommendations"][0];
  };
  CHECK(app("web")["target"]["cpu"] == "250m");  // the largest node's 250m
  CHECK(app("web")["uncappedTarget"]["cpu"] == "352m");
  CHECK(app("web")["target"]["memory"] == "300Mi");  // the flag, below the node's 4Gi
  CHECK(app("web")["uncappedTarget"]["memory"] == "489Mi");
  CHECK(app("api")["target"]["cpu"] == "300m");  // its maxAllowed wins over the node
  // A failed node list keeps the last one's caps.
  f.api.nodes_forbidden = true;
  f.api.inputs["web"] = usage(3, 0);
  (void)loop.run_pass();
  CHECK(f.api.node_lists == 2);
  CHECK(app("web")["target"]["cpu"] == "250m");
}

TEST_CASE("a scaler with only fixed values or Off containers is not read at all") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1",
                             json::array({{{"name", "app"}, {"requests", {{"cpu", "100m"}}}}})));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(2, 0);
  CHECK(loop.run_pass().scalers == 0);
  CHECK(f.api.count("read") == 0);
}

TEST_CASE("the history is restored from the checkpoint before the first fold, and continues") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  json target;
  {
    RecommenderLoop first(f.api, f.hooks(), LoopOptions{}, f.registry);
    for (int m = 0; m < 5; ++m) {
      f.api.inputs["web"] = usage(3, m);
      (void)first.run_pass();
    }
    CHECK(first.save_checkpoints() == 1);
    target = f.api.scalers.at("web")["status"]["recommendation"];
  }
  metrics::Registry fresh_registry;
  RecommenderLoop second(f.api, f.hooks(), LoopOptions{}, fresh_registry);
  f.api.calls.clear();
  f.api.inputs["web"] = usage(3, 5);
  (void)second.run_pass();
  REQUIRE(f.api.calls.size() >= 2);
  CHECK(f.api.calls[0] == "load web");
  CHECK(f.api.calls[1] == "read web");
  const ScalerHistory* history = second.history("u1");
  REQUIRE(history != nullptr);
  CHECK(history->aggregates().at("app").state().total_samples_count == 18);
  // A restored history counts as having had its full pass: Recommended at once.
  CHECK(f.condition("web")["reason"] == "Recommended");
  // A checkpoint of another scaler of the same name (other uid) is ignored, never fatal.
  f.api.scalers["web"]["metadata"]["uid"] = "u2";
  f.refresh();
  (void)second.run_pass();
  REQUIRE(second.history("u2") != nullptr);
  CHECK(second.history("u2")->aggregates().at("app").state().total_samples_count == 3);
  CHECK(second.history("u1") == nullptr);  // the old uid is gone: forgotten
  // Not the checkpoint object's version: u2 writes the same object ("web"), and read its version.
  CHECK(f.api.count("forget web") == 0);
}

TEST_CASE("not leading: nothing is read or written, and leading again restores first") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(1, 0);
  (void)loop.run_pass();
  CHECK(f.api.count("load") == 1);
  f.leading = false;
  f.api.calls.clear();
  CHECK_FALSE(loop.run_pass().ran);
  CHECK(loop.save_checkpoints() == 0);
  // No API call; the checkpoint's version is forgotten with the history (learnt again with it).
  CHECK(f.api.calls.size() == 1);
  CHECK(f.api.count("forget web") == 1);
  CHECK(loop.history("u1") == nullptr);
  CHECK(f.rendered().find("vscaler_recommendation{") == std::string::npos);
  f.leading = true;
  (void)loop.run_pass();
  CHECK(f.api.count("load") == 1);  // a new term: restored again before folding
  // on_started_leading (a term that began and ended between two passes) also restores.
  loop.on_started_leading();
  (void)loop.run_pass();
  CHECK(f.api.count("load") == 2);
}

TEST_CASE("checkpoints: only histories that changed, one slice of the scalers at a time") {
  Fixture f;
  for (int i = 0; i < 10; ++i) {
    const std::string name = "s" + std::to_string(i);
    f.add_scaler(scaler_object(name, "u" + std::to_string(i)));
    f.api.inputs[name] = usage(1, 0);
  }
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  (void)loop.run_pass();
  // Every slice once: each scaler written exactly once.
  std::size_t written = 0;
  for (unsigned slice = 0; slice < 5; ++slice) written += loop.save_checkpoints(slice, 5);
  CHECK(written == 10);
  CHECK(f.api.count("save") == 10);
  // Nothing changed since: nothing to write, in slices or all at once.
  CHECK(loop.save_checkpoints() == 0);
  // New samples for two scalers (the others: their pod, no new sample): only theirs are written.
  f.api.inputs["s3"] = usage(1, 1);
  f.api.inputs["s7"] = usage(1, 1);
  (void)loop.run_pass();
  CHECK(loop.save_checkpoints() == 2);
  CHECK(f.api.count("save") == 12);
  // s5's pod gone: the peak of its open interval, left out while it ran, now belongs in the
  // checkpoint (it never samples again to open it anew).
  f.api.inputs["s5"] = usage(0, 2);
  (void)loop.run_pass();
  CHECK(loop.save_checkpoints() == 1);
  CHECK(f.api.count("save") == 13);
}

TEST_CASE("a leader that stops leading mid-pass writes no more status and no checkpoint") {
  Fixture f;
  for (const char* name : {"a", "b", "c", "d"}) {
    f.add_scaler(scaler_object(name, std::string("u-") + name));
    f.api.inputs[name] = usage(1, 0);
  }
  // The Lease is lost (a freeze past it, say) after the second status write was asked for.
  std::atomic<int> asked{0};  // asked by the status writers' threads
  LoopHooks hooks = f.hooks();
  hooks.still_leading = [&asked] { return ++asked <= 2; };
  RecommenderLoop loop(f.api, hooks, LoopOptions{}, f.registry);
  auto pass = loop.run_pass();  // begin_step said yes: the pass ran
  CHECK(pass.ran);
  CHECK(f.api.status_writes == 2);
  CHECK(pass.published == 2);
  CHECK(loop.save_checkpoints() == 0);
  CHECK(f.api.count("save") == 0);
  // The checkpoint and c's status; d's too when its writer asked before c's dropped it (the
  // writers run at once, and a fenced write drops those still waiting).
  const std::string rendered = f.rendered();
  const std::string counter = "\nvscaler_leader_writes_fenced_total ";  // the sample line
  const auto at = rendered.find(counter);
  REQUIRE(at != std::string::npos);
  const int fenced = std::stoi(rendered.substr(at + counter.size()));
  CHECK(fenced >= 2);
  CHECK(fenced <= 3);
}

TEST_CASE("a deleted scaler's history and gauges are forgotten") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(1, 0);
  (void)loop.run_pass();
  CHECK(f.rendered().find("verticalscaler=\"web\"") != std::string::npos);
  // Fixed values only now: no longer recommended, its gauges go (its history stays).
  f.api.scalers["web"]["spec"]["containers"] =
      json::array({{{"name", "app"}, {"requests", {{"cpu", "100m"}}}}});
  f.refresh();
  (void)loop.run_pass();
  CHECK(f.rendered().find("verticalscaler=\"web\"") == std::string::npos);
  CHECK(loop.history("u1") != nullptr);
  f.api.scalers.clear();
  f.refresh();
  (void)loop.run_pass();
  CHECK(loop.history("u1") == nullptr);
  CHECK(f.api.count("forget web") == 1);
  CHECK(f.rendered().find("verticalscaler=\"web\"") == std::string::npos);
}

TEST_CASE("a scaler deleted and created again under its name keeps the new one's gauges") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(1, 0);
  (void)loop.run_pass();
  f.api.scalers.clear();  // kubectl delete, then apply, between two passes: another uid
  f.add_scaler(scaler_object("web", "u2"));
  (void)loop.run_pass();
  CHECK(loop.history("u1") == nullptr);
  CHECK(loop.history("u2") != nullptr);
  // Pruning u1 came after the pass wrote u2's rows, under the same labels: they stay.
  CHECK(f.rendered().find("verticalscaler=\"web\"") != std::string::npos);
}

TEST_CASE("a scaler created again under its name that recommends nothing yet drops the old rows") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(1, 0);
  (void)loop.run_pass();
  REQUIRE(f.rendered().find("verticalscaler=\"web\"") != std::string::npos);
  f.api.scalers.clear();
  f.api.inputs.erase("web");  // the new one's workload has no pods yet
  f.add_scaler(scaler_object("web", "u2"));
  (void)loop.run_pass();
  CHECK(loop.history("u2") != nullptr);
  CHECK(f.rendered().find("verticalscaler=\"web\"") == std::string::npos);  // not u1's, stale
}

TEST_CASE("the loop's thread passes on its interval and stops with a last checkpoint") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.api.inputs["web"] = usage(2, 0);
  LoopOptions options;
  options.interval = std::chrono::milliseconds(5);
  options.checkpoint_interval = std::chrono::hours(1);
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  loop.start();
  {
    std::unique_lock lock(f.api.mutex);
    REQUIRE(f.api.written.wait_for(lock, std::chrono::seconds(10),
                                   [&] { return f.api.status_writes >= 1; }));
  }
  loop.stop();
  CHECK(f.api.count("save web") == 1);
  loop.stop();  // idempotent
  CHECK(f.api.count("save web") == 1);
}

TEST_CASE("stop() ends a pass under way and bounds the last checkpoints by its budget") {
  Fixture f;
  constexpr int kScalers = 48;
  for (int i = 0; i < kScalers; ++i) {
    const std::string name = "w" + std::to_string(i);
    f.add_scaler(scaler_object(name, "u" + std::to_string(i)));
    f.api.inputs[name] = usage(1, 0);
  }
  f.api.patch_delay = std::chrono::milliseconds(25);  // a pass: 48 writes in a row, 1.2 s
  f.api.save_delay = std::chrono::milliseconds(25);   // a checkpoint write
  LoopOptions options;
  options.interval = std::chrono::hours(1);  // the first pass only
  options.checkpoint_interval = std::chrono::hours(1);
  options.status_writers = 0;
  options.write_qps = 0;
  options.shutdown_checkpoint_budget = std::chrono::milliseconds(150);
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  loop.start();
  {
    std::unique_lock lock(f.api.mutex);
    REQUIRE(f.api.written.wait_for(lock, std::chrono::seconds(10),
                                   [&] { return f.api.status_writes >= 16; }));
  }
  const auto stopping = std::chrono::steady_clock::now();
  loop.stop();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopping).count();
  // The pass stopped after the scaler at hand: most statuses were never written.
  CHECK(f.api.status_writes < kScalers / 2);
  // The checkpoints of the ~17 scalers passed (425 ms of writes), as many as fit in 150 ms.
  std::vector<unsigned> slices;  // of the saved scalers, in order (the loop's 10 slices by uid)
  for (const auto& call : f.api.calls) {
    if (call.rfind("save w", 0) != 0) continue;
    slices.push_back(std::hash<std::string>{}("u" + call.substr(6)) % 10);
  }
  CHECK(slices.size() >= 1);
  CHECK(slices.size() <= 8);  // 6 fit in the budget, and the one under way at its end
  CHECK(std::is_sorted(slices.begin(), slices.end()));  // slice 0 (the next tick's) first
  CHECK(took < 0.8);  // against 0.8 s of pass left and 0.4 s of checkpoints unbounded
}

TEST_CASE("the first pass waits until the scalers are known; becoming leader passes at once") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.api.inputs["web"] = usage(1, 0);
  std::atomic<bool> synced{false};
  LoopHooks hooks = f.hooks();
  hooks.synced = [&synced] { return synced.load(); };
  LoopOptions options;
  options.interval = std::chrono::hours(1);  // only the first pass and wake-ups
  options.checkpoint_interval = std::chrono::hours(1);
  RecommenderLoop loop(f.api, std::move(hooks), options, f.registry);
  loop.start();
  loop.on_started_leading();  // not synced yet: nothing is read
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(f.api.count("read") == 0);
  synced = true;
  {
    std::unique_lock lock(f.api.mutex);
    REQUIRE(f.api.written.wait_for(lock, std::chrono::seconds(10),
                                   [&] { return f.api.status_writes >= 1; }));
  }
  loop.stop();
}

TEST_CASE("a scaler that appears is passed over at once, alone; the others keep their state") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.api.inputs["web"] = usage(1, 0);
  f.api.inputs["api"] = usage(1, 0);
  LoopOptions options;
  options.interval = std::chrono::hours(1);  // the interval's pass never comes in this test
  options.checkpoint_interval = std::chrono::hours(1);
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  loop.start();  // the first pass: web
  {
    std::unique_lock lock(f.api.mutex);
    REQUIRE(f.api.written.wait_for(lock, std::chrono::seconds(10),
                                   [&] { return f.api.status_writes >= 1; }));
  }
  f.add_scaler(scaler_object("api", "u2"));
  loop.on_scaler_appeared();
  {
    std::unique_lock lock(f.api.mutex);
    REQUIRE(f.api.written.wait_for(lock, std::chrono::seconds(10),
                                   [&] { return f.api.status_writes >= 2; }));
  }
  loop.stop();
  CHECK(f.api.count("read web") == 1);  // not read again by the pass over the new one
  CHECK(f.api.count("read api") == 1);
  CHECK(f.api.node_lists == 1);  // the pass over the new one reused the first pass's caps
  CHECK(f.rendered().find("verticalscaler=\"web\"") != std::string::npos);  // gauges kept
  CHECK(f.rendered().find("verticalscaler=\"api\"") != std::string::npos);
  // Nothing new: a pass over new scalers reads nothing at all.
  const int lists = f.api.node_lists;
  auto idle = loop.run_pass(std::chrono::system_clock::now(), PassScope::kNewScalers);
  CHECK(idle.scalers == 0);
  CHECK(f.api.node_lists == lists);
}

TEST_CASE("a namespace of several unrestored scalers restores them from one checkpoint read") {
  Fixture f;
  for (const char* name : {"a", "b", "c"}) {
    f.add_scaler(scaler_object(name, std::string("u-") + name));
    f.api.inputs[name] = usage(1, 0);
  }
  {
    RecommenderLoop first(f.api, f.hooks(), LoopOptions{}, f.registry);
    (void)first.run_pass();
    CHECK(f.api.namespace_loads == 1);  // none existed yet: one read said so for all three
    CHECK(first.save_checkpoints() == 3);
    (void)first.run_pass();
    CHECK(f.api.namespace_loads == 1);  // restored ones are not read again
  }
  metrics::Registry fresh_registry;
  RecommenderLoop second(f.api, f.hooks(), LoopOptions{}, fresh_registry);
  auto restored = second.run_pass();
  CHECK(f.api.namespace_loads == 2);
  // The restored histories already hold the inputs' samples (same timestamps): none is new. An
  // empty history would have taken one per scaler.
  CHECK(restored.samples == 0);
  for (const char* uid : {"u-a", "u-b", "u-c"}) {
    REQUIRE(second.history(uid) != nullptr);
    CHECK_FALSE(second.history(uid)->aggregates().empty());
  }
  // Two scalers in a namespace: each reads its own.
  Fixture g;
  for (const char* name : {"a", "b"}) {
    g.add_scaler(scaler_object(name, std::string("u-") + name));
    g.api.inputs[name] = usage(1, 0);
  }
  RecommenderLoop pair(g.api, g.hooks(), LoopOptions{}, g.registry);
  (void)pair.run_pass();
  CHECK(g.api.namespace_loads == 0);
  CHECK(g.api.count("load") == 2);
}

TEST_CASE("--recommender-interval 0: the loop never runs") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.api.inputs["web"] = usage(2, 0);
  LoopOptions options;
  options.interval = std::chrono::milliseconds(0);
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  loop.start();
  loop.stop();
  CHECK(f.api.calls.empty());
}

namespace {

// A history source answering a fixed history (or an error), counting its loads.
class FakeHistory final : public HistorySource {
 public:
  std::optional<HistoryError> error;
  std::chrono::milliseconds takes{0};  ///< how long each load lasts
  std::chrono::hours ends_before{0};   ///< the last point is this long before `now`, plus 1 h
  int loads = 0;
  kube::Result<UsageHistory, HistoryError> load(const TargetWorkload& target,
                                                TimePoint now) override {
    ++loads;
    if (takes.count() > 0) std::this_thread::sleep_for(takes);
    if (error) return kube::fail(*error);
    UsageHistory history;
    history.queries = 2;
    PodSeries cpu{target.name + "-7f9c5d8b4-abcde", "app", {}};
    PodSeries memory = cpu;
    // Eight days of hourly points before `now`: 300m, 400Mi.
    for (int hour = 192; hour > 0; --hour) {
      cpu.points.push_back({now - ends_before - std::chrono::hours(hour), 0.3});
      memory.points.push_back({now - ends_before - std::chrono::hours(hour), 400 * kMi});
    }
    history.cpu = {cpu};
    history.memory = {memory};
    return history;
  }
};

// A new leader over the checkpoints `before` wrote: `scalers` (name, uid), each with samples of
// round `round`, `source` asked for histories; its first pass is run.
struct NewLeader {
  Fixture f;
  RecommenderLoop loop{f.api, f.hooks(), LoopOptions{}, f.registry};
  NewLeader(const Fixture& before,
            std::initializer_list<std::pair<const char*, const char*>> scalers, int round,
            HistorySource& source) {
    f.api.checkpoints = before.api.checkpoints;
    for (const auto& [name, uid] : scalers) {
      f.add_scaler(scaler_object(name, uid));
      f.api.inputs[name] = usage(3, round);
    }
    loop.set_history_source(&source);
    loop.run_pass();
  }
  std::string message(const std::string& name) {
    return f.condition(name)["message"].get<std::string>();
  }
};

double upper_over_target(const json& recommendation) {
  auto cores = [](const json& value) {
    return vscaler::kube::Quantity::parse(value.get<std::string>())->to_double();
  };
  return cores(recommendation["upperBound"]["cpu"]) / cores(recommendation["target"]["cpu"]);
}

// A leader that could not reach Prometheus: one pass over `inputs` for scaler web (added to `f`
// before), then its checkpoints, which want the history asked again.
void checkpoint_without_history(Fixture& f, const ScalerInputs& inputs) {
  FakeHistory down;
  down.error = HistoryError{"Prometheus at http://prometheus:9090: connection refused", true};
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  loop.set_history_source(&down);
  f.api.inputs["web"] = inputs;
  loop.run_pass();
  loop.save_checkpoints();
}

}  // namespace

TEST_CASE("a scaler without a checkpoint starts from its history: narrow bounds at once") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.add_scaler(scaler_object("api", "u2"));
  FakeHistory history;
  LoopOptions options;
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  loop.set_history_source(&history);
  f.api.inputs["web"] = usage(3, 0);
  f.api.inputs["api"] = usage(3, 0);
  auto pass = loop.run_pass(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(kT0.time_since_epoch())));
  CHECK(history.loads == 2);
  CHECK(pass.history_queries == 4);
  const json& app =
      f.api.scalers.at("web")["status"]["recommendation"]["containerRecommendations"][0];
  CAPTURE(app.dump());
  CHECK(upper_over_target(app) <= 1.5);
  CHECK(f.condition("web")["message"].get<std::string>().find(
            "history from Prometheus: 192 points of 1 pod(s) over 7d23h") != std::string::npos);
  // Loaded once: the next pass reads only live samples.
  f.api.inputs["web"] = usage(3, 1);
  loop.run_pass();
  CHECK(history.loads == 2);
}

TEST_CASE("history unavailable: live samples, the reason in the message, one try per pass") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.add_scaler(scaler_object("api", "u2"));
  FakeHistory history;
  history.error = HistoryError{"Prometheus at http://prometheus:9090: connection refused", true};
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  loop.set_history_source(&history);
  f.api.inputs["web"] = usage(3, 0);
  f.api.inputs["api"] = usage(3, 0);
  auto pass = loop.run_pass();
  CHECK(pass.published == 2);
  CHECK(history.loads == 1);  // the second scaler of the pass is not asked again
  for (const char* name : {"web", "api"}) {
    CAPTURE(name);
    CHECK(f.condition(name)["reason"] == "Recommended");
    CHECK(f.condition(name)["message"].get<std::string>().find(
              "history from Prometheus not available (Prometheus at http://prometheus:9090: "
              "connection "
              "refused); from live samples only") != std::string::npos);
    // Live samples alone: a young history's wide bounds.
    CHECK(upper_over_target(f.api.scalers.at(
              name)["status"]["recommendation"]["containerRecommendations"][0]) > 10);
  }
  // Their checkpoints say the history is still wanted: the next leader start asks again, and
  // takes a history that reaches the present in place of the checkpoint's live samples.
  loop.save_checkpoints();
  REQUIRE(f.api.checkpoints.count("web"));
  CHECK(f.api.checkpoints.at(
            "web")["metadata"]["annotations"]["scaling.vscaler.dev/history-wanted"] == "true");
  FakeHistory back;
  NewLeader restarted(f, {{"web", "u1"}}, 2, back);
  CHECK(back.loads == 1);
  CHECK(restarted.message("web").find(
            "history from Prometheus: 192 points of 1 pod(s) over 7d23h, asked again at this "
            "leader start") != std::string::npos);
  CHECK(upper_over_target(restarted.f.api.scalers.at(
            "web")["status"]["recommendation"]["containerRecommendations"][0]) <= 1.5);
  // Not wanted any more: its next checkpoint says nothing, and a later leader never asks.
  restarted.loop.save_checkpoints();
  CHECK_FALSE(restarted.f.api.checkpoints.at("web")["metadata"].contains("annotations"));
  FakeHistory unused;
  NewLeader again(restarted.f, {{"web", "u1"}}, 3, unused);
  CHECK(unused.loads == 0);
}

TEST_CASE("asked again at a leader start, a history that stops days ago keeps the checkpoint") {
  // Prometheus lacks the days the checkpoint sampled live: those are the checkpoint's, so it
  // stays.
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  checkpoint_without_history(f, usage(3, 0));
  FakeHistory stale;
  stale.ends_before = std::chrono::hours(48);
  NewLeader restarted(f, {{"web", "u1"}}, 1, stale);
  CHECK(stale.loads == 1);
  CHECK(restarted.message("web").find(
            "the checkpoint kept (the history does not span its samples)") != std::string::npos);
  CHECK(upper_over_target(restarted.f.api.scalers.at(
            "web")["status"]["recommendation"]["containerRecommendations"][0]) > 10);
  // Prometheus answered: what it lacks it will not have later either. Not asked again.
  restarted.loop.save_checkpoints();
  CHECK_FALSE(restarted.f.api.checkpoints.at("web")["metadata"].contains("annotations"));
}

TEST_CASE("a history taking a checkpoint's place keeps the memory peaks OOM kills raised") {
  // Prometheus knows no OOM kill: the peak one raised in the checkpoint (400Mi used, killed:
  // 400Mi + 100MB) is above every peak Prometheus has, and stays, with its weight.
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  ScalerInputs killed = usage(3, 0);
  killed.owned_pods[0].oom_kills.push_back(
      {"uid-web-0", "app", 1, kT0 + std::chrono::seconds(10), 400 * kMi});
  checkpoint_without_history(f, killed);
  auto memory = [](const json& recommendation) {
    return vscaler::kube::Quantity::parse(recommendation["target"]["memory"].get<std::string>())
        ->to_double();
  };
  FakeHistory back;
  NewLeader restarted(f, {{"web", "u1"}}, 1, back);
  CAPTURE(restarted.message("web"));
  CHECK(restarted.message("web").find(
            "in place of the checkpoint; its memory peaks above all of Prometheus' kept for 1 "
            "container(s); 1 container(s) Prometheus has no history of kept from it") !=
        std::string::npos);
  const json& app =
      restarted.f.api.scalers.at("web")["status"]["recommendation"]["containerRecommendations"][0];
  CAPTURE(app.dump());
  CHECK(memory(app) >= 400 * kMi + 100e6);
  CHECK(upper_over_target(app) <= 1.5);  // and the CPU is Prometheus' eight days

  // Without a kill, the checkpoint's peaks are Prometheus' too: nothing beyond them is kept (but
  // the sidecar, which this Prometheus has no series of).
  Fixture calm;
  calm.add_scaler(scaler_object("web", "u1"));
  checkpoint_without_history(calm, usage(3, 0));
  FakeHistory calm_back;
  NewLeader calm_restarted(calm, {{"web", "u1"}}, 1, calm_back);
  CAPTURE(calm_restarted.message("web"));
  CHECK(calm_restarted.message("web").find("memory peaks") == std::string::npos);
  CHECK(memory(calm_restarted.f.api.scalers.at(
            "web")["status"]["recommendation"]["containerRecommendations"][0]) < 400 * kMi + 100e6);
}

TEST_CASE("one target's bad answer is its own: the next scaler of the pass is still asked") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.add_scaler(scaler_object("api", "u2"));
  FakeHistory history;
  history.error = HistoryError{
      "Prometheus at http://prometheus:9090: HTTP 422, execution: "
      "query processing would load too many samples into memory",
      false};
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  loop.set_history_source(&history);
  f.api.inputs["web"] = usage(3, 0);
  f.api.inputs["api"] = usage(3, 0);
  loop.run_pass();
  CHECK(history.loads == 2);
  for (const char* name : {"web", "api"}) {
    CAPTURE(name);
    CHECK(f.condition(name)["message"].get<std::string>().find(
              "history from Prometheus not available (Prometheus at http://prometheus:9090: HTTP "
              "422") != std::string::npos);
  }
}

TEST_CASE("a slow history source spends the pass's budget; the scalers after it start live") {
  // DESIGN: Prometheus down or slow, the scaler starts from live samples and is asked again at
  // the next leader start; a pass never waits a load per new scaler.
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  f.add_scaler(scaler_object("api", "u2"));
  FakeHistory history;
  history.takes = std::chrono::milliseconds(30);
  LoopOptions options;
  options.history_budget = std::chrono::milliseconds(10);
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  loop.set_history_source(&history);
  f.api.inputs["web"] = usage(3, 0);
  f.api.inputs["api"] = usage(3, 0);
  auto first = loop.run_pass();
  CHECK(history.loads == 1);  // the first in the pass's order (api), then the budget is spent
  CHECK(first.history_skipped == 1);
  CHECK(first.published == 2);
  CHECK(first.failed == 0);
  CHECK(f.condition("api")["message"].get<std::string>().find("history from Prometheus: 192") !=
        std::string::npos);
  CHECK(f.condition("web")["message"].get<std::string>().find(
            "history from Prometheus not available (this pass's 10ms for histories were spent: "
            "Prometheus "
            "is slow); from live samples only") != std::string::npos);
  f.api.inputs["web"] = usage(3, 1);
  f.api.inputs["api"] = usage(3, 1);
  loop.run_pass();
  CHECK(history.loads == 1);  // not asked again by this leader
  // The next leader asks again for web's.
  loop.save_checkpoints();
  FakeHistory back;
  NewLeader restarted(f, {{"web", "u1"}, {"api", "u2"}}, 2, back);
  CHECK(back.loads == 1);
  CHECK(restarted.message("web").find(
            "asked again at this leader start, in place of the checkpoint") != std::string::npos);
}

TEST_CASE("a container removed from the pods for 8 days leaves the published recommendation") {
  // The pass's time expires histories (VPA's garbage collection): the sidecar's last sample was
  // 8 days before it, so it is neither published nor shares the per-pod minimums any more.
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  auto at = [](int minute) {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            (kT0 + std::chrono::minutes(minute)).time_since_epoch()));
  };
  auto containers = [&f] {
    std::vector<std::string> names;
    for (const auto& rec :
         f.api.scalers.at("web")["status"]["recommendation"]["containerRecommendations"]) {
      names.push_back(rec["containerName"].get<std::string>());
    }
    return names;
  };
  f.api.inputs["web"] = usage(1, 0);
  (void)loop.run_pass(at(0));
  CHECK(containers() == std::vector<std::string>{"app", "istio-proxy"});
  const int eight_days = 8 * 24 * 60;
  auto without_sidecar = [](int minute) {
    ScalerInputs in = usage(1, minute);
    in.owned_pods[0].containers.pop_back();
    in.metrics[0].containers.pop_back();
    return in;
  };
  f.api.inputs["web"] = without_sidecar(eight_days - 1);
  f.refresh();
  (void)loop.run_pass(at(eight_days - 1));
  CHECK(containers() == std::vector<std::string>{"app", "istio-proxy"});
  f.api.inputs["web"] = without_sidecar(eight_days);
  f.refresh();
  (void)loop.run_pass(at(eight_days));
  CHECK(containers() == std::vector<std::string>{"app"});
}
