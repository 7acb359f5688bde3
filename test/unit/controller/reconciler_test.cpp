// Reconciler decisions against a fake ReconcileApi (the one faked collaborator): what it writes,
// what it reports, and what it refuses to do. The real API server is exercised end-to-end.
#include "controller/reconciler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "controller/status.h"

using nlohmann::json;
using namespace vscaler::api;
using namespace vscaler::controller;
using vscaler::kube::ApiError;
using vscaler::kube::ErrorKind;

namespace {

/// An in-memory API: workloads (a Deployment by its name, another kind by "Kind/name"), scalers'
/// status, and a log of writes. Its strategic merge patch handles exactly what the reconciler
/// sends: containers merged by name, resources maps merged key by key.
class FakeApi : public ReconcileApi {
 public:
  std::map<std::string, json> deployments;  // name (Deployment) or Kind/name -> object
  std::map<std::string, json> scalers;      // name -> object
  int deployment_patches = 0;
  int deployment_gets = 0;
  /// The next this many workload patches are refused as invalid (what the API server answers
  /// for a container without an image, or requests above limits).
  int patches_to_refuse = 0;
  int status_patches = 0;
  int status_conflicts_to_inject = 0;
  /// The next this many status writes fail as a server error (a 500, a timeout) would.
  int status_failures_to_inject = 0;
  /// What else happens when a conflict is injected (another writer's change).
  std::function<void()> on_status_conflict;
  std::vector<std::string> events;
  /// When set, every get_workload fails with it (a throttled or failing API server).
  std::optional<ApiError> workload_error;
  /// Simulates another mutating webhook: after each patch, sets this container cpu request.
  std::string rewrite_cpu_to;

  static std::string key_of(const TargetRef& target) {
    return target.is_deployment() ? target.name : target.ref();
  }
  ApiResult get_workload(const std::string&, const TargetRef& target,
                         std::chrono::milliseconds = {}) override {
    ++deployment_gets;
    if (workload_error) return vscaler::kube::fail(*workload_error);
    const std::string name = key_of(target);
    auto it = deployments.find(name);
    if (it == deployments.end()) return vscaler::kube::fail(not_found(name));
    return it->second;
  }
  ApiResult patch_workload(const std::string&, const TargetRef& target,
                           const json& patch) override {
    const std::string name = key_of(target);
    auto it = deployments.find(name);
    if (it == deployments.end()) return vscaler::kube::fail(not_found(name));
    if (patches_to_refuse > 0) {
      --patches_to_refuse;
      return vscaler::kube::fail(vscaler::kube::make_error(ErrorKind::kInvalid, "invalid"));
    }
    ++deployment_patches;
    json& containers = it->second["spec"]["template"]["spec"]["containers"];
    bool changed = false;
    for (const json& wanted : patch["spec"]["template"]["spec"]["containers"]) {
      for (json& container : containers) {
        if (container["name"] != wanted["name"]) continue;
        for (const auto& [section, values] : wanted["resources"].items()) {
          for (const auto& [resource, value] : values.items()) {
            if (container["resources"][section][resource] != value) changed = true;
            container["resources"][section][resource] = value;
          }
        }
        if (!rewrite_cpu_to.empty()) container["resources"]["requests"]["cpu"] = rewrite_cpu_to;
      }
    }
    // Pod-level resources merge as the containers' do (strategic merge of a struct's maps).
    if (const json& spec = patch["spec"]["template"]["spec"]; spec.contains("resources")) {
      json& pod = it->second["spec"]["template"]["spec"]["resources"];
      for (const auto& [section, values] : spec["resources"].items()) {
        for (const auto& [resource, value] : values.items()) {
          if (pod[section][resource] != value) changed = true;
          pod[section][resource] = value;
        }
      }
    }
    if (changed)
      it->second["metadata"]["generation"] = it->second["metadata"]["generation"].get<int>() + 1;
    return it->second;
  }
  ApiResult get_scaler(const std::string&, const std::string& name) override {
    return scalers.at(name);
  }
  /// The pods every list_pods answers (the in-place modes' step filters them by owner).
  json pods = json::array();
  ApiResult list_pods(const std::string&, const std::string&) override {
    return json{{"items", pods}};
  }
  ApiResult patch_scaler_status(const std::string&, const std::string& name,
                                const json& patch) override {
    json& scaler = scalers.at(name);
    if (status_failures_to_inject > 0) {
      --status_failures_to_inject;
      return vscaler::kube::fail(vscaler::kube::make_error(ErrorKind::kServerError, "etcd"));
    }
    if (status_conflicts_to_inject > 0) {
      --status_conflicts_to_inject;
      if (on_status_conflict) on_status_conflict();
      scaler["metadata"]["resourceVersion"] = std::to_string(++resource_version);
      return vscaler::kube::fail(vscaler::kube::make_error(ErrorKind::kConflict, "stale"));
    }
    if (patch["metadata"]["resourceVersion"] != scaler["metadata"]["resourceVersion"]) {
      return vscaler::kube::fail(vscaler::kube::make_error(ErrorKind::kConflict, "stale"));
    }
    ++status_patches;
    scaler.merge_patch({{"status", patch["status"]}});
    scaler["metadata"]["resourceVersion"] = std::to_string(++resource_version);
    return scaler;
  }
  void record_event(const Scaler&, bool warning, const std::string& reason,
                    const std::string&) override {
    events.push_back((warning ? "Warning " : "Normal ") + reason);
  }

 private:
  int resource_version = 100;
  static ApiError not_found(const std::string& name) {
    return vscaler::kube::make_error(ErrorKind::kNotFound,
                                     "deployments \"" + name + "\" not found");
  }
};

struct Fixture {
  FakeApi api;
  ScalerStore store;
  VerifiedState verified;
  struct CountingMetrics : ReconcilerMetrics {
    int corrections = 0;
    void on_resync_correction() override { ++corrections; }
  } metrics;
  Expectations::Clock::time_point now = Expectations::Clock::now();
  Expectations expectations{[this] {
    ExpectationsOptions options;
    options.now = [this] { return now; };
    return options;
  }()};
  Reconciler reconciler{api, store, verified, expectations, metrics};

