// The recommender loop's status writes, with the one fake of loop_fixture.h and everything else
// real: a recommendation is published once per change with a resourceVersion precondition (a
// conflict re-reads), rests on the informer's current copy, goes out on several writers under the
// write rate, and bounds that no decision rests on are rewritten rarely (provided_status.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "recommender/loop.h"
#include "test/unit/recommender/loop_fixture.h"

using namespace vscaler;
using namespace vscaler::recommender;
using namespace vscaler::recommender::testing;
using nlohmann::json;

TEST_CASE("a full pass publishes the recommendation once; an unchanged pass writes nothing") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(3, 0);
  auto first = loop.run_pass();
  CHECK(first.ran);
  CHECK(first.scalers == 1);
  CHECK(first.samples == 6);
  CHECK(first.published == 1);
  CHECK(f.published == std::vector<std::string>{"shop/web"});
  const json& status = f.api.scalers.at("web")["status"];
  REQUIRE(status["recommendation"]["containerRecommendations"].size() == 2);
  const json& app = status["recommendation"]["containerRecommendations"][0];
  CHECK(app["containerName"] == "app");
  CHECK(app["target"]["cpu"] == "352m");  // p90 bucket end of 300m, + 15 %
  CHECK(f.condition("web")["status"] == "True");
  CHECK(f.condition("web")["reason"] == "Recommended");
  CHECK(f.condition("web")["message"] == "3 pods, 3 with metrics, 6 container samples");
  CHECK(f.condition("web")["observedGeneration"] == 2);
  // The reconciler's condition is kept; lastRecommendationUpdateTime is never written.
  CHECK(status["conditions"][0]["type"] == "TargetFound");
  CHECK_FALSE(status.contains("lastRecommendationUpdateTime"));
  CHECK(f.rendered().find("vscaler_recommendation{namespace=\"shop\",verticalscaler=\"web\","
                          "container=\"app\",resource=\"cpu\",bound=\"target\"} 0.352") !=
        std::string::npos);
  CHECK(f.rendered().find("vscaler_recommender_samples_total 6") != std::string::npos);

  // The same samples again (metrics-server not scraped since): nothing changes, no write, and
  // once the informer's copy has caught up not even a read.
  f.refresh();
  int gets = f.api.count("get ");
  auto second = loop.run_pass();
  CHECK(second.published == 0);
  CHECK(f.api.status_writes == 1);
  CHECK(f.api.count("get ") == gets);
  CHECK(f.published.size() == 1);
}

namespace {

// The app container's memory upperBound: as the status stores it, and as the pass computed it
// (its gauge), in bytes.
double stored_upper_memory(Fixture& f) {
  const json& app =
      f.api.scalers.at("web")["status"]["recommendation"]["containerRecommendations"][0];
  return kube::Quantity::parse(app["upperBound"]["memory"].get<std::string>())->to_double();
}
double computed_upper_memory(Fixture& f) {
  const std::string key =
      "vscaler_recommendation{namespace=\"shop\",verticalscaler=\"web\",container=\"app\","
      "resource=\"memory\",bound=\"upperBound\"} ";
  const std::string text = f.rendered();
  const auto at = text.find(key);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + key.size()));
}

// Status writes in passes 16 to `passes` of a young history, a pass a minute (its upperBound
// falling ~1/n a pass; its lowerBound has settled within 5 % by then), of 3 pods whose app
// container requests `request` of memory; every stored upperBound is checked within 25 % of one
// computed in the last kFarBoundRefreshPasses passes (the scaler's last refresh pass).
int late_writes_of_young_history(const char* request, int passes) {
  int early_writes = 0;
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  std::deque<double> computed;  // the last kFarBoundRefreshPasses passes' upperBounds
  for (int minute = 0; minute < passes; ++minute) {
    ScalerInputs in = usage(3, minute);
    for (PodInfo& pod : in.owned_pods) {
      pod.containers[0].requests["memory"] = kube::Quantity::parse(request).value();
    }
    f.api.inputs["web"] = in;
    loop.run_pass();
    f.refresh();
    if (minute == 15) early_writes = f.api.status_writes;
    computed.push_back(computed_upper_memory(f));
    if (computed.size() > kFarBoundRefreshPasses) computed.pop_front();
    CAPTURE(minute);
    const double stored = stored_upper_memory(f);
    CHECK(std::any_of(computed.begin(), computed.end(), [stored](double value) {
      return stored <= 1.25 * value && stored >= value / 1.25;
    }));
  }
  return f.api.status_writes - early_writes;
}

}  // namespace

