// Resyncer with a fake ResyncApi (in-memory workload metadata by kind) and the real store,
// verified state and queue: only what changed or vanished since it was verified is enqueued, at
// low priority; an interrupted list judges nobody; conflict losers are never judged; a namespace
// with few scalers among many Deployments is read by GETs; each kind is read on its own.
#include "controller/resync.h"

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "api/packed_text.h"

using namespace std::chrono_literals;
using namespace vscaler;
using controller::Priority;
using controller::Verified;
using controller::WorkloadMeta;

namespace {

class FakeResyncApi : public controller::ResyncApi {
 public:
  // "ns/kind" -> name -> meta
  std::map<std::string, std::map<std::string, WorkloadMeta>> workloads;
  std::map<std::string, WorkloadMeta>& deployments(const std::string& ns) {
    return workloads[ns + "/Deployment"];
  }
  bool fail_lists = false;
  int lists = 0;
  int gets = 0;
  std::vector<std::string> listed;  // "ns/kind" of each list
  base::Result<std::vector<WorkloadMeta>, kube::ApiError> list_workloads(const std::string& ns,
                                                                         const std::string& kind,
                                                                         int& calls) override {
    ++calls;
    ++lists;
    listed.push_back(ns + "/" + kind);
    if (fail_lists) return base::fail(kube::make_error(kube::ErrorKind::kTransport, "reset"));
    std::vector<WorkloadMeta> out;
    for (const auto& [name, meta] : workloads[ns + "/" + kind]) out.push_back(meta);
    return out;
  }
  base::Result<WorkloadMeta, kube::ApiError> get_workload(const std::string& ns,
                                                          const std::string& kind,
                                                          const std::string& name) override {
    ++gets;
    auto& of_kind = workloads[ns + "/" + kind];
    auto it = of_kind.find(name);
    if (it == of_kind.end()) {
      return base::fail(kube::make_error(kube::ErrorKind::kNotFound, name + " not found"));
    }
    return it->second;
  }
};

struct Fixture {
  FakeResyncApi api;
  controller::ScalerStore store;
  controller::VerifiedState verified;
  controller::WorkQueue queue;
  controller::ResyncMetrics metrics;
  controller::Resyncer resyncer{api, store, verified, queue, metrics};

  void scaler(const std::string& name, const std::string& deployment,
              const char* created = "2026-01-01T00:00:00Z", const char* kind = "Deployment") {
    api::Scaler s;
    s.ns = "shop";
    s.name = name;
    s.target = api::TargetRef{kind, deployment};
    s.creation_timestamp = created;
    store.upsert(std::make_shared<const api::Scaler>(s));
  }
  void deployment(const std::string& name, const char* uid, int64_t generation) {
    api.deployments("shop")[name] = WorkloadMeta{name, uid, generation};
  }
  std::set<std::string> drain() {
    std::set<std::string> keys;
    while (auto item = queue.get_for(10ms)) {
      CHECK(item->priority == Priority::kLow);
      keys.insert(item->key);
      queue.done(item->key);
    }
    return keys;
  }
};

}  // namespace

TEST_CASE("resync: enqueues what changed, was never verified, or vanished; nothing else") {
  Fixture f;
  for (const char* name : {"same", "newer", "recreated", "gone", "never"}) f.scaler(name, name);
  f.deployment("same", "u-same", 3);
  f.deployment("newer", "u-newer", 5);
  f.deployment("recreated", "u-recreated-2", 1);
  f.deployment("never", "u-never", 1);
  f.verified.set("shop/same", Verified{true, "u-same", 3});
  f.verified.set("shop/newer", Verified{true, "u-newer", 4});
  f.verified.set("shop/recreated", Verified{true, "u-recreated-1", 1});
  f.verified.set("shop/gone", Verified{true, "u-gone", 2});
  auto stats = f.resyncer.run_once();
  CHECK(stats.scalers == 5);
  CHECK(stats.enqueued == 4);
  CHECK(f.drain() ==
        std::set<std::string>{"shop/newer", "shop/recreated", "shop/gone", "shop/never"});
  // Verified as they are now: the next pass enqueues nothing.
  f.verified.set("shop/newer", Verified{true, "u-newer", 5});
  f.verified.set("shop/recreated", Verified{true, "u-recreated-2", 1});
  f.verified.set("shop/gone", Verified{});
  f.verified.set("shop/never", Verified{true, "u-never", 1});
  CHECK(f.resyncer.run_once().enqueued == 0);
  CHECK(f.drain().empty());
}

