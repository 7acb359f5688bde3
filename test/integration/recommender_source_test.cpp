// The recommender's I/O against the real full cluster (kube-controller-manager, kwok nodes,
// metrics-server): MetricsSource reads a Deployment's 3 pods and their PodMetrics (kwok usage
// annotations 300m / 400Mi) and leaves out a canary whose pods match the same selector; a few
// passes folded into a ScalerHistory give a target within 10 % of 345m / 460Mi; a 404 or a 503
// from the metrics API is MetricsUnavailable (NoMetrics), not a failure; CheckpointStore writes and
// reads back a checkpoint that restores the same recommendation (alone, or with the namespace's
// in one list), and ignores one that does not parse or whose owner is another scaler. A pass
// sharing the namespace reads the same pods from namespace-wide lists. The largest node comes from
// a node list read page by page. Runs on the full plane
// (FULL_PLANE_INTEGRATION in test/run.sh).
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "kube_support.h"
#include "recommender/checkpoint_store.h"
#include "recommender/metrics_source.h"
#include "recommender/recommender_api.h"
#include "recommender/scaler_history.h"

using namespace kube_test;
using namespace vscaler::recommender;
namespace kube = vscaler::kube;

namespace {

constexpr double kMi = 1024.0 * 1024.0;

// The CRD exactly as manifests/crd/verticalscalercheckpoints.yaml declares it.
json checkpoint_crd() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "verticalscalercheckpoints.scaling.vscaler.dev"},
    "spec": {"group": "scaling.vscaler.dev", "scope": "Namespaced",
             "names": {"plural": "verticalscalercheckpoints",
                       "singular": "verticalscalercheckpoint",
                       "kind": "VerticalScalerCheckpoint",
                       "listKind": "VerticalScalerCheckpointList", "shortNames": ["vscc"]},
             "versions": [{"name": "v1beta1", "served": true, "storage": true,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                             "spec": {"type": "object",
                                      "x-kubernetes-preserve-unknown-fields": true}}}}}]}})");
}

// A Deployment of `replicas` pods labelled `labels`, one container "app" (100m / 128Mi
// requested) that kwok reports as using `cpu` / `memory`.
json deployment(const std::string& name, int replicas, const json& labels, const std::string& cpu,
                const std::string& memory) {
  json container = {{"name", "app"},
                    {"image", "registry.k8s.io/pause:3.10"},
                    {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}};
  return json{{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", name}}},
              {"spec",
               {{"replicas", replicas},
                {"selector", {{"matchLabels", labels}}},
                {"template",
                 {{"metadata",
                   {{"labels", labels},
                    {"annotations",
                     {{"kwok.x-k8s.io/usage-cpu", cpu}, {"kwok.x-k8s.io/usage-memory", memory}}}}},
                  {"spec", {{"containers", json::array({container})}}}}}}}};
}

json scaler(const std::string& name) {
  return json{
      {"apiVersion", "scaling.vscaler.dev/v1beta1"},
      {"kind", "VerticalScaler"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"deploymentName", "web"},
        {"containers", json::array({{{"name", "app"}, {"requests", {{"cpu", "100m"}}}}})}}}};
}

std::string uid_of(const json& object) {
  return object.at("metadata").at("uid").get<std::string>();
}

// Waits (sleeping `period` between tries, never spinning) until `condition` holds.
bool wait_for(const std::function<bool()>& condition, std::chrono::seconds timeout,
              std::chrono::milliseconds period = std::chrono::milliseconds(1000)) {
  auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(period);
  }
  return true;
}

const PodUsage* metrics_of(const ScalerInputs& inputs, const std::string& pod) {
  for (const auto& usage : inputs.metrics) {
    if (usage.name == pod) return &usage;
  }
  return nullptr;
}

// True when every owned pod has a PodMetrics sample newer than its sample in `before`
// (metrics-server scrapes node by node: one pod's newer sample says nothing about another's).
bool all_newer(const ScalerInputs& inputs, const ScalerInputs& before) {
  for (const auto& pod : inputs.owned_pods) {
    const PodUsage* now = metrics_of(inputs, pod.name);
    const PodUsage* then = metrics_of(before, pod.name);
    if (!now || !then || now->timestamp <= then->timestamp) return false;
  }
  return true;
}