TEST_CASE("a young upperBound above every request is rewritten when it moved by a quarter") {
  // Requests of 400Mi, the usage: the bound (tens of times that) may lag by up to 25 %.
  const int far = late_writes_of_young_history("400Mi", 60);
  // Requests above every bound the history reaches: each move over 5 % decides a pod, so it is
  // written as before.
  const int near = late_writes_of_young_history("100Ti", 60);
  CAPTURE(far);
  CAPTURE(near);
  // Passes 16-60 wrote 20 and 6 when this test was written.
  CHECK(near >= 15);
  CHECK(far <= 8);
}

TEST_CASE("far-bound rewrites of histories that age together are spread over passes") {
  // Eight scalers created in the same minute: their upperBounds cross 25 % in the same pass.
  // Each is rewritten only in its own refresh pass, so no pass writes them all. Requests at the
  // target (489Mi): every lowerBound under them, every upperBound over them, and nobody requests
  // CPU, so no write is due to a decision.
  constexpr int kScalers = 8;
  Fixture f;
  for (int i = 0; i < kScalers; ++i) {
    f.add_scaler(scaler_object("web" + std::to_string(i), "uid-" + std::to_string(i)));
  }
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  int late_writes = 0;
  int most_in_one_pass = 0;
  for (int minute = 0; minute < 48; ++minute) {
    for (int i = 0; i < kScalers; ++i) {
      ScalerInputs in = usage(3, minute);
      for (PodInfo& pod : in.owned_pods) {
        pod.containers[0].requests["memory"] = kube::Quantity::parse("489Mi").value();
      }
      f.api.inputs["web" + std::to_string(i)] = in;
    }
    f.api.calls.clear();
    loop.run_pass();
    f.refresh();
    if (minute < 16) continue;  // first recommendations; lowerBounds still settling
    int written = 0;
    for (int i = 0; i < kScalers; ++i) {
      if (f.api.count("patch web" + std::to_string(i)) == 0) continue;
      ++written;
      CAPTURE(minute);
      CAPTURE(i);
      // The loop's passes count from 1: the minute-0 pass is pass 1.
      CHECK(far_bound_refresh_pass("uid-" + std::to_string(i), minute + 1));
    }
    late_writes += written;
    most_in_one_pass = std::max(most_in_one_pass, written);
  }
  CAPTURE(late_writes);
  CHECK(late_writes > 0);  // the far bounds are refreshed, not frozen
  CHECK(most_in_one_pass < kScalers);
}