  void add_deployment(const std::string& name, const char* containers) {
    json object;
    object["metadata"] = {
        {"name", name}, {"namespace", "shop"}, {"uid", "uid-" + name}, {"generation", 1}};
    object["spec"]["template"]["spec"]["containers"] = json::parse(containers);
    api.deployments[name] = object;
  }
  /// A StatefulSet or DaemonSet `name` (key "Kind/name"), with spec.updateStrategy.type
  /// `strategy` when not empty.
  void add_workload(const std::string& kind, const std::string& name, const char* containers,
                    const std::string& strategy = "") {
    json object;
    object["metadata"] = {{"name", name},
                          {"namespace", "shop"},
                          {"uid", "uid-" + kind + "-" + name},
                          {"generation", 1}};
    object["spec"]["template"]["spec"]["containers"] = json::parse(containers);
    if (!strategy.empty()) object["spec"]["updateStrategy"]["type"] = strategy;
    api.deployments[kind + "/" + name] = std::move(object);
  }
  void add_scaler(const std::string& name, const char* spec,
                  const char* created = "2026-01-01T00:00:00Z") {
    json object = {{"metadata",
                    {{"name", name},
                     {"namespace", "shop"},
                     {"generation", 1},
                     {"resourceVersion", "1"},
                     {"creationTimestamp", created}}},
                   {"spec", json::parse(spec)}};
    api.scalers[name] = object;
    refresh(name);
  }
  /// What the informer would do after a write: the store sees the stored object.
  void refresh(const std::string& name) {
    auto parsed = parse_scaler(api.scalers.at(name));
    REQUIRE(parsed.ok());
    store.upsert(std::make_shared<const Scaler>(*parsed));
  }
  /// Reconciles scaler `name` after the hook recorded `expected` for it (if anything).
  ReconcileOutcome run(const std::string& name, Priority priority = Priority::kHigh,
                       const Expectation& expected = {}) {
    WorkItem item;
    item.key = "shop/" + name;
    item.priority = priority;
    expectations.expect(item.key, expected);
    auto outcome = reconciler.reconcile(item);
    if (api.scalers.count(name)) refresh(name);
    return outcome;
  }
  std::string condition(const std::string& scaler, const char* type, const char* field = "reason") {
    for (const json& c : api.scalers.at(scaler)["status"]["conditions"]) {
      if (c["type"] == type) return c[field];
    }
    return "";
  }
  json resources(const std::string& deployment, std::size_t index = 0) {
    return api.deployments.at(
        deployment)["spec"]["template"]["spec"]["containers"][index]["resources"];
  }
};

const char* kSpec = R"({"deploymentName": "web", "updateMode": "Reconcile",
  "containers": [{"name": "app", "requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1"}}]})";

}  // namespace

TEST_CASE("a drifted Deployment is patched once and the status reports Applied and UpToDate") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "1"}}}])");
  f.add_scaler("web", kSpec);
  auto outcome = f.run("web");
  CHECK(outcome.kind == ReconcileOutcome::Kind::kDone);
  CHECK(outcome.patched);
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.resources("web") == json::parse(R"({"requests": {"cpu": "250m", "memory": "256Mi"},
      "limits": {"cpu": "1"}})"));
  CHECK(f.api.deployments["web"]["metadata"]["generation"] == 2);
  CHECK(f.condition("web", "Scaled") == "Applied");
  CHECK(f.condition("web", "Ready", "status") == "True");
  CHECK(f.condition("web", "DeploymentFound") == "Found");
  json status = f.api.scalers["web"]["status"];
  CHECK(status["observedGeneration"] == 1);
  CHECK(status["deployment"] == json::parse(R"({"name": "web", "uid": "uid-web", "found": true})"));
  CHECK(status.contains("lastScaleTime"));
  CHECK(f.verified.get("shop/web") == Verified{true, "uid-web", 2});
}

TEST_CASE("a second reconcile of an up-to-date scaler writes nothing at all") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.run("web");
  int patches = f.api.deployment_patches, statuses = f.api.status_patches;
  f.run("web");
  f.run("web", Priority::kLow);
  CHECK(f.api.deployment_patches == patches);
  CHECK(f.api.status_patches == statuses);
  CHECK(f.metrics.corrections == 0);
}

TEST_CASE("a missing Deployment reports DeploymentFound=False and writes nothing else") {
  Fixture f;
  f.add_scaler("web", kSpec);
  auto outcome = f.run("web");
  CHECK(outcome.kind == ReconcileOutcome::Kind::kDone);
  CHECK(f.api.deployment_patches == 0);
  CHECK(f.condition("web", "DeploymentFound") == "NotFound");
  CHECK(f.condition("web", "Ready") == "Pending");
  CHECK(f.api.scalers["web"]["status"]["deployment"]["found"] == false);
  CHECK(f.verified.get("shop/web") == Verified{});
}

TEST_CASE("updateMode Off never writes the Deployment and shows what would be applied") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "1"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "Off",
      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  f.run("web");
  CHECK(f.api.deployment_patches == 0);
  CHECK(f.condition("web", "Scaled") == "UpdateModeOff");
  CHECK(f.api.scalers["web"]["status"]["containers"][0]["requests"]["cpu"] == "250m");
  CHECK(f.resources("web")["requests"]["cpu"] == "1");
}

TEST_CASE(
    "invalid merged resources are never written: InvalidResources names container and resource") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app", "resources": {"limits": {"cpu": "500m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "1"}}]})");
  f.run("web");
  CHECK(f.api.deployment_patches == 0);
  CHECK(f.condition("web", "Scaled") == "InvalidResources");
  CHECK(f.condition("web", "Scaled", "message")
            .find("container app: requests.cpu 1 would exceed limits.cpu 500m") == 0);
}

TEST_CASE("a template patch raises pod-level resources the containers outgrow, in the same write") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.api.deployments["web"]["spec"]["template"]["spec"]["resources"] = {
      {"requests", {{"cpu", "200m"}}}};
  f.add_scaler("web", R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "300m"}}]})");
  f.run("web");
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.resources("web")["requests"]["cpu"] == "300m");
  CHECK(f.api.deployments["web"]["spec"]["template"]["spec"]["resources"]["requests"]["cpu"] ==
        "300m");
  CHECK(f.condition("web", "Scaled", "status") == "True");
}