// One line per pod: owned or not, and its usage as the metrics API reports it.
std::string describe(const kube::Result<ScalerInputs, SourceError>& read) {
  if (!read.ok()) return read.error().to_string();
  std::string out = "listed " + std::to_string(read->pods_listed) + " pods, owned " +
                    std::to_string(read->owned_pods.size()) + ", metrics for " +
                    std::to_string(read->metrics.size()) + ":";
  for (const auto& usage : read->metrics) {
    out += " " + usage.name;
    for (const auto& c : usage.containers) {
      out += " " + c.name + "=" + std::to_string(c.cpu_cores) + "cores/" +
             std::to_string(c.memory_bytes / kMi) + "Mi";
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the metrics source and the checkpoint store on the full cluster") {
  auto client = admin_client();
  auto crd = client.create(kube::resources::kCustomResourceDefinitions, "", checkpoint_crd());
  REQUIRE_MESSAGE((crd.ok() || kube::is_already_exists(crd.error())),
                  (crd.ok() ? "" : crd.error().to_string()));
  kubectl("apply -f '" + std::string(VSCALER_SOURCE_DIR) +
          "/manifests/crd/verticalscalers.yaml' >/dev/null");
  TestNamespace ns(client, "rec-it");

  // The target (3 pods at 300m / 400Mi) and a canary whose pods match the target's selector.
  auto web = client.create(kube::resources::kDeployments, ns.name,
                           deployment("web", 3, {{"app", "web"}}, "300m", "400Mi"));
  REQUIRE_MESSAGE(web.ok(), (web.ok() ? "" : web.error().to_string()));
  auto canary = client.create(
      kube::resources::kDeployments, ns.name,
      deployment("web-canary", 1, {{"app", "web"}, {"track", "canary"}}, "900m", "900Mi"));
  REQUIRE_MESSAGE(canary.ok(), (canary.ok() ? "" : canary.error().to_string()));

  MetricsSource source(client);
  const TargetWorkload target{ns.name, "Deployment", "web"};

  // 1. Within a bounded wait: 3 owned pods of 4 listed, and PodMetrics at the declared usage for
  //    every owned pod and for the canary (so the owner chain, not the selector, keeps it out).
  std::optional<kube::Result<ScalerInputs, SourceError>> last;
  auto start = Clock::now();
  bool ready = wait_for(
      [&] {
        last.emplace(source.read(target));
        const auto& read = *last;
        if (!read.ok() || read->owned_pods.size() != 3 || read->pods_listed != 4) return false;
        if (read->metrics.size() != 4) return false;
        for (const auto& pod : read->owned_pods) {
          const PodUsage* usage = metrics_of(*read, pod.name);
          if (!usage || usage->containers.size() != 1) return false;
          const auto& c = usage->containers[0];
          if (std::abs(c.cpu_cores - 0.3) > 0.015 || c.memory_bytes != 400 * kMi) return false;
        }
        return true;
      },
      std::chrono::seconds(100));
  REQUIRE_MESSAGE(ready, "after " << seconds_since(start) << " s: " << describe(*last));
  MESSAGE("pods and metrics ready after " << seconds_since(start) << " s");
  // 1b. A pass that shares the namespace (PassReads): the same pods from one namespace-wide
  //     list of each kind, each scaler's selector matched here, and only the owned pods' metrics;
  //     the workloads from one list of the kind: the pass's second read costs nothing, and a
  //     workload not in that list is NotFound.
  {
    PassReads pass({ns.name});
    auto shared = source.read(target, &pass);
    REQUIRE_MESSAGE(shared.ok(), describe(shared));
    CHECK(shared->owned_pods.size() == 3);
    CHECK(shared->pods_listed == 4);
    CHECK(shared->metrics.size() == 3);
    CHECK(shared->requests == 5);  // list deployments, then the namespace's four lists
    CHECK(shared->workload.ref.uid == uid_of(*web));
    CHECK(shared->workload.selector == "app=web");
    auto canary_read = source.read(TargetWorkload{ns.name, "Deployment", "web-canary"}, &pass);
    REQUIRE_MESSAGE(canary_read.ok(), describe(canary_read));
    CHECK(canary_read->owned_pods.size() == 1);
    CHECK(canary_read->pods_listed == 1);  // app=web,track=canary
    CHECK(canary_read->metrics.size() == 1);
    CHECK(canary_read->requests == 0);  // everything from the pass's lists
    auto missing = source.read(TargetWorkload{ns.name, "Deployment", "not-there"}, &pass);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().kind == SourceErrorKind::kWorkloadNotFound);
    auto statefulset = source.read(TargetWorkload{ns.name, "StatefulSet", "web"}, &pass);
    REQUIRE_FALSE(statefulset.ok());  // a kind of its own list: no StatefulSet web here
    CHECK(statefulset.error().kind == SourceErrorKind::kWorkloadNotFound);
  }
  ScalerInputs inputs = std::move(*last).value();
  CHECK(inputs.workload.ref.uid == uid_of(*web));
  CHECK(inputs.workload.selector == "app=web");
  CHECK_FALSE(inputs.metrics_error.has_value());
  CHECK(inputs.skipped.empty());
  CHECK_FALSE(inputs.limit_range.has_value());
  CHECK(inputs.requests == 5);  // GET deployment, pods, replicasets, PodMetrics, limitranges
  for (const auto& pod : inputs.owned_pods) {
    CHECK(pod.name.rfind("web-canary-", 0) != 0);
    REQUIRE(pod.containers.size() == 1);
    CHECK(pod.containers[0].requests.at("cpu").to_double() == doctest::Approx(0.1));
  }

  // 2. Passes: the first adds 3 samples; the next, once every pod has a newer sample, adds
  //    3 more; a pass over the same timestamps adds none (a sample not newer than the last is
  //    skipped).
  AggregateOptions aggregate_options;
  ScalerHistory history;
  auto first = history.fold(inputs.metrics, inputs.owned_pods, aggregate_options);
  CHECK(first.pods == 3);
  CHECK(first.pods_with_metrics == 3);
  CHECK(first.samples_added == 3);
  const ScalerInputs first_inputs = inputs;
  bool newer = wait_for(
      [&] {
        auto read = source.read(target);
        if (!read.ok() || read->owned_pods.size() != 3 || !all_newer(*read, first_inputs)) {
          return false;
        }
        inputs = std::move(read).value();
        return true;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(2000));
  REQUIRE_MESSAGE(newer, "metrics-server published no newer sample of every pod within 60 s");
  auto second = history.fold(inputs.metrics, inputs.owned_pods, aggregate_options);
  CHECK(second.samples_added == 3);
  auto again = history.fold(inputs.metrics, inputs.owned_pods, aggregate_options);
  CHECK(again.samples_added == 0);
  CHECK(again.samples_stale == second.samples_added);
  CHECK(history.reason() == ProvidedReason::kRecommended);

  RecommendationOptions recommendation_options;
  auto recommendations = history.recommendations(aggregate_options, recommendation_options);
  REQUIRE(recommendations.size() == 1);
  CHECK(recommendations[0].container_name == "app");
  const double cpu = recommendations[0].target.at("cpu").to_double();
  const double memory = recommendations[0].target.at("memory").to_double();
  MESSAGE("target " << cpu << " cores, " << memory / kMi << " Mi");
  CHECK(cpu == doctest::Approx(0.345).epsilon(0.10));
  CHECK(memory == doctest::Approx(460 * kMi).epsilon(0.10));

  // 3. A metrics API nobody serves (a real 404 from the API server): MetricsUnavailable, the pods
  //    are still read, and a pass over them says NoMetrics.
  MetricsSourceOptions absent_metrics;
  absent_metrics.pod_metrics = {"metrics.k8s.io", "v1alpha9", "pods", true};
  auto unavailable = MetricsSource(client, absent_metrics).read(target);
  REQUIRE_MESSAGE(unavailable.ok(), (unavailable.ok() ? "" : unavailable.error().to_string()));
  REQUIRE(unavailable->metrics_error.has_value());
  CHECK(unavailable->metrics_error->kind == SourceErrorKind::kMetricsUnavailable);
  REQUIRE(unavailable->metrics_error->api.has_value());
  CHECK(unavailable->metrics_error->api->code == 404);
  CHECK(unavailable->owned_pods.size() == 3);
  CHECK(unavailable->metrics.empty());
  ScalerHistory blind;
  (void)blind.fold(unavailable->metrics, unavailable->owned_pods, aggregate_options);
  CHECK(blind.reason() == ProvidedReason::kNoMetrics);

  // ... and one registered but unreachable (an APIService whose Service leads nowhere: the
  // aggregator's real 503) is MetricsUnavailable too.
  const std::string down_group = ns.name + ".vscaler.dev";
  const kube::ResourceType services{"", "v1", "services", true};
  const kube::ResourceType api_services{"apiregistration.k8s.io", "v1", "apiservices", false};
  auto service = client.create(
      services, ns.name,
      json{{"apiVersion", "v1"},
           {"kind", "Service"},
           {"metadata", {{"name", "down-metrics"}}},
           {"spec",
            {{"type", "ExternalName"},
             {"externalName", "localhost"},
             {"ports", json::array({{{"name", "https"}, {"port", 1}, {"protocol", "TCP"}}})}}}});
  REQUIRE_MESSAGE(service.ok(), (service.ok() ? "" : service.error().to_string()));
  auto api_service = client.create(
      api_services, "",
      json{{"apiVersion", "apiregistration.k8s.io/v1"},
           {"kind", "APIService"},
           {"metadata", {{"name", "v1beta1." + down_group}}},
           {"spec",
            {{"group", down_group},
             {"version", "v1beta1"},
             {"service", {{"namespace", ns.name}, {"name", "down-metrics"}, {"port", 1}}},
             {"insecureSkipTLSVerify", true},
             {"groupPriorityMinimum", 100},
             {"versionPriority", 10}}}});
  REQUIRE_MESSAGE(api_service.ok(), (api_service.ok() ? "" : api_service.error().to_string()));
  struct RemoveApiService {
    kube::Client client;
    kube::ResourceType type;
    std::string name;
    ~RemoveApiService() { (void)client.remove(type, "", name); }
  } remove_api_service{client, api_services, "v1beta1." + down_group};
  MetricsSourceOptions down_metrics;
  down_metrics.pod_metrics = {down_group, "v1beta1", "pods", true};
  std::optional<kube::Result<ScalerInputs, SourceError>> down;
  bool got_503 = wait_for(
      [&] {
        down.emplace(MetricsSource(client, down_metrics).read(target));
        return down->ok() && (*down)->metrics_error && (*down)->metrics_error->api &&
               (*down)->metrics_error->api->code == 503;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(500));
  REQUIRE_MESSAGE(got_503, "no 503 from an unreachable APIService: "
                               << (!down->ok()              ? down->error().to_string()
                                   : (*down)->metrics_error ? (*down)->metrics_error->to_string()
                                                            : "metrics read"));
  CHECK((*down)->metrics_error->kind == SourceErrorKind::kMetricsUnavailable);
  CHECK((*down)->owned_pods.size() == 3);

  auto missing = source.read({ns.name, "Deployment", "absent"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == SourceErrorKind::kWorkloadNotFound);
  auto unsupported = source.read({ns.name, "ReplicaSet", "web"});
  REQUIRE_FALSE(unsupported.ok());
  CHECK(unsupported.error().kind == SourceErrorKind::kUnsupportedKind);

  // 4. Checkpoints: written (created, then updated with the version read), read back, restored to
  //    the same recommendation; owned by the scaler without controller or blockOwnerDeletion.
  auto scaler_web = client.create(kube::resources::kVerticalScalers, ns.name, scaler("web"));
  REQUIRE_MESSAGE(scaler_web.ok(), (scaler_web.ok() ? "" : scaler_web.error().to_string()));
  auto scaler_other = client.create(kube::resources::kVerticalScalers, ns.name, scaler("other"));
  REQUIRE_MESSAGE(scaler_other.ok(), (scaler_other.ok() ? "" : scaler_other.error().to_string()));
  const ScalerId web_id{ns.name, "web", uid_of(*scaler_web)};

  CheckpointStore store(client);
  bool served = wait_for([&] { return client.list(kVerticalScalerCheckpoints, ns.name).ok(); },
                         std::chrono::seconds(30), std::chrono::milliseconds(200));
  REQUIRE_MESSAGE(served, "verticalscalercheckpoints were not served within 30 s");
  auto absent = store.load(web_id, aggregate_options);
  REQUIRE_MESSAGE(absent.ok(), (absent.ok() ? "" : absent.error().to_string()));
  CHECK_FALSE(absent->found);

  auto created = store.save(web_id, history);
  REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().to_string()));
  CHECK(*created == SaveOutcome::kCreated);
  auto updated = store.save(web_id, history);
  REQUIRE_MESSAGE(updated.ok(), (updated.ok() ? "" : updated.error().to_string()));
  CHECK(*updated == SaveOutcome::kUpdated);
  CheckpointStore fresh_store(client);  // knows no resourceVersion: reads it first
  auto updated_fresh = fresh_store.save(web_id, history);
  REQUIRE_MESSAGE(updated_fresh.ok(),
                  (updated_fresh.ok() ? "" : updated_fresh.error().to_string()));
  CHECK(*updated_fresh == SaveOutcome::kUpdated);
  auto stale = store.save(web_id, history);  // its version is stale now: one re-read
  REQUIRE_MESSAGE(stale.ok(), (stale.ok() ? "" : stale.error().to_string()));
  CHECK(*stale == SaveOutcome::kUpdated);
  // Another writer (a new leader) changes the checkpoint (an annotation: a save of the same
  // history within the same second would be a no-op the API server does not version); a store
  // that lost its lease during its own write leaves it as it is, and a leading one re-reads and
  // writes.
  auto other = client.get(kVerticalScalerCheckpoints, ns.name, "web");
  REQUIRE(other.ok());
  nlohmann::json changed = *other;
  changed["metadata"]["annotations"]["test.vscaler.dev/written-by"] = "another-leader";
  auto other_write = client.update(kVerticalScalerCheckpoints, changed, kube::WriteOptions{});
  REQUIRE_MESSAGE(other_write.ok(), (other_write.ok() ? "" : other_write.error().to_string()));
  auto before_fenced = client.get(kVerticalScalerCheckpoints, ns.name, "web");
  REQUIRE(before_fenced.ok());
  auto fenced = store.save(web_id, history, "vscaler", [] { return false; });
  CHECK_FALSE(fenced.ok());
  auto after_fenced = client.get(kVerticalScalerCheckpoints, ns.name, "web");
  REQUIRE(after_fenced.ok());
  CHECK(after_fenced->at("metadata").at("resourceVersion") ==
        before_fenced->at("metadata").at("resourceVersion"));
  auto leading = store.save(web_id, history, "vscaler", [] { return true; });
  REQUIRE_MESSAGE(leading.ok(), (leading.ok() ? "" : leading.error().to_string()));

  auto stored = client.get(kVerticalScalerCheckpoints, ns.name, "web");
  REQUIRE(stored.ok());
  const auto& refs = stored->at("metadata").at("ownerReferences");
  REQUIRE(refs.size() == 1);
  CHECK(refs[0].at("kind") == "VerticalScaler");
  CHECK(refs[0].at("uid") == web_id.uid);
  CHECK_FALSE(refs[0].contains("controller"));
  CHECK_FALSE(refs[0].contains("blockOwnerDeletion"));

  auto loaded = store.load(web_id, aggregate_options);
  REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error().to_string()));
  CHECK(loaded->found);
  CHECK(loaded->ignored.empty());
  REQUIRE(loaded->history.has_value());
  CHECK(loaded->history->recommendations(aggregate_options, recommendation_options) ==
        recommendations);
  // 4b. The namespace's checkpoints in one list (a pass restoring a shared namespace): web's is
  //     restored alike; "other" has none (absent from the answer); a checkpoint asked for under
  //     another uid is found and ignored, as load() does.
  auto listed = fresh_store.load_namespace(
      ns.name, {{"web", web_id.uid}, {"other", uid_of(*scaler_other)}}, aggregate_options);
  REQUIRE_MESSAGE(listed.ok(), (listed.ok() ? "" : listed.error().to_string()));
  CHECK(listed->requests == 1);
  CHECK(listed->by_name.size() == 1);
  REQUIRE(listed->by_name.count("web") == 1);
  REQUIRE(listed->by_name.at("web").history.has_value());
  CHECK(listed->by_name.at("web").history->recommendations(
            aggregate_options, recommendation_options) == recommendations);
  auto foreign = fresh_store.load_namespace(ns.name, {{"web", "not-web-uid"}}, aggregate_options);
  REQUIRE_MESSAGE(foreign.ok(), (foreign.ok() ? "" : foreign.error().to_string()));
  REQUIRE(foreign->by_name.count("web") == 1);
  CHECK_FALSE(foreign->by_name.at("web").history.has_value());
  CHECK(foreign->by_name.at("web").ignored.find("ownerReferences") != std::string::npos);
  // The version the list gave is the store's precondition: the next save is one update.
  auto after_list = fresh_store.save(web_id, history);
  REQUIRE_MESSAGE(after_list.ok(), (after_list.ok() ? "" : after_list.error().to_string()));
  CHECK(*after_list == SaveOutcome::kUpdated);

  // 5. A checkpoint named like the scaler but owned by another (existing) scaler is ignored. It
  //    names its real owner: an ownerReference to "web" with a stale uid would be garbage-collected
  //    under the test's feet.
  auto replace_checkpoint = [&](const std::string& owner_name, const std::string& owner_uid,
                                const json& spec) {
    auto current = client.get(kVerticalScalerCheckpoints, ns.name, "web");
    REQUIRE_MESSAGE(current.ok(), (current.ok() ? "" : current.error().to_string()));
    json object = history.checkpoint(ns.name, "web", owner_uid);
    object["metadata"]["ownerReferences"][0]["name"] = owner_name;
    object["metadata"]["resourceVersion"] = current->at("metadata").at("resourceVersion");
    if (!spec.is_null()) object["spec"] = spec;
    auto written = client.update(kVerticalScalerCheckpoints, object);
    REQUIRE_MESSAGE(written.ok(), (written.ok() ? "" : written.error().to_string()));
  };
  replace_checkpoint("other", uid_of(*scaler_other), nullptr);
  auto ignored = store.load(web_id, aggregate_options);
  REQUIRE_MESSAGE(ignored.ok(), (ignored.ok() ? "" : ignored.error().to_string()));
  CHECK(ignored->found);
  CHECK_FALSE(ignored->history.has_value());
  CHECK(ignored->ignored.find("ownerReferences") != std::string::npos);
  MESSAGE("ignored: " << ignored->ignored);

  // 6. One of the right owner that does not parse is ignored too, naming what is wrong.
  replace_checkpoint("web", web_id.uid, {{"version", 99}, {"containers", "none"}});
  auto unparsed = store.load(web_id, aggregate_options);
  REQUIRE_MESSAGE(unparsed.ok(), (unparsed.ok() ? "" : unparsed.error().to_string()));
  CHECK(unparsed->found);
  CHECK_FALSE(unparsed->history.has_value());
  CHECK(unparsed->ignored.find("spec") != std::string::npos);
  MESSAGE("ignored: " << unparsed->ignored);
  // 6b. One holding an integer beyond 64 bits (spec keeps unknown fields; the API server writes a
  //     float64 of 1e20 in plain digits, which simdjson refuses): the namespace's list still
  //     loads, and that checkpoint alone is ignored.
  replace_checkpoint("web", web_id.uid, {{"version", 99}, {"containers", "none"}, {"big", 1e20}});
  auto with_big = fresh_store.load_namespace(ns.name, {{"web", web_id.uid}}, aggregate_options);
  REQUIRE_MESSAGE(with_big.ok(), (with_big.ok() ? "" : with_big.error().to_string()));
  REQUIRE(with_big->by_name.count("web") == 1);
  CHECK_FALSE(with_big->by_name.at("web").history.has_value());
  CHECK(with_big->by_name.at("web").ignored.find("spec") != std::string::npos);

  // 7. The store writes over either with the scaler's own checkpoint (it updates with the
  //    version it just read), which restores again.
  auto rewritten = store.save(web_id, history);
  REQUIRE_MESSAGE(rewritten.ok(), (rewritten.ok() ? "" : rewritten.error().to_string()));
  CHECK(*rewritten == SaveOutcome::kUpdated);
  auto restored = store.load(web_id, aggregate_options);
  REQUIRE_MESSAGE(restored.ok(), (restored.ok() ? "" : restored.error().to_string()));
  REQUIRE(restored->history.has_value());
  CHECK(restored->history->recommendations(aggregate_options, recommendation_options) ==
        recommendations);
}