TEST_CASE(
    "a refresh pass's write still waiting when the next pass comes: that pass carries it on") {
  // The setup of the test above, one writer, and "a-first" (its target sorts first) whose status
  // changes every pass: its write is the one the held API server keeps running, so the writes
  // handed over after it wait. Run once without holding to learn the passes that rewrite a far
  // bound (writes from minute 16 on are all such, see above), then again, holding the API server
  // through one of them and the pass after it.
  constexpr int kScalers = 8;
  auto inputs_at = [](Fixture& f, int minute) {
    for (int i = 0; i < kScalers; ++i) {
      ScalerInputs in = usage(3, minute);
      for (PodInfo& pod : in.owned_pods) {
        pod.containers[0].requests["memory"] = kube::Quantity::parse("489Mi").value();
      }
      f.api.inputs["web" + std::to_string(i)] = in;
    }
    f.api.inputs["a-first"] = usage(1 + minute % 2, minute);  // "1 pods" / "2 pods": a write
  };
  auto add_scalers = [](Fixture& f) {
    f.add_scaler(scaler_object("a-first", "uid-first"));
    for (int i = 0; i < kScalers; ++i) {
      f.add_scaler(scaler_object("web" + std::to_string(i), "uid-" + std::to_string(i)));
    }
  };
  LoopOptions options;
  options.status_writers = 1;
  options.write_qps = 0;
  auto pass = [](RecommenderLoop& loop, int minute) {
    (void)loop.run_pass(kT0 + std::chrono::minutes(minute), PassScope::kAll,
                        PassWrites::kLeaveWaiting);
  };

  // Reference: the first minute from 16 on whose pass rewrote some webN.
  int minute_of_refresh = -1;
  std::string refreshed;
  {
    Fixture f;
    add_scalers(f);
    RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
    for (int minute = 0; minute < 48 && minute_of_refresh < 0; ++minute) {
      inputs_at(f, minute);
      f.api.calls.clear();
      pass(loop, minute);
      loop.wait_for_writes();
      f.refresh();
      for (int i = 0; minute >= 16 && i < kScalers && refreshed.empty(); ++i) {
        if (f.api.count("patch web" + std::to_string(i)) == 0) continue;
        refreshed = "web" + std::to_string(i);
        minute_of_refresh = minute;
      }
    }
  }
  REQUIRE(minute_of_refresh >= 16);
  CAPTURE(minute_of_refresh);
  CAPTURE(refreshed);

  Fixture f;
  add_scalers(f);
  RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
  for (int minute = 0; minute < minute_of_refresh; ++minute) {
    inputs_at(f, minute);
    pass(loop, minute);
    loop.wait_for_writes();
    f.refresh();
  }
  f.api.calls.clear();
  f.api.hold_patches = true;
  inputs_at(f, minute_of_refresh);
  pass(loop, minute_of_refresh);
  f.api.wait_for_held(1);  // a-first's write runs, held; the refresh waits behind it
  inputs_at(f, minute_of_refresh + 1);
  auto next = loop.run_pass(kT0 + std::chrono::minutes(minute_of_refresh + 1), PassScope::kAll,
                            PassWrites::kLeaveWaiting);
  // Not its refresh pass, but the refresh's write still waits: replaced, not cancelled.
  CHECK(next.writes_replaced >= 1);
  f.api.release_patches();
  loop.wait_for_writes();
  CHECK(f.api.count("patch " + refreshed) == 1);
}

TEST_CASE("the first status write rests on the informer's copy, with no GET") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(1, 0);
  auto pass = loop.run_pass();
  CHECK(pass.published == 1);
  CHECK(f.api.count("patch web") == 1);
  CHECK(f.api.count("get web") == 0);
  CHECK(f.condition("web")["reason"] == "Recommended");
}

TEST_CASE("a status conflict re-reads the scaler and writes again") {
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(1, 0);
  f.api.conflicts_to_inject = 2;
  CHECK(loop.run_pass().published == 1);
  CHECK(f.api.count("patch web") == 3);
  CHECK(f.api.count("get web") == 2);  // one per retry; the first write used the informer's copy
  CHECK(f.condition("web")["reason"] == "Recommended");
}

