// The recommender loop's one fake (FakeApi: the API calls, inputs, scaler status, checkpoints)
// and the fixture around it (the informer's view, the hooks, a metrics registry), shared by the
// loop's test files: loop_test.cpp (reads, history, checkpoints, leadership, the thread) and
// loop_status_test.cpp (status writes).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/scaler.h"
#include "kube/errors.h"
#include "metrics/registry.h"
#include "recommender/loop.h"

namespace vscaler::recommender::testing {

using nlohmann::json;

inline constexpr double kMi = 1024.0 * 1024.0;
// This hour, not a fixed date: a pass without an explicit time runs at the wall clock, and a
// history whose last sample is 8 days older than that is dropped (VPA's garbage collection).
inline const TimePoint kT0 = std::chrono::floor<std::chrono::hours>(
    std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));

// The one fake: an API server holding one VerticalScaler per name and their checkpoints, and
// the inputs each target's read returns.
class FakeApi final : public RecommenderApi {
 public:
  std::map<std::string, ScalerInputs> inputs;  // by target name
  std::map<std::string, json> scalers;         // by scaler name (the stored object)
  std::map<std::string, json> checkpoints;     // by scaler name
  std::vector<std::string> calls;
  std::vector<std::set<std::string>> passes;  // begin_pass's shared namespaces, per pass
  ResourceMap largest;                        // what largest_node answers
  int node_lists = 0;                         // largest_node calls
  bool nodes_forbidden = false;
  int conflicts_to_inject = 0;
  int status_writes = 0;
  std::chrono::milliseconds patch_delay{0};  // how long a status write waits on the "server"
  std::chrono::milliseconds save_delay{0};   // and a checkpoint write
  int patches_in_flight = 0;
  int most_patches_in_flight = 0;
  std::mutex mutex;
  std::condition_variable written;
  // While set, status writes wait on the "server" (up to 5 s, so a failing test still ends)
  // until release_patches(); patches_held counts those waiting.
  bool hold_patches = false;
  int patches_held = 0;
  std::condition_variable held;

  void release_patches() {
    {
      std::lock_guard lock(mutex);
      hold_patches = false;
    }
    held.notify_all();
  }
  // Waits (up to 5 s) until `count` status writes are held.
  void wait_for_held(int count) {
    std::unique_lock lock(mutex);
    held.wait_for(lock, std::chrono::seconds(5), [this, count] { return patches_held == count; });
  }