TEST_CASE("a named container missing from the Deployment: ContainerNotFound, the others applied") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", R"({"deploymentName": "web", "containers": [
      {"name": "app", "requests": {"cpu": "250m"}}, {"name": "worker", "requests": {"cpu": "1"}}]})");
  f.run("web");
  CHECK(f.resources("web")["requests"]["cpu"] == "250m");
  CHECK(f.condition("web", "Scaled") == "ContainerNotFound");
  CHECK(f.condition("web", "Scaled", "message").find("worker") != std::string::npos);
}

TEST_CASE("of two scalers on one Deployment the older applies and the younger reports Conflict") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("old", kSpec, "2026-01-01T00:00:00Z");
  f.add_scaler("young", R"({"deploymentName": "web",
      "containers": [{"name": "app", "requests": {"cpu": "2"}}]})",
               "2026-02-01T00:00:00Z");
  f.run("young");
  CHECK(f.api.deployment_patches == 0);
  CHECK(f.condition("young", "Ready") == "Conflict");
  CHECK(f.condition("young", "Ready", "message").find("VerticalScaler old") == 0);
  f.run("old");
  CHECK(f.resources("web")["requests"]["cpu"] == "250m");
}

TEST_CASE("a value rewritten by another webhook is reported MutatedByAdmission and not retried") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.api.rewrite_cpu_to = "100m";
  f.run("web");
  CHECK(f.condition("web", "Scaled") == "MutatedByAdmission");
  int patches = f.api.deployment_patches;
  for (int i = 0; i < 5; ++i) f.run("web");
  CHECK(f.api.deployment_patches == patches);
}

TEST_CASE("a status conflict is resolved by re-reading the scaler") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.api.status_conflicts_to_inject = 2;
  auto outcome = f.run("web");
  CHECK(outcome.kind == ReconcileOutcome::Kind::kDone);
  CHECK(f.condition("web", "Scaled") == "Applied");
}

TEST_CASE("a status conflict with a newer spec is not re-based: observedGeneration stays true") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  // While the reconcile of generation 1 runs, someone changes the spec (generation 2, cpu 300m):
  // the status write of generation 1's report conflicts.
  f.api.status_conflicts_to_inject = 1;
  f.api.on_status_conflict = [&f] {
    json& stored = f.api.scalers.at("web");
    stored["metadata"]["generation"] = 2;
    stored["spec"]["containers"][0]["requests"]["cpu"] = "300m";
  };
  WorkItem item;
  item.key = "shop/web";
  auto outcome = f.reconciler.reconcile(item);  // still sees generation 1 (the informer's copy)
  CHECK(outcome.kind != ReconcileOutcome::Kind::kDone);  // the conflict is returned, not re-based
  const json& status = f.api.scalers.at("web")["status"];
  CHECK_FALSE(status.contains("observedGeneration"));  // nothing claims generation 2
  f.refresh("web");  // the informer sees generation 2; the reconcile runs again
  CHECK(f.run("web").kind == ReconcileOutcome::Kind::kDone);
  CHECK(f.api.scalers.at("web")["status"]["observedGeneration"] == 2);
  CHECK(f.resources("web")["requests"]["cpu"] == "300m");
}

TEST_CASE("a resync-triggered reconcile that writes counts as a correction") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.run("web", Priority::kLow);
  CHECK(f.metrics.corrections == 1);
}

TEST_CASE("a deleted scaler is forgotten and its Deployment left as it is") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.run("web");
  json before = f.api.deployments["web"];
  f.store.remove("shop/web");
  f.api.scalers.erase("web");
  CHECK(f.run("web").kind == ReconcileOutcome::Kind::kDone);
  CHECK(f.api.deployments["web"] == before);
  CHECK_FALSE(f.verified.get("shop/web").has_value());
}

TEST_CASE("a hint not yet visible is re-checked with a short backoff, not counted as a failure") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  Expectation hint;
  hint.min_generation_exclusive = 5;  // the hinted write would make generation 6
  auto first = f.run("web", Priority::kHigh, hint);
  CHECK(first.kind == ReconcileOutcome::Kind::kRecheck);
  // The write is usually stored a millisecond or two after admission, sooner than this look's
  // own round trip: look again at once, then with a short doubling backoff.
  CHECK(first.delay == std::chrono::milliseconds(0));
  auto second = f.run("web");  // the re-check: the expectation is kept where it is
  CHECK(second.kind == ReconcileOutcome::Kind::kRecheck);
  CHECK(second.delay > first.delay);
  f.api.deployments["web"]["metadata"]["generation"] = 6;
  CHECK(f.run("web").kind == ReconcileOutcome::Kind::kDone);
  CHECK_FALSE(f.expectations.pending("shop/web"));
}

TEST_CASE("a hinted CREATE not yet stored is re-checked until the Deployment appears") {
  Fixture f;
  f.add_scaler("web", kSpec);
  Expectation hint;
  hint.must_exist = true;
  CHECK(f.run("web", Priority::kHigh, hint).kind == ReconcileOutcome::Kind::kRecheck);
  f.add_deployment("web", R"([{"name": "app"}])");
  auto outcome = f.run("web");
  CHECK(outcome.kind == ReconcileOutcome::Kind::kDone);
  CHECK(outcome.patched);
}

TEST_CASE("a hint never made visible is given up after its deadline") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  Expectation hint;
  hint.min_generation_exclusive = 5;
  CHECK(f.run("web", Priority::kHigh, hint).kind == ReconcileOutcome::Kind::kRecheck);
  f.now += std::chrono::seconds(31);
  CHECK(f.run("web").kind == ReconcileOutcome::Kind::kDone);
  CHECK_FALSE(f.expectations.pending("shop/web"));
}