TEST_CASE("the status write rests on the informer's current copy, not the pass's snapshot") {
  // The pass's snapshot is taken at its start; the reconciler writes the scaler's status before
  // the pass reaches it (a pass over 10,000 scalers lasts minutes). The informer has that write:
  // the first PATCH uses its resourceVersion and keeps its condition, with no 409 and no GET.
  for (bool with_hook : {true, false}) {
    CAPTURE(with_hook);
    Fixture f;
    f.add_scaler(scaler_object("web", "u1"));
    json& stored = f.api.scalers.at("web");
    stored["metadata"]["resourceVersion"] = "11";
    stored["status"]["conditions"].push_back(
        {{"type", "Ready"}, {"status", "True"}, {"reason", "UpToDate"}});
    LoopHooks hooks = f.hooks();
    std::vector<std::string> looked_up;
    if (with_hook) {
      hooks.scaler = [&f, &looked_up](const std::string& key) {
        looked_up.push_back(key);
        auto parsed = api::parse_scaler(f.api.scalers.at("web"));
        REQUIRE(parsed.ok());
        return std::make_shared<const api::Scaler>(std::move(parsed).value());
      };
    }
    RecommenderLoop loop(f.api, std::move(hooks), LoopOptions{}, f.registry);
    f.api.inputs["web"] = usage(1, 0);
    CHECK(loop.run_pass().published == 1);
    // Without the hook (the former behaviour): a 409 on the stale copy, a GET, a second PATCH.
    CHECK(f.api.count("patch web") == (with_hook ? 1 : 2));
    CHECK(f.api.count("get web") == (with_hook ? 0 : 1));
    // Asked when the pass hands the write over (does it change anything?) and by the writer.
    if (with_hook) CHECK(looked_up == std::vector<std::string>{"shop/web", "shop/web"});
    const json& conditions = f.api.scalers.at("web")["status"]["conditions"];
    REQUIRE(conditions.size() == 3);
    CHECK(conditions[1]["type"] == "Ready");  // the reconciler's write is kept
    CHECK(f.condition("web")["reason"] == "Recommended");
  }
}

TEST_CASE("a scaler recreated under the same name: the status write keeps the pass's copy") {
  // The store's copy of the key has another uid: it is not this scaler's, so the write rests on
  // the pass's own copy (and its precondition fails if the scaler was really replaced).
  Fixture f;
  f.add_scaler(scaler_object("web", "u1"));
  LoopHooks hooks = f.hooks();
  hooks.scaler = [](const std::string&) {
    auto parsed = api::parse_scaler(scaler_object("web", "u2"));
    REQUIRE(parsed.ok());
    auto other = parsed.value();
    other.resource_version = "99";
    return std::make_shared<const api::Scaler>(std::move(other));
  };
  RecommenderLoop loop(f.api, std::move(hooks), LoopOptions{}, f.registry);
  f.api.inputs["web"] = usage(1, 0);
  CHECK(loop.run_pass().published == 1);
  CHECK(f.api.count("patch web") == 1);  // rv "10" of the pass's copy, which is current
  CHECK(f.condition("web")["reason"] == "Recommended");
}

TEST_CASE("a pass's status writes go out on several writers at once, under the write rate") {
  Fixture f;
  for (int i = 0; i < 24; ++i) {
    const std::string name = "w" + std::to_string(i);
    f.add_scaler(scaler_object(name, "u" + std::to_string(i)));
    f.api.inputs[name] = usage(1, 0);
  }
  f.api.patch_delay = std::chrono::milliseconds(20);
  SUBCASE("4 writers, no rate limit: a quarter of the serial time") {
    LoopOptions options;
    options.status_writers = 4;
    options.write_qps = 0;
    RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
    auto pass = loop.run_pass();
    CHECK(pass.published == 24);  // every write counted, after the pass waited for them
    CHECK(f.published.size() == 24);
    CHECK(f.api.status_writes == 24);
    CHECK(f.api.most_patches_in_flight == 4);
    CHECK(pass.seconds < 24 * 0.020 * 0.75);  // serial: 480 ms
  }
  SUBCASE("the rate caps the writers: 24 writes at 100/s after a burst of 4 take 200 ms") {
    LoopOptions options;
    options.status_writers = 4;
    options.write_qps = 100;
    options.write_burst = 4;
    RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
    auto pass = loop.run_pass();
    CHECK(pass.published == 24);
    CHECK(pass.seconds >= 0.200);
  }
  SUBCASE("0 writers: one write after another, on the pass's thread") {
    LoopOptions options;
    options.status_writers = 0;
    options.write_qps = 0;
    RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
    auto pass = loop.run_pass();
    CHECK(pass.published == 24);
    CHECK(f.api.most_patches_in_flight == 1);
    CHECK(pass.seconds >= 24 * 0.020);
  }
}