TEST_CASE("the largest node is read from a paged node list, every page of it") {
  // With resourceVersion=0 the API server would answer every node at once whatever the limit: a
  // page of one node per request shows the list really pages (kwok's nodes are alike, so the
  // largest is any node's allocatable).
  auto client = admin_client();
  auto nodes = client.list(kube::resources::kNodes, "", kube::ListOptions{});
  REQUIRE_MESSAGE(nodes.ok(), (nodes.ok() ? "" : nodes.error().to_string()));
  const std::size_t count = nodes->items.size();
  REQUIRE(count >= 2);
  KubeRecommenderApi api(client, {}, 1);
  const auto before = client.transport().stats().requests;
  auto largest = api.largest_node();
  REQUIRE_MESSAGE(largest.ok(), (largest.ok() ? "" : largest.error().to_string()));
  CHECK(client.transport().stats().requests - before == count);
  for (const char* resource : {"cpu", "memory"}) {
    std::optional<kube::Quantity> most;
    for (const auto& node : nodes->items) {
      auto value = kube::Quantity::parse(
          node.at("status").at("allocatable").at(resource).get<std::string>());
      REQUIRE(value.ok());
      if (!most || *most < *value) most = *value;
    }
    REQUIRE(largest->count(resource) == 1);
    CHECK(largest->at(resource) == *most);
  }
}