TEST_CASE(
    "resync: with several replicas, a scaler whose work lies in its pods is visited each pass") {
  Fixture f;
  for (const char* name : {"auto", "in-place", "boosted", "was-boosted"}) {
    f.deployment(name, name, 1);
    f.verified.set(std::string("shop/") + name, Verified{true, name, 1});
  }
  auto add = [&](const char* name, api::UpdateMode mode, bool boost, std::string_view status = "") {
    api::Scaler s;
    s.ns = "shop";
    s.name = name;
    s.target = api::TargetRef{"Deployment", name};
    s.creation_timestamp = "2026-01-01T00:00:00Z";
    s.update_mode = mode;
    if (boost) s.startup_boost = api::StartupBoost{};
    s.packed_status = api::pack_status_text(status);
    f.store.upsert(std::make_shared<const api::Scaler>(s));
  };
  add("auto", api::UpdateMode::kAuto, false);
  add("in-place", api::UpdateMode::kInPlace, false);
  add("boosted", api::UpdateMode::kAuto, true);
  // Its boost removed from the spec while a pod still holds one: watched until it ends.
  add("was-boosted", api::UpdateMode::kAuto, false, R"({"startupBoost":{"boosted":1}})");
  // One replica: every hint reached it; nothing changed, nothing is visited.
  CHECK(f.resyncer.run_once().enqueued == 0);
  const int reads = f.api.lists + f.api.gets;
  // Several: nothing changed in any workload, but the pods of the last two may have (a pod
  // admitted boosted or capped by another replica's hook). Enqueued without a read of their own.
  f.resyncer.set_visit_pod_scalers(true);
  for (int pass = 0; pass < 2; ++pass) {
    auto stats = f.resyncer.run_once();
    CHECK(stats.enqueued == 3);
    CHECK(stats.scalers == 4);
    CHECK(f.drain() == std::set<std::string>{"shop/in-place", "shop/boosted", "shop/was-boosted"});
  }
  CHECK(f.api.lists + f.api.gets - reads == 2);  // the auto scaler's namespace, once a pass
}

TEST_CASE("resync: an interrupted list proves nothing; nobody in the namespace is judged") {
  Fixture f;
  f.scaler("web", "web");
  f.verified.set("shop/web", Verified{true, "u-web", 1});
  f.api.fail_lists = true;  // the Deployment is absent from nothing: the list never completed
  auto stats = f.resyncer.run_once();
  CHECK(stats.skipped == 1);
  CHECK(stats.enqueued == 0);
  CHECK(f.drain().empty());
}

TEST_CASE("resync: a conflict loser is not judged, only the active scaler") {
  Fixture f;
  f.scaler("old", "web", "2026-01-01T00:00:00Z");
  f.scaler("young", "web", "2026-02-01T00:00:00Z");
  f.deployment("web", "u-web", 2);
  auto stats = f.resyncer.run_once();
  CHECK(stats.scalers == 1);
  CHECK(f.drain() == std::set<std::string>{"shop/old"});
}

TEST_CASE("resync: few scalers among many Deployments are read by GET after one list") {
  Fixture f;
  f.scaler("web", "web");
  for (int i = 0; i < 50; ++i) f.deployment("other-" + std::to_string(i), "u", 1);
  f.deployment("web", "u-web", 1);
  f.verified.set("shop/web", Verified{true, "u-web", 1});
  f.resyncer.run_once();  // learns the namespace's size from a list
  CHECK(f.api.lists == 1);
  f.api.deployments("shop")["web"].generation = 2;
  auto stats = f.resyncer.run_once();
  CHECK(f.api.lists == 1);
  CHECK(f.api.gets == 1);
  CHECK(stats.api_calls == 1);
  CHECK(f.drain() == std::set<std::string>{"shop/web"});
}

TEST_CASE("resync: a namespace that held no scaler for a pass is listed afresh when one returns") {
  // Its last list size is not kept (a preview environment's namespace, deleted, would stay).
  Fixture f;
  f.scaler("web", "web");
  for (int i = 0; i < 50; ++i) f.deployment("other-" + std::to_string(i), "u", 1);
  f.deployment("web", "u-web", 1);
  f.resyncer.run_once();
  CHECK(f.api.lists == 1);
  f.store.remove("shop/web");
  f.resyncer.run_once();
  CHECK(f.api.lists == 1);
  f.scaler("web", "web");
  f.resyncer.run_once();
  CHECK(f.api.lists == 2);  // not a GET by the size learnt before
  CHECK(f.api.gets == 0);
}