TEST_CASE("in updateMode Off the reconciler hears of new targets, not of bounds that moved") {
  for (const char* mode : {"Off", "Auto"}) {
    CAPTURE(mode);
    Fixture f;
    json object = scaler_object("web", "u1");
    object["spec"]["updateMode"] = mode;
    f.add_scaler(object);
    RecommenderLoop loop(f.api, f.hooks(), LoopOptions{}, f.registry);
    std::size_t published = 0;
    for (int minute = 0; minute < 4; ++minute) {
      // The same usage: a sample more each pass. Requests over every bound: each move decides.
      f.api.inputs["web"] = usage(2, minute);
      for (PodInfo& pod : f.api.inputs["web"].owned_pods) {
        for (PodContainer& container : pod.containers) {
          container.requests = {{"cpu", kube::Quantity::parse("1k").value()},
                                {"memory", kube::Quantity::parse("100Ti").value()}};
        }
      }
      published += loop.run_pass(kT0 + std::chrono::minutes(minute)).published;
      f.refresh();  // the informer sees the write
    }
    // A young history: the bounds move past the write tolerance every pass, the target stays.
    CHECK(published == 4);
    const std::size_t hinted = std::string(mode) == "Off" ? 1 : 4;
    CHECK(f.published.size() == hinted);
  }
}