namespace {

/// A user's write of Deployment web as the API server stores it: cpu request `cpu`, the
/// generation one up. Returns the generation before it (the hint's G).
int64_t user_edit(Fixture& f, const char* cpu) {
  json& stored = f.api.deployments.at("web");
  int64_t before = stored["metadata"]["generation"].get<int64_t>();
  stored["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
  stored["metadata"]["generation"] = before + 1;
  return before;
}

Expectation update_hint(int64_t old_generation) {
  Expectation hint;
  hint.min_generation_exclusive = old_generation;
  return hint;
}

}  // namespace

TEST_CASE("a hinted edit of an applied scaler's Deployment is restored by one PATCH, no GET") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  REQUIRE(f.run("web").patched);
  REQUIRE(f.condition("web", "Scaled") == "Applied");
  const int gets = f.api.deployment_gets, patches = f.api.deployment_patches;
  const std::size_t events = f.api.events.size();
  int64_t old_generation = user_edit(f, "100m");
  auto outcome = f.run("web", Priority::kHigh, update_hint(old_generation));
  CHECK(outcome.kind == ReconcileOutcome::Kind::kDone);
  CHECK(outcome.patched);
  CHECK(f.api.deployment_gets == gets);
  CHECK(f.api.deployment_patches == patches + 1);
  CHECK(f.resources("web")["requests"]["cpu"] == "250m");
  CHECK(f.api.deployments["web"]["metadata"]["generation"] == old_generation + 2);
  CHECK(f.api.events.size() == events + 1);
  CHECK(f.api.events.back() == "Normal Scaled");
  CHECK(f.verified.get("shop/web") == Verified{true, "uid-web", old_generation + 2});
  CHECK_FALSE(f.expectations.pending("shop/web"));
}

TEST_CASE("a blind PATCH before the hinted write is stored changes nothing; the look is repeated") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.run("web");
  const json stored = f.api.deployments["web"];
  const std::size_t events = f.api.events.size();
  const int64_t old_generation = stored["metadata"]["generation"].get<int64_t>();
  auto early = f.run("web", Priority::kHigh, update_hint(old_generation));
  CHECK(early.kind == ReconcileOutcome::Kind::kRecheck);
  CHECK_FALSE(early.patched);
  CHECK(f.api.deployments["web"] == stored);
  CHECK(f.api.events.size() == events);
  user_edit(f, "100m");  // now it is stored
  auto later = f.run("web");
  CHECK(later.kind == ReconcileOutcome::Kind::kDone);
  CHECK(later.patched);
  CHECK(f.resources("web")["requests"]["cpu"] == "250m");
}

TEST_CASE("a hinted edit that left the declared values alone is not reported as a restore") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.run("web");
  const std::size_t events = f.api.events.size();
  const int statuses = f.api.status_patches;
  int64_t old_generation = user_edit(f, "250m");  // an edit elsewhere: the cpu is unchanged
  auto outcome = f.run("web", Priority::kHigh, update_hint(old_generation));
  CHECK(outcome.kind == ReconcileOutcome::Kind::kDone);
  CHECK_FALSE(outcome.patched);
  CHECK(f.api.deployments["web"]["metadata"]["generation"] == old_generation + 1);
  CHECK(f.api.events.size() == events);
  CHECK(f.api.status_patches == statuses);
}

TEST_CASE("a throttled read is retried after the server's Retry-After, not the key's backoff") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  ApiError throttled = vscaler::kube::make_error(ErrorKind::kTooManyRequests, "slow down");
  throttled.code = 429;
  throttled.retry_after = std::chrono::seconds(3);
  f.api.workload_error = throttled;
  auto outcome = f.run("web");
  CHECK(outcome.kind == ReconcileOutcome::Kind::kRetry);
  CHECK(outcome.delay == std::chrono::seconds(3));
  CHECK(f.api.deployment_patches == 0);
  f.api.workload_error.reset();
  CHECK(f.run("web").patched);
}

TEST_CASE("a workload vscaler may not read (403) is TargetFound=False, said once, read again") {
  // It vanished with its namespace's RoleBinding, or vscaler's RBAC does not cover it.
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  ApiError forbidden = vscaler::kube::make_error(
      ErrorKind::kForbidden, "deployments.apps \"web\" is forbidden: cannot get resource");
  forbidden.code = 403;
  f.api.workload_error = forbidden;
  auto outcome = f.run("web");
  CHECK(outcome.kind == ReconcileOutcome::Kind::kRetry);
  CHECK(f.condition("web", "TargetFound") == "NotFound");
  CHECK(f.condition("web", "TargetFound", "status") == "False");
  CHECK(f.condition("web", "TargetFound", "message").find("cannot be read") != std::string::npos);
  CHECK(f.condition("web", "Ready", "status") == "False");
  CHECK(f.api.events == std::vector<std::string>{"Warning NotFound"});
  CHECK(f.run("web").kind == ReconcileOutcome::Kind::kRetry);
  CHECK(f.api.events.size() == 1);  // said once
  f.api.workload_error.reset();
  CHECK(f.run("web").patched);
  CHECK(f.condition("web", "TargetFound") == "Found");
}

TEST_CASE("a refused PATCH is Scaled=False PatchFailed, Ready=False, and retried") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.api.patches_to_refuse = 1;
  auto refused = f.run("web");
  CHECK(refused.kind == ReconcileOutcome::Kind::kRetry);
  CHECK_FALSE(refused.patched);
  CHECK(f.condition("web", "Scaled") == "PatchFailed");
  CHECK(f.condition("web", "Scaled", "status") == "False");
  CHECK(f.condition("web", "Scaled", "message").find("invalid") != std::string::npos);
  CHECK(f.condition("web", "Ready") == "PatchFailed");
  CHECK(f.condition("web", "Ready", "status") == "False");
  CHECK(f.resources("web").is_null());
  auto retried = f.run("web");
  CHECK(retried.patched);
  CHECK(f.condition("web", "Scaled") == "Applied");
  CHECK(f.condition("web", "Ready", "status") == "True");
  CHECK(f.resources("web")["requests"]["cpu"] == "250m");
}

TEST_CASE("a refused blind PATCH falls back to a read and the usual patch") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  f.run("web");
  const int gets = f.api.deployment_gets;
  int64_t old_generation = user_edit(f, "100m");
  f.api.patches_to_refuse = 1;
  auto outcome = f.run("web", Priority::kHigh, update_hint(old_generation));
  CHECK(outcome.kind == ReconcileOutcome::Kind::kDone);
  CHECK(outcome.patched);
  CHECK(f.api.deployment_gets == gets + 1);
  CHECK(f.resources("web")["requests"]["cpu"] == "250m");
}

