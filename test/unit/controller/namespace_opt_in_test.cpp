// Namespace opt-in: the plan (create for workloads no scaler targets, delete made scalers whose
// workload or label went or that a person's scaler overrides, never touch a person's) and one
// pass over a fake API (what it writes, and that a failed read deletes nothing).
#include "controller/namespace_opt_in.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "api/namespace_scalers.h"

using namespace vscaler;
using namespace vscaler::controller;

namespace {

std::shared_ptr<const api::Scaler> scaler(const std::string& ns, const std::string& name,
                                          const std::string& kind, const std::string& target,
                                          bool made) {
  auto s = std::make_shared<api::Scaler>();
  s->ns = ns;
  s->name = name;
  s->uid = "uid-" + name;
  s->target.kind = kind;
  s->target.name = target;
  s->made_for_namespace = made;
  return s;
}

std::shared_ptr<const api::Scaler> made(const std::string& ns, const std::string& kind,
                                        const std::string& target) {
  return scaler(ns, api::made_scaler_name(kind, target), kind, target, true);
}

/// Labelled namespaces and their workloads in memory; records the writes.
class FakeOptInApi final : public ResyncApi, public OptInApi {
 public:
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> namespaces;
  bool fail_namespaces = false;
  std::string fail_kind;  // listing this kind fails
  std::set<std::string> terminating;
  std::vector<nlohmann::json> created;
  std::vector<std::string> deleted;  // "ns/name uid"

  kube::Result<std::vector<WorkloadMeta>, kube::ApiError> list_workloads(const std::string& ns,
                                                                         const std::string& kind,
                                                                         int& calls) override {
    ++calls;
    if (kind == fail_kind) return kube::fail(kube::ApiError{});
    std::vector<WorkloadMeta> out;
    for (const auto& [k, name] : namespaces[ns]) {
      if (k == kind) out.push_back({name, "uid", 1});
    }
    return out;
  }
  kube::Result<WorkloadMeta, kube::ApiError> get_workload(const std::string&, const std::string&,
                                                          const std::string&) override {
    return kube::fail(kube::ApiError{});
  }
  kube::Result<std::vector<LabelledNamespace>, kube::ApiError> labelled_namespaces() override {
    if (fail_namespaces) return kube::fail(kube::ApiError{});
    std::vector<LabelledNamespace> names;
    for (const auto& [name, workloads] : namespaces) {
      names.push_back({name, terminating.count(name) > 0});
    }
    return names;
  }
  kube::Result<kube::Unit, kube::ApiError> create_scaler(const nlohmann::json& object) override {
    created.push_back(object);
    return kube::Unit{};
  }
  kube::Result<kube::Unit, kube::ApiError> delete_scaler(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& uid) override {
    deleted.push_back(ns + "/" + name + " " + uid);
    return kube::Unit{};
  }
};

}  // namespace

TEST_CASE("the plan: create what no scaler targets, delete made scalers that lost their reason") {
  std::vector<OptInNamespace> labelled = {
      {"shop", {{"Deployment", "web"}, {"Deployment", "api"}, {"StatefulSet", "db"}}, true}};
  std::vector<std::shared_ptr<const api::Scaler>> scalers = {
      scaler("shop", "api", "Deployment", "api", false),  // a person's
      made("shop", "StatefulSet", "db"),                  // made already
      made("shop", "Deployment", "gone"),                 // its workload is gone
      made("shop", "Deployment", "api"),                  // a person's now targets it
      made("other", "Deployment", "web"),                 // its namespace lost the label
      scaler("other", "web", "Deployment", "web", false),
  };
  OptInPlan plan = plan_opt_in(labelled, true, scalers);
  REQUIRE(plan.creates.size() == 1);
  CHECK(plan.creates[0].workload == "web");
  std::map<std::string, std::string> deletes;
  for (const auto& d : plan.deletes) deletes[d.ns + "/" + d.name] = d.reason;
  CHECK(deletes.size() == 3);
  CHECK(deletes["shop/vsc-deployment-gone"] == "Deployment/gone is gone");
  CHECK(deletes["shop/vsc-deployment-api"].find("written by a person") != std::string::npos);
  CHECK(deletes["other/vsc-deployment-web"].find("no longer labelled vscaler.dev/recommend") !=
        std::string::npos);

  // Reads that failed prove nothing: no delete for a missing workload or label.
  labelled[0].complete = false;
  plan = plan_opt_in(labelled, false, scalers);
  deletes.clear();
  for (const auto& d : plan.deletes) deletes[d.ns + "/" + d.name] = d.reason;
  CHECK(deletes.size() == 1);  // only the one a person's scaler overrides
  CHECK(deletes.count("shop/vsc-deployment-api") == 1);

  // A person's scaler that happens to hold the made name: nothing created, nothing deleted, and
  // the plan names the workload left without one and the holder.
  scalers = {scaler("shop", "vsc-deployment-web", "Deployment", "other", false)};
  plan = plan_opt_in({{"shop", {{"Deployment", "web"}}, true}}, true, scalers);
  CHECK(plan.creates.empty());
  CHECK(plan.deletes.empty());
  REQUIRE(plan.names_held.size() == 1);
  CHECK(plan.names_held[0].workload == "web");
  CHECK(plan.names_held[0].name == "vsc-deployment-web");
  CHECK(plan.names_held[0].holder_uid == "uid-vsc-deployment-web");
  // Its own made scaler holds it: nothing to say.
  scalers = {made("shop", "Deployment", "web")};
  plan = plan_opt_in({{"shop", {{"Deployment", "web"}}, true}}, true, scalers);
  CHECK(plan.creates.empty());
  CHECK(plan.names_held.empty());
}