TEST_CASE(
    "the loop's passes hand their writes over and go on; a newer publication replaces one "
    "still waiting") {
  Fixture f;
  for (int i = 0; i < 8; ++i) {
    const std::string name = "w" + std::to_string(i);
    f.add_scaler(scaler_object(name, "u" + std::to_string(i)));
    f.api.inputs[name] = usage(1, 0);
  }
  f.api.hold_patches = true;  // the API server answers nothing until released
  LoopOptions options;
  options.status_writers = 1;
  options.write_qps = 0;
  SUBCASE("a pass does not wait for the API server; the next one replaces what still waits") {
    RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
    auto first = loop.run_pass(kT0, PassScope::kAll, PassWrites::kLeaveWaiting);
    CHECK(first.handed_over == 8);
    f.api.wait_for_held(1);  // the writer holds w0's write; the other 7 wait
    CHECK(f.api.status_writes == 0);
    for (int i = 0; i < 8; ++i) f.api.inputs["w" + std::to_string(i)] = usage(2, 1);
    auto second =
        loop.run_pass(kT0 + std::chrono::minutes(1), PassScope::kAll, PassWrites::kLeaveWaiting);
    CHECK(second.handed_over == 8);
    CHECK(second.writes_replaced == 7);
    CHECK(second.writes_waiting == 8);  // w0's second waits behind its first, still running
    f.api.release_patches();
    loop.wait_for_writes();
    // w1..w7 were written once, with the newer publication (2 pods). w0 twice: the first
    // publication, then the second (a 409 on the pass's copy, a GET, a PATCH).
    for (int i = 1; i < 8; ++i) {
      const std::string name = "w" + std::to_string(i);
      CAPTURE(name);
      CHECK(f.api.count("patch " + name) == 1);
      CHECK(f.condition(name)["message"].get<std::string>().rfind("2 pods", 0) == 0);
    }
    CHECK(f.api.count("patch w0") == 3);
    CHECK(f.condition("w0")["message"].get<std::string>().rfind("2 pods", 0) == 0);
    CHECK(f.api.status_writes == 9);  // 16 without the replacement
  }
  SUBCASE("a publication that says what the status says cancels an older one still waiting") {
    RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
    CHECK(loop.run_pass(kT0, PassScope::kAll, PassWrites::kLeaveWaiting).handed_over == 8);
    f.api.wait_for_held(1);
    // The informer's copy gets a status that says what the second pass will publish: as if
    // someone (a previous leader) wrote it meanwhile.
    {
      Fixture reference;
      for (int i = 0; i < 8; ++i) {
        const std::string name = "w" + std::to_string(i);
        reference.add_scaler(scaler_object(name, "u" + std::to_string(i)));
        reference.api.inputs[name] = usage(1, 0);
      }
      LoopOptions serial = options;
      serial.status_writers = 0;
      metrics::Registry registry;
      RecommenderLoop written(reference.api, reference.hooks(), serial, registry);
      (void)written.run_pass(kT0);
      std::lock_guard lock(f.scalers_mutex);
      f.scalers.clear();
      for (const auto& [name, object] : reference.api.scalers) {
        f.scalers.push_back(std::make_shared<const api::Scaler>(api::parse_scaler(object).value()));
      }
    }
    auto second = loop.run_pass(kT0, PassScope::kAll, PassWrites::kLeaveWaiting);
    // Each status already says it: the 7 older writes waiting are cancelled. w0's follows its
    // write still running, to be judged again once that one landed.
    CHECK(second.handed_over == 1);
    CHECK(second.writes_waiting == 1);
    f.api.release_patches();
    loop.wait_for_writes();
    CHECK(f.api.status_writes == 1);  // w0's first; its second found the status saying it
  }
  SUBCASE("a deleted scaler's write still waiting is cancelled") {
    RecommenderLoop loop(f.api, f.hooks(), options, f.registry);
    (void)loop.run_pass(kT0, PassScope::kAll, PassWrites::kLeaveWaiting);
    f.api.wait_for_held(1);
    f.api.scalers.erase("w3");
    f.refresh();
    auto second =
        loop.run_pass(kT0 + std::chrono::minutes(1), PassScope::kAll, PassWrites::kLeaveWaiting);
    CHECK(second.scalers == 7);
    f.api.release_patches();
    loop.wait_for_writes();
    CHECK(f.api.count("patch w3") == 0);
    CHECK(f.api.count("patch w4") == 1);
  }
  SUBCASE("a write fenced (leadership lost) drops the writes still waiting") {
    std::atomic<bool> armed{false};
    std::atomic<int> asked{0};
    LoopHooks hooks = f.hooks();
    // Not leading once, at the first write asked after arming; leading again right after.
    hooks.still_leading = [&] { return !(armed.load() && asked++ == 0); };
    RecommenderLoop loop(f.api, std::move(hooks), options, f.registry);
    (void)loop.run_pass(kT0, PassScope::kAll, PassWrites::kLeaveWaiting);
    f.api.wait_for_held(1);  // w0 was asked before it was held
    armed = true;
    f.api.release_patches();
    loop.wait_for_writes();
    CHECK(f.api.status_writes == 1);  // w0; w1 fenced, w2..w7 dropped with it
    CHECK(f.api.count("patch w2") == 0);
  }
  SUBCASE("stop() drops the writes still waiting; the running one finishes") {
    auto loop = std::make_unique<RecommenderLoop>(f.api, f.hooks(), options, f.registry);
    auto pass = loop->run_pass(kT0, PassScope::kAll, PassWrites::kLeaveWaiting);
    f.api.wait_for_held(1);
    CHECK(pass.handed_over == 8);
    CHECK(loop->writes_waiting() == 7);
    std::thread stopper([&loop] { loop->stop(); });
    // stop() drops the 7 waiting writes, then waits for the running one: released only then.
    for (int i = 0; i < 5000 && loop->writes_waiting() != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHECK(loop->writes_waiting() == 0);
    f.api.release_patches();
    stopper.join();
    CHECK(f.api.status_writes == 1);
    loop.reset();
    CHECK(f.api.status_writes == 1);
  }
}