TEST_CASE("no blind PATCH without the hinted write's old object seen applied, or when disabled") {
  SUBCASE("a hint whose old generation was never verified reads first") {
    Fixture f;
    f.add_deployment("web", R"([{"name": "app"}])");
    f.add_scaler("web", kSpec);
    f.run("web");
    user_edit(f, "100m");
    int64_t old_generation = user_edit(f, "200m");  // an edit vscaler never saw in between
    const int gets = f.api.deployment_gets;
    CHECK(f.run("web", Priority::kHigh, update_hint(old_generation)).patched);
    CHECK(f.api.deployment_gets == gets + 1);
  }
  SUBCASE("a scaler whose spec changed since it was applied reads first") {
    Fixture f;
    f.add_deployment("web", R"([{"name": "app"}])");
    f.add_scaler("web", kSpec);
    f.run("web");
    f.api.scalers["web"]["metadata"]["generation"] = 2;  // a new spec, not reconciled yet
    f.refresh("web");
    int64_t old_generation = user_edit(f, "100m");
    const int gets = f.api.deployment_gets;
    CHECK(f.run("web", Priority::kHigh, update_hint(old_generation)).patched);
    CHECK(f.api.deployment_gets == gets + 1);
  }
  SUBCASE("ReconcilerOptions::blind_restore off") {
    Fixture f;
    ReconcilerOptions options;
    options.blind_restore = false;
    Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics, options};
    f.add_deployment("web", R"([{"name": "app"}])");
    f.add_scaler("web", kSpec);
    f.run("web");
    int64_t old_generation = user_edit(f, "100m");
    const int gets = f.api.deployment_gets;
    WorkItem item;
    item.key = "shop/web";
    f.expectations.expect(item.key, update_hint(old_generation));
    CHECK(reconciler.reconcile(item).patched);
    CHECK(f.api.deployment_gets == gets + 1);
  }
}

TEST_CASE("merge_patch_between sets changes and nulls removed members") {
  json from = json::parse(R"({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]})");
  json to = json::parse(R"({"a": 1, "b": {"c": 4}, "e": [2], "f": true})");
  CHECK(merge_patch_between(from, to) ==
        json::parse(R"({"b": {"c": 4, "d": null}, "e": [2], "f": true})"));
  json patched = from;
  patched.merge_patch(merge_patch_between(from, to));
  CHECK(patched == to);
}

TEST_CASE("a StatefulSet target is patched; its status names it, without the Deployment fields") {
  Fixture f;
  f.add_workload("StatefulSet", "db", R"([{"name": "app"}])");
  f.add_scaler("db",
               R"({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
      "updateMode": "Reconcile", "containers": [{"name": "app", "requests": {"cpu": "300m"}}]})");
  auto outcome = f.run("db");
  CHECK(outcome.patched);
  CHECK(f.resources("StatefulSet/db") == json::parse(R"({"requests": {"cpu": "300m"}})"));
  json status = f.api.scalers["db"]["status"];
  CHECK(status["target"] == json::parse(R"({"apiVersion": "apps/v1", "kind": "StatefulSet",
      "name": "db", "uid": "uid-StatefulSet-db", "found": true, "ref": "StatefulSet/db"})"));
  CHECK_FALSE(status.contains("deployment"));
  CHECK(f.condition("db", "TargetFound") == "Found");
  CHECK(f.condition("db", "DeploymentFound").empty());
  CHECK(f.condition("db", "Scaled") == "Applied");
  CHECK(f.condition("db", "Scaled", "message") == "StatefulSet db carries the declared resources");
}

TEST_CASE(
    "a DaemonSet with updateStrategy OnDelete: applied, and the status says pods keep old "
    "values until deleted") {
  Fixture f;
  f.add_workload("DaemonSet", "agent", R"([{"name": "app"}])", "OnDelete");
  f.add_scaler("agent",
               R"({"targetRef": {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent"},
      "updateMode": "Reconcile", "containers": [{"name": "app", "requests": {"cpu": "20m"}}]})");
  f.run("agent");
  CHECK(f.resources("DaemonSet/agent") == json::parse(R"({"requests": {"cpu": "20m"}})"));
  CHECK(f.condition("agent", "Scaled") == "Applied");
  std::string message = f.condition("agent", "Scaled", "message");
  CHECK(message.find("DaemonSet agent carries the declared resources") == 0);
  CHECK(message.find("OnDelete") != std::string::npos);
  CHECK(message.find("pick them up when they are deleted") != std::string::npos);
  CHECK(f.condition("agent", "Ready") == "UpToDate");
  // A RollingUpdate one says nothing of the kind.
  f.add_workload("DaemonSet", "rolling", R"([{"name": "app"}])", "RollingUpdate");
  f.add_scaler("rolling",
               R"({"targetRef": {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "rolling"},
      "updateMode": "Reconcile", "containers": [{"name": "app", "requests": {"cpu": "20m"}}]})");
  f.run("rolling");
  CHECK(f.condition("rolling", "Scaled", "message").find("OnDelete") == std::string::npos);
}

TEST_CASE(
    "a Deployment and a StatefulSet named alike: each scaler applies its own values, no "
    "Conflict") {
  Fixture f;
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_workload("StatefulSet", "web", R"([{"name": "app"}])");
  f.add_scaler("for-deploy", R"({"deploymentName": "web", "updateMode": "Reconcile",
      "containers": [{"name": "app", "requests": {"cpu": "100m"}}]})");
  f.add_scaler("for-sts",
               R"({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
      "updateMode": "Reconcile", "containers": [{"name": "app", "requests": {"cpu": "700m"}}]})",
               "2025-01-01T00:00:00Z");  // older: it would win a Conflict on one workload
  f.run("for-deploy");
  f.run("for-sts");
  CHECK(f.resources("web") == json::parse(R"({"requests": {"cpu": "100m"}})"));
  CHECK(f.resources("StatefulSet/web") == json::parse(R"({"requests": {"cpu": "700m"}})"));
  CHECK(f.condition("for-deploy", "Ready") == "UpToDate");
  CHECK(f.condition("for-sts", "Ready") == "UpToDate");
  CHECK(f.api.scalers["for-deploy"]["status"]["target"]["ref"] == "Deployment/web");
  CHECK(f.api.scalers["for-sts"]["status"]["target"]["ref"] == "StatefulSet/web");
}