TEST_CASE("a pass counts the workloads whose made name a person's scaler holds") {
  FakeOptInApi api;
  api.namespaces["shop"] = {{"Deployment", "web"}};
  ScalerStore store;
  auto holder = std::make_shared<api::Scaler>(
      *scaler("shop", "vsc-deployment-web", "Deployment", "other", false));
  store.upsert(holder);
  NamespaceOptIn opt_in(api, api, store);
  OptInStats stats = opt_in.run_once();
  CHECK(stats.names_held == 1);
  CHECK(stats.created == 0);
  CHECK(api.created.empty());
  // Renamed: the next pass makes the workload's scaler.
  store.remove(holder->key());
  stats = opt_in.run_once();
  CHECK(stats.names_held == 0);
  CHECK(stats.created == 1);
}

TEST_CASE("a pass creates and deletes through the API; a person's scaler is never written") {
  FakeOptInApi api;
  api.namespaces["shop"] = {{"Deployment", "web"}, {"DaemonSet", "agent"}};
  ScalerStore store;
  auto person = std::make_shared<api::Scaler>();
  person->ns = "shop";
  person->name = "agent";
  person->uid = "uid-agent";
  person->target.kind = "DaemonSet";
  person->target.name = "agent";
  store.upsert(person);
  auto stale = std::make_shared<api::Scaler>(*made("shop", "StatefulSet", "old"));
  store.upsert(stale);
  NamespaceOptIn opt_in(api, api, store);
  OptInStats stats = opt_in.run_once();
  CHECK(stats.namespaces == 1);
  CHECK(stats.created == 1);
  CHECK(stats.deleted == 1);
  REQUIRE(api.created.size() == 1);
  CHECK(api.created[0]["metadata"]["name"] == "vsc-deployment-web");
  CHECK(api.created[0]["metadata"]["labels"]["app.kubernetes.io/managed-by"] ==
        "vscaler-namespace");
  REQUIRE(api.deleted.size() == 1);
  CHECK(api.deleted[0] == "shop/vsc-statefulset-old uid-vsc-statefulset-old");

  // The StatefulSet list fails: the made scaler of a StatefulSet stays.
  api.created.clear();
  api.deleted.clear();
  api.fail_kind = "StatefulSet";
  stats = opt_in.run_once();
  CHECK(stats.failed == 1);
  CHECK(api.deleted.empty());
  // The namespace list fails: nothing at all.
  api.fail_namespaces = true;
  api.fail_kind.clear();
  stats = opt_in.run_once();
  CHECK(stats.failed == 1);
  CHECK(api.created.size() == 1);  // the pass before made web again (a fake API: no informer)
  CHECK(api.deleted.empty());
}

TEST_CASE("a labelled namespace being deleted: nothing made in it, nothing deleted from it") {
  FakeOptInApi api;
  api.namespaces["gone"] = {{"Deployment", "web"}};
  api.terminating.insert("gone");
  ScalerStore store;
  store.upsert(made("gone", "StatefulSet", "old"));
  NamespaceOptIn opt_in(api, api, store);
  OptInStats stats = opt_in.run_once();
  CHECK(stats.failed == 0);
  CHECK(api.created.empty());  // a 403 "being terminated" each pass, before
  CHECK(api.deleted.empty());  // the namespace takes its scalers; no DELETE racing it
}

TEST_CASE("a replica that stops leading mid-pass writes nothing more") {
  FakeOptInApi api;
  api.namespaces["shop"] = {{"Deployment", "web"}, {"Deployment", "api"}};
  ScalerStore store;
  store.upsert(made("shop", "StatefulSet", "old"));  // would be deleted: its workload is gone
  int asked = 0;
  // Leading for the first write only: the pass's reads are stale by the second.
  NamespaceOptIn opt_in(api, api, store, [&asked] { return ++asked == 1; });
  OptInStats stats = opt_in.run_once();
  CHECK(stats.lost_leadership);
  CHECK(asked == 2);
  CHECK(api.created.size() == 1);
  CHECK(api.deleted.empty());
}