  void begin_pass(std::set<std::string> shared) override {
    std::lock_guard lock(mutex);
    passes.push_back(std::move(shared));
  }
  kube::Result<ResourceMap, kube::ApiError> largest_node() override {
    std::lock_guard lock(mutex);
    ++node_lists;
    if (nodes_forbidden) return kube::fail(kube::error_from_response(403, "nodes is forbidden"));
    return largest;
  }
  kube::Result<ScalerInputs, SourceError> read_inputs(const TargetWorkload& target) override {
    std::lock_guard lock(mutex);
    calls.push_back("read " + target.name);
    auto it = inputs.find(target.name);
    if (it == inputs.end()) {
      return kube::fail(SourceError{SourceErrorKind::kWorkloadNotFound, "not found", std::nullopt});
    }
    return it->second;
  }
  kube::Result<json, kube::ApiError> get_scaler(const std::string&,
                                                const std::string& name) override {
    std::lock_guard lock(mutex);
    calls.push_back("get " + name);
    auto it = scalers.find(name);
    if (it == scalers.end()) return kube::fail(kube::make_error(kube::ErrorKind::kNotFound, name));
    return it->second;
  }
  kube::Result<json, kube::ApiError> patch_scaler_status(const std::string&,
                                                         const std::string& name,
                                                         const json& patch) override {
    {
      std::unique_lock lock(mutex);
      ++patches_held;
      held.notify_all();
      held.wait_for(lock, std::chrono::seconds(5), [this] { return !hold_patches; });
      --patches_held;
    }
    if (patch_delay.count() > 0) {
      {
        std::lock_guard lock(mutex);
        most_patches_in_flight = std::max(most_patches_in_flight, ++patches_in_flight);
      }
      std::this_thread::sleep_for(patch_delay);
      std::lock_guard lock(mutex);
      --patches_in_flight;
    }
    std::lock_guard lock(mutex);
    calls.push_back("patch " + name);
    auto found = scalers.find(name);
    if (found == scalers.end())
      return kube::fail(kube::make_error(kube::ErrorKind::kNotFound, name));
    json& stored = found->second;
    if (conflicts_to_inject > 0) {
      --conflicts_to_inject;
      bump(stored);  // someone else wrote meanwhile
    }
    if (patch["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]) {
      return kube::fail(kube::make_error(kube::ErrorKind::kConflict, "stale"));
    }
    for (const auto& [key, value] : patch["status"].items()) stored["status"][key] = value;
    bump(stored);
    ++status_writes;
    written.notify_all();
    return stored;
  }
  kube::Result<LoadedCheckpoint, kube::ApiError> load_checkpoint(
      const ScalerId& id, const AggregateOptions& options) override {
    std::lock_guard lock(mutex);
    calls.push_back("load " + id.name);
    LoadedCheckpoint loaded;
    auto it = checkpoints.find(id.name);
    if (it == checkpoints.end()) return loaded;
    loaded.found = true;
    auto restored = ScalerHistory::restore(it->second, id.uid, options);
    if (restored.ok()) {
      loaded.history = std::move(restored).value();
    } else {
      loaded.ignored = restored.error();
    }
    return loaded;
  }
  kube::Result<SaveOutcome, kube::ApiError> save_checkpoint(
      const ScalerId& id, const ScalerHistory& history,
      const std::function<bool()>& /*may_write_again*/, const AggregateOptions& options) override {
    if (save_delay.count() > 0) std::this_thread::sleep_for(save_delay);
    std::lock_guard lock(mutex);
    calls.push_back("save " + id.name);
    bool existed = checkpoints.count(id.name) > 0;
    checkpoints[id.name] = history.checkpoint(id.namespace_, id.name, id.uid, &options);
    return existed ? SaveOutcome::kUpdated : SaveOutcome::kCreated;
  }
  int namespace_loads = 0;  // load_checkpoints calls (the default: load_checkpoint each)
  kube::Result<LoadedCheckpoints, kube::ApiError> load_checkpoints(
      const std::string& ns, const std::map<std::string, std::string>& uids_by_name,
      const AggregateOptions& options) override {
    {
      std::lock_guard lock(mutex);
      ++namespace_loads;
    }
    return RecommenderApi::load_checkpoints(ns, uids_by_name, options);
  }
  void forget_checkpoint(const ScalerId& id) override {
    std::lock_guard lock(mutex);
    calls.push_back("forget " + id.name);
  }

  int count(const std::string& prefix) {
    std::lock_guard lock(mutex);
    int n = 0;
    for (const auto& call : calls) n += call.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }

 private:
  static void bump(json& object) {
    auto& rv = object["metadata"]["resourceVersion"];
    rv = std::to_string(std::stoi(rv.get<std::string>()) + 1);
  }
};

inline json scaler_object(const std::string& name, const std::string& uid,
                          json containers = nullptr) {
  json spec = {{"deploymentName", name}, {"updateMode", "Off"}};
  if (!containers.is_null()) spec["containers"] = std::move(containers);
  return {{"apiVersion", "scaling.vscaler.dev/v1beta1"},
          {"kind", "VerticalScaler"},
          {"metadata",
           {{"name", name},
            {"namespace", "shop"},
            {"uid", uid},
            {"generation", 2},
            {"resourceVersion", "10"},
            {"creationTimestamp", "2026-11-29T18:00:00Z"}}},
          {"spec", spec},
          {"status",
           {{"conditions",
             json::array({{{"type", "TargetFound"}, {"status", "True"}, {"reason", "Found"}}})}}}};
}

inline PodInfo pod(const std::string& name) {
  PodInfo p;
  p.name = name;
  p.uid = "uid-" + name;
  p.containers = {{"app", {}, {}}, {"istio-proxy", {}, {}}};
  return p;
}

// Inputs of `pods` pods each using 300m / 400Mi in app (and 10m / 50Mi in the sidecar) at
// minute `minute`.
inline ScalerInputs usage(int pods, int minute, bool with_metrics = true) {
  ScalerInputs in;
  for (int i = 0; i < pods; ++i) {
    std::string name = "web-" + std::to_string(i);
    in.owned_pods.push_back(pod(name));
    if (with_metrics) {
      in.metrics.push_back({"shop",
                            name,
                            kT0 + std::chrono::minutes(minute),
                            Duration(15'000),
                            {{"app", 0.3, 400 * kMi}, {"istio-proxy", 0.01, 50 * kMi}}});
    }
  }
  in.pods_listed = in.owned_pods.size();
  return in;
}

struct Fixture {
  FakeApi api;
  metrics::Registry registry;
  std::vector<std::string> published;
  bool leading = true;
  std::mutex scalers_mutex;
  std::vector<std::shared_ptr<const api::Scaler>> scalers;

  void add_scaler(const json& object) {
    api.scalers[object["metadata"]["name"]] = object;
    refresh();
  }
  // The informer's view: what the fake API server stores now.
  void refresh() {
    std::lock_guard lock(scalers_mutex);
    scalers.clear();
    for (const auto& [name, object] : api.scalers) {
      auto parsed = api::parse_scaler(object);
      REQUIRE(parsed.ok());
      scalers.push_back(std::make_shared<const api::Scaler>(std::move(parsed).value()));
    }
  }
  LoopHooks hooks() {
    LoopHooks h;
    h.scalers = [this] {
      std::lock_guard lock(scalers_mutex);
      return scalers;
    };
    h.begin_step = [this](std::string_view) { return leading; };
    h.on_published = [this](const std::string& key) {
      std::lock_guard lock(scalers_mutex);  // from the status writers' threads
      published.push_back(key);
    };
    return h;
  }
  const json& condition(const std::string& name) {
    for (const auto& c : api.scalers.at(name)["status"]["conditions"]) {
      if (c["type"] == kRecommendationProvided) return c;
    }
    static const json none;
    return none;
  }
  std::string rendered() { return registry.render(); }
};

}  // namespace vscaler::recommender::testing