TEST_CASE("a missing StatefulSet: TargetFound=False naming it, nothing written") {
  Fixture f;
  f.add_scaler("db",
               R"({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
      "containers": [{"name": "app", "requests": {"cpu": "300m"}}]})");
  f.run("db");
  CHECK(f.api.deployment_patches == 0);
  CHECK(f.condition("db", "TargetFound") == "NotFound");
  CHECK(f.condition("db", "TargetFound", "message") ==
        "StatefulSet db does not exist in namespace shop");
  CHECK(f.api.scalers["db"]["status"]["target"]["found"] == false);
  // An Event says so once (kubectl describe), not at every look while it stays missing.
  CHECK(f.api.events == std::vector<std::string>{"Warning NotFound"});
  f.run("db");
  CHECK(f.api.events.size() == 1);
  // Retargeted to another missing one: said again, naming it.
  f.api.scalers["db"]["spec"]["targetRef"]["name"] = "dbb";  // its status still says NotFound
  f.api.scalers["db"]["metadata"]["generation"] = 2;
  f.refresh("db");
  f.run("db");
  CHECK(f.api.events.size() == 2);
  CHECK(f.condition("db", "TargetFound", "message") ==
        "StatefulSet dbb does not exist in namespace shop");
}

// ---- recommendations (status.recommendation, written by the recommender) -------------------

namespace {

/// A recommendation for container `name` in VPA's status shape.
json recommendation(const char* name, const char* target, const char* lower, const char* upper) {
  return {{"containerRecommendations",
           {{{"containerName", name},
             {"target", {{"cpu", target}}},
             {"lowerBound", {{"cpu", lower}}},
             {"upperBound", {{"cpu", upper}}},
             {"uncappedTarget", {{"cpu", target}}}}}}};
}

/// Reconciles `name` with `reconciler` (options of the test's own), then refreshes the store.
ReconcileOutcome run_with(Fixture& f, Reconciler& reconciler, const std::string& name) {
  WorkItem item;
  item.key = "shop/" + name;
  auto outcome = reconciler.reconcile(item);
  f.refresh(name);
  return outcome;
}

void set_recommendation(Fixture& f, const json& value) {
  f.api.scalers["web"]["status"]["recommendation"] = value;
  f.refresh("web");
}

}  // namespace

TEST_CASE(
    "Auto: an applied request below lowerBound is patched to the target once, limits in "
    "proportion, and the rate-limit clock starts") {
  Fixture f;
  struct Counting : ReconcilerMetrics {
    int applied = 0;
    void on_recommendation_applied() override { ++applied; }
  } metrics;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"},
      "limits": {"cpu": "200m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web"})");
  set_recommendation(f, recommendation("app", "300m", "250m", "400m"));
  auto outcome = run_with(f, reconciler, "web");
  CHECK(outcome.patched);
  CHECK(f.resources("web") ==
        json::parse(R"({"requests": {"cpu": "300m"}, "limits": {"cpu": "600m"}})"));
  CHECK(metrics.applied == 1);
  CHECK(f.api.scalers["web"]["status"].contains("lastRecommendationUpdateTime"));
  CHECK(f.condition("web", "Scaled") == "Applied");
  // In bounds now: nothing more, whatever the clock says.
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 1);
  // The target moves a little but stays within the bounds: no patch either.
  set_recommendation(f, recommendation("app", "320m", "250m", "400m"));
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.condition("web", "Scaled") == "Applied");
}

TEST_CASE(
    "Auto: out of bounds again within --min-update-interval is Deferred (Ready stays True) "
    "and requeued for when it lifts") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "Reconcile"})");
  set_recommendation(f, recommendation("app", "300m", "250m", "400m"));
  run_with(f, reconciler, "web");
  REQUIRE(f.api.deployment_patches == 1);
  set_recommendation(f, recommendation("app", "1", "900m", "2"));
  auto outcome = run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.condition("web", "Scaled") == "Deferred");
  CHECK(f.condition("web", "Scaled", "message").find("applies at 20") != std::string::npos);
  CHECK(f.condition("web", "Ready", "status") == "True");
  CHECK(outcome.requeue_after > std::chrono::minutes(9));
  CHECK(outcome.requeue_after <= std::chrono::minutes(10));
  // The clock is older than the interval (a previous leader, long ago): due now.
  f.api.scalers["web"]["status"]["lastRecommendationUpdateTime"] = "2020-01-01T00:00:00Z";
  f.refresh("web");
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 2);
  CHECK(f.resources("web")["requests"]["cpu"] == "1");
}

TEST_CASE(
    "a recommendation applied whose status write failed still starts the rate-limit clock: "
    "the next one out of bounds is Deferred") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "Reconcile"})");
  set_recommendation(f, recommendation("app", "300m", "250m", "400m"));
  f.api.status_failures_to_inject = 1;
  auto failed = run_with(f, reconciler, "web");
  CHECK(failed.kind != ReconcileOutcome::Kind::kDone);
  REQUIRE(f.api.deployment_patches == 1);
  CHECK_FALSE(f.api.scalers["web"]["status"].contains("lastRecommendationUpdateTime"));
  // The retry finds the values in place (nothing to patch) and writes the patch's times.
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.api.scalers["web"]["status"].contains("lastRecommendationUpdateTime"));
  CHECK(f.api.scalers["web"]["status"].contains("lastScaleTime"));
  set_recommendation(f, recommendation("app", "1", "900m", "2"));
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.condition("web", "Scaled") == "Deferred");
}

TEST_CASE("while a patch's status write keeps failing, the next recommendation still waits") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "Reconcile"})");
  set_recommendation(f, recommendation("app", "300m", "250m", "400m"));
  f.api.status_failures_to_inject = 3;
  CHECK(run_with(f, reconciler, "web").kind != ReconcileOutcome::Kind::kDone);
  REQUIRE(f.api.deployment_patches == 1);
  // A new recommendation out of bounds while the status still says nothing of the patch.
  set_recommendation(f, recommendation("app", "1", "900m", "2"));
  run_with(f, reconciler, "web");
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.resources("web")["requests"]["cpu"] == "300m");
  // The scaler deleted and created again by its name (another uid): the kept time was the old
  // one's; the new one's first recommendation is due.
  f.api.scalers["web"]["metadata"]["uid"] = "another";
  f.api.scalers["web"].erase("status");
  set_recommendation(f, recommendation("app", "1", "900m", "2"));
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 2);
  CHECK(f.resources("web")["requests"]["cpu"] == "1");
}