TEST_CASE("resync: run() passes periodically and stop() ends it") {
  Fixture f;
  f.scaler("web", "web");
  std::thread loop([&] { f.resyncer.run(20ms); });
  auto item = f.queue.get_for(10s);  // never verified: the first pass enqueues it
  REQUIRE(item.has_value());
  CHECK(item->key == "shop/web");
  f.queue.done(item->key);
  f.resyncer.stop();
  loop.join();
}

TEST_CASE("resync: each kind is listed on its own; a StatefulSet and a Deployment named alike") {
  Fixture f;
  f.scaler("web-deploy", "web");
  f.scaler("web-sts", "web", "2026-01-01T00:00:00Z", "StatefulSet");
  f.scaler("agent", "agent", "2026-01-01T00:00:00Z", "DaemonSet");
  f.deployment("web", "u-deploy", 1);
  f.api.workloads["shop/StatefulSet"]["web"] = WorkloadMeta{"web", "u-sts", 1};
  f.api.workloads["shop/DaemonSet"]["agent"] = WorkloadMeta{"agent", "u-ds", 1};
  f.verified.set("shop/web-deploy", Verified{true, "u-deploy", 1});
  f.verified.set("shop/web-sts", Verified{true, "u-sts", 1});
  f.verified.set("shop/agent", Verified{true, "u-ds", 1});
  auto stats = f.resyncer.run_once();
  CHECK(stats.scalers == 3);  // two scalers on "web", but two targets: neither is a loser
  CHECK(stats.enqueued == 0);
  CHECK(std::set<std::string>(f.api.listed.begin(), f.api.listed.end()) ==
        std::set<std::string>{"shop/Deployment", "shop/StatefulSet", "shop/DaemonSet"});
  // The StatefulSet changes: only its scaler is enqueued, not the Deployment's of the same name.
  f.api.workloads["shop/StatefulSet"]["web"].generation = 2;
  f.resyncer.run_once();
  CHECK(f.drain() == std::set<std::string>{"shop/web-sts"});
  // The DaemonSet vanishes from a complete list: deleted.
  f.api.workloads["shop/DaemonSet"].clear();
  f.resyncer.run_once();
  CHECK(f.drain() == std::set<std::string>{"shop/agent", "shop/web-sts"});
}

namespace {
// FakeResyncApi behind a lock, for passes that read several namespaces at once.
class LockedResyncApi : public FakeResyncApi {
 public:
  std::mutex mutex;
  base::Result<std::vector<WorkloadMeta>, kube::ApiError> list_workloads(const std::string& ns,
                                                                         const std::string& kind,
                                                                         int& calls) override {
    std::lock_guard lock(mutex);
    return FakeResyncApi::list_workloads(ns, kind, calls);
  }
};
}  // namespace

TEST_CASE("resync: namespaces read concurrently give the same verdicts and counts") {
  LockedResyncApi api;
  controller::ScalerStore store;
  controller::VerifiedState verified;
  controller::WorkQueue queue;
  controller::ResyncMetrics metrics;
  controller::Resyncer resyncer{api, store, verified, queue, metrics, /*concurrency=*/3};
  std::set<std::string> expected;
  for (int n = 0; n < 10; ++n) {
    std::string ns = "ns-" + std::to_string(n);
    for (int i = 0; i < 5; ++i) {
      std::string name = "w" + std::to_string(i);
      api::Scaler s;
      s.ns = ns;
      s.name = name;
      s.target = api::TargetRef{"Deployment", name};
      s.creation_timestamp = "2026-01-01T00:00:00Z";
      store.upsert(std::make_shared<const api::Scaler>(s));
      api.deployments(ns)[name] = WorkloadMeta{name, "u", 1};
      // One in five drifted (a newer generation than verified).
      verified.set(ns + "/" + name, Verified{true, "u", i == 0 ? 0 : 1});
      if (i == 0) expected.insert(ns + "/" + name);
    }
  }
  auto stats = resyncer.run_once();
  CHECK(stats.scalers == 50);
  CHECK(stats.namespaces == 10);
  CHECK(stats.api_calls == 10);
  CHECK(api.lists == 10);
  CHECK(stats.enqueued == 10);
  std::set<std::string> keys;
  while (auto item = queue.get_for(10ms)) {
    keys.insert(item->key);
    queue.done(item->key);
  }
  CHECK(keys == expected);
}