TEST_CASE("a status write that meets another scaler by the name (created again) writes nothing") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "Reconcile"})");
  set_recommendation(f, recommendation("app", "300m", "250m", "400m"));
  f.api.status_conflicts_to_inject = 1;
  f.api.on_status_conflict = [&f] {
    // Deleted and created again meanwhile: another uid, generation 1 again, a status of its own.
    f.api.scalers["web"]["metadata"]["uid"] = "another";
    f.api.scalers["web"]["status"] = json::object();
  };
  auto outcome = run_with(f, reconciler, "web");
  CHECK(outcome.kind != ReconcileOutcome::Kind::kDone);
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.api.status_patches == 0);  // the old scaler's report is not the new one's
  CHECK_FALSE(f.api.scalers["web"]["status"].contains("lastRecommendationUpdateTime"));
}

TEST_CASE("Initial: a recommendation never patches; it is Deferred to the next template change") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "Initial",
      "containers": [{"name": "app"}, {"name": "side", "requests": {"cpu": "1"}}]})");
  set_recommendation(f, recommendation("app", "300m", "250m", "400m"));
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 0);
  CHECK(f.condition("web", "Scaled") == "Deferred");
  CHECK(f.condition("web", "Scaled", "message").find("next template change") != std::string::npos);
  CHECK(f.condition("web", "Ready", "status") == "True");
}

TEST_CASE("in-place modes without pods/resize (before 1.33): ResizeUnsupported, as Initial") {
  Fixture f;
  ReconcilerOptions options;
  options.resize_supported = false;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics, options};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "InPlaceOrRecreate",
      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 0);  // no rollout, as Initial
  CHECK(f.condition("web", "Scaled") == "ResizeUnsupported");
  CHECK(f.condition("web", "Scaled", "status") == "False");
  CHECK(f.condition("web", "Scaled", "message").find("older than Kubernetes 1.33") !=
        std::string::npos);
  CHECK(f.condition("web", "Ready", "status") == "True");
}

TEST_CASE("in-place modes: a named container missing from the template is ContainerNotFound") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.api.deployments["web"]["spec"]["selector"]["matchLabels"]["app"] = "web";
  for (const char* mode : {"InPlace", "InPlaceOrRecreate"}) {
    CAPTURE(mode);
    const std::string spec = std::string(R"({"deploymentName": "web", "updateMode": ")") + mode +
                             R"(", "containers": [{"name": "app", "requests": {"cpu": "250m"}},
                             {"name": "worker", "requests": {"cpu": "1"}}]})";
    f.add_scaler("web", spec.c_str());
    run_with(f, reconciler, "web");
    CHECK(f.api.deployment_patches == 0);  // the template keeps what it has
    CHECK(f.condition("web", "Scaled") == "ContainerNotFound");
    CHECK(f.condition("web", "Scaled", "status") == "False");
    CHECK(f.condition("web", "Scaled", "message").find("worker") != std::string::npos);
  }
}

TEST_CASE("in-place modes: values invalid for a running pod are InvalidResources, not sent") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"},
                                                           "limits": {"cpu": "1"}}}])");
  f.api.deployments["web"]["spec"]["selector"]["matchLabels"]["app"] = "web";
  // A running pod of the Deployment (through its ReplicaSet) whose cpu limit is 1.
  f.api.pods.push_back(json::parse(R"({
      "metadata": {"name": "web-6b9f7c-a", "uid": "uid-a", "generation": 1,
                   "labels": {"app": "web", "pod-template-hash": "6b9f7c"},
                   "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                        "name": "web-6b9f7c", "uid": "rs", "controller": true}]},
      "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"},
                                                            "limits": {"cpu": "1"}}}]},
      "status": {"phase": "Running", "observedGeneration": 1,
                 "containerStatuses": [{"name": "app", "ready": true, "resources": {
                     "requests": {"cpu": "100m"}, "limits": {"cpu": "1"}}}]}})"));
  for (const char* mode : {"InPlace", "InPlaceOrRecreate"}) {
    CAPTURE(mode);
    const std::string spec = std::string(R"({"deploymentName": "web", "updateMode": ")") + mode +
                             R"(", "containers": [{"name": "app", "requests": {"cpu": "2"}}]})";
    f.add_scaler("web", spec.c_str());
    run_with(f, reconciler, "web");
    CHECK(f.condition("web", "Scaled") == "InvalidResources");
    CHECK(f.condition("web", "Scaled", "status") == "False");
    const std::string message = f.condition("web", "Scaled", "message");
    CHECK(message.find("requests.cpu 2 would exceed limits.cpu 1") != std::string::npos);
    CHECK(message.find("evicted") == std::string::npos);  // no eviction would make them valid
    CHECK(f.condition("web", "Ready", "status") == "False");
  }
  // No pod running: the template still could not take them, so new pods would not get them.
  f.api.pods = json::array();
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "InPlace",
      "containers": [{"name": "app", "requests": {"cpu": "2"}}]})");
  run_with(f, reconciler, "web");
  CHECK(f.condition("web", "Scaled") == "InvalidResources");
  CHECK(f.condition("web", "Scaled", "message").find("new pods") != std::string::npos);
}

TEST_CASE("in-place modes: a follower writes no status and does not poll; the leader reports") {
  Fixture f;
  ReconcilerOptions options;
  bool leading = false;
  options.leader_step = [&leading] { return leading; };
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics, options};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}}])");
  f.api.deployments["web"]["spec"]["selector"]["matchLabels"]["app"] = "web";
  f.add_scaler("web", R"({"deploymentName": "web", "updateMode": "InPlace",
      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  WorkItem item;
  item.key = "shop/web";
  ReconcileOutcome outcome = reconciler.reconcile(item);
  REQUIRE(outcome.kind == ReconcileOutcome::Kind::kDone);
  // Its report would lack the leader's memory of the pods (held, refused, evicted).
  CHECK(f.api.status_patches == 0);
  CHECK(outcome.requeue_after.count() == 0);
  CHECK(f.api.events.empty());
  leading = true;
  outcome = reconciler.reconcile(item);
  REQUIRE(outcome.kind == ReconcileOutcome::Kind::kDone);
  f.refresh("web");
  CHECK(f.api.status_patches == 1);
  CHECK(f.condition("web", "Scaled") == "Applied");
  CHECK(f.api.deployment_patches == 0);  // the template keeps what it has
}

TEST_CASE("no recommendation yet and nothing fixed: nothing is written, AwaitingRecommendation") {
  Fixture f;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics};
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", R"({"deploymentName": "web"})");
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 0);
  CHECK(f.condition("web", "Scaled") == "AwaitingRecommendation");
  CHECK(f.condition("web", "Scaled", "status") == "False");
}

TEST_CASE(
    "fixed and recommended containers in one scaler; a follower makes no recommendation "
    "patch; --recommender-interval 0 says RecommenderDisabled") {
  Fixture f;
  ReconcilerOptions options;
  bool leading = false;
  options.leader_step = [&leading] { return leading; };
  options.recommender_enabled = false;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics, options};
  f.add_deployment("web", R"([{"name": "app", "resources": {"requests": {"cpu": "100m"}}},
      {"name": "fixed", "resources": {"requests": {"cpu": "1"}}},
      {"name": "proxy", "resources": {"requests": {"cpu": "5m"}}}])");
  f.add_scaler("web", R"({"deploymentName": "web", "containers": [{"name": "app"},
      {"name": "fixed", "requests": {"cpu": "500m"}}, {"name": "proxy", "mode": "Off"}]})");
  json recs = recommendation("app", "300m", "250m", "400m");
  json proxy = recs["containerRecommendations"][0];
  proxy["containerName"] = "proxy";
  recs["containerRecommendations"].push_back(proxy);
  set_recommendation(f, recs);
  run_with(f, reconciler, "web");
  // The fixed value is applied by any replica; the recommendation waits for the leader.
  CHECK(f.api.deployment_patches == 1);
  CHECK(f.resources("web", 0)["requests"]["cpu"] == "100m");
  CHECK(f.resources("web", 1)["requests"]["cpu"] == "500m");
  CHECK(f.condition("web", "RecommendationProvided") == "RecommenderDisabled");
  // Its status does not claim what it did not apply.
  CHECK(f.condition("web", "Scaled") == "Deferred");
  CHECK(f.condition("web", "Scaled", "message").find("the leading replica applies it") !=
        std::string::npos);
  leading = true;
  run_with(f, reconciler, "web");
  CHECK(f.api.deployment_patches == 2);
  CHECK(f.resources("web", 0)["requests"]["cpu"] == "300m");
  CHECK(f.resources("web", 1)["requests"]["cpu"] == "500m");
  CHECK(f.resources("web", 2)["requests"]["cpu"] == "5m");  // mode Off: left alone
  json containers = f.api.scalers["web"]["status"]["containers"];
  CHECK(containers.size() == 2);
  CHECK(f.condition("web", "Scaled") == "Applied");
}

TEST_CASE(
    "an HPA on cpu of the target: HorizontalPodAutoscalerConflict True and one Event; "
    "gone: False") {
  Fixture f;
  HpaCache hpas;
  ReconcilerOptions options;
  options.hpas = &hpas;
  Reconciler reconciler{f.api, f.store, f.verified, f.expectations, f.metrics, options};
  auto reconcile = [&] {
    WorkItem item;
    item.key = "shop/web";
    reconciler.reconcile(item);
    f.refresh("web");
  };
  auto hpa = std::make_shared<const json>(json::parse(R"({
      "metadata": {"namespace": "shop", "name": "web-cpu"},
      "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
               "metrics": [{"type": "Resource", "resource": {"name": "cpu"}}]}})"));
  f.add_deployment("web", R"([{"name": "app"}])");
  f.add_scaler("web", kSpec);
  reconcile();
  CHECK(f.condition("web", "HorizontalPodAutoscalerConflict").empty());  // never had one
  hpas.rebuild({hpa});
  reconcile();
  CHECK(f.condition("web", "HorizontalPodAutoscalerConflict") == "ScalesOnCpuOrMemory");
  CHECK(f.condition("web", "HorizontalPodAutoscalerConflict", "status") == "True");
  CHECK(f.condition("web", "HorizontalPodAutoscalerConflict", "message")
            .starts_with("HorizontalPodAutoscaler web-cpu scales Deployment web on cpu"));
  CHECK(f.condition("web", "Ready", "status") == "True");  // warned, not fought
  auto warned = std::count(f.api.events.begin(), f.api.events.end(),
                           std::string("Warning ScalesOnCpuOrMemory"));
  CHECK(warned == 1);
  reconcile();  // still there: no second Event
  CHECK(std::count(f.api.events.begin(), f.api.events.end(),
                   std::string("Warning ScalesOnCpuOrMemory")) == 1);
  hpas.rebuild({});
  reconcile();
  CHECK(f.condition("web", "HorizontalPodAutoscalerConflict") == "NoConflict");
  CHECK(f.condition("web", "HorizontalPodAutoscalerConflict", "status") == "False");
}

TEST_CASE("a scaler the informer could not parse gets Ready=False, InvalidSpec, naming why") {
  Fixture f;
  f.api.scalers["bad"] = {
      {"metadata",
       {{"name", "bad"}, {"namespace", "shop"}, {"generation", 3}, {"resourceVersion", "7"}}},
      {"spec", {{"deploymentName", "web"}, {"updateMode", "Sometimes"}}}};
  InvalidScaler invalid;
  invalid.ns = "shop";
  invalid.name = "bad";
  invalid.generation = 3;
  invalid.resource_version = "7";
  invalid.error = "spec.updateMode: \"Sometimes\" is not one of Auto, Reconcile, ...";
  f.store.mark_invalid("shop/bad", invalid);
  WorkItem item;
  item.key = "shop/bad";
  CHECK(f.reconciler.reconcile(item).kind == ReconcileOutcome::Kind::kDone);
  CHECK(f.condition("bad", "Ready") == "InvalidSpec");
  CHECK(f.condition("bad", "Ready", "status") == "False");
  CHECK(f.condition("bad", "Ready", "message").find("spec.updateMode") != std::string::npos);
  CHECK(f.api.scalers.at("bad")["status"]["observedGeneration"] == 3);
  CHECK(f.api.deployment_patches == 0);
  // Reconciled again with that status stored: nothing more is written.
  invalid.status = f.api.scalers.at("bad")["status"];
  invalid.resource_version = f.api.scalers.at("bad")["metadata"]["resourceVersion"];
  f.store.mark_invalid("shop/bad", invalid);
  const int writes = f.api.status_patches;
  f.reconciler.reconcile(item);
  CHECK(f.api.status_patches == writes);
  // Once valid (or deleted) the record goes.
  f.store.clear_invalid("shop/bad");
  CHECK_FALSE(f.store.invalid("shop/bad").has_value());
}
