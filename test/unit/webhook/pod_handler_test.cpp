// The pod admission hook on a pod CREATE review (test/data/admission/pod-create.json: the review
// the API server sends for a pod the ReplicaSet controller creates, shaped by hand from the
// recorded deployment-create.json's template, since the recorder registers workload hooks only):
// pod -> workload from the pod alone, the in-place modes patched, every other answer "allowed".
#include "webhook/pod_handler.h"

#include <doctest/doctest.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "api/startup_boost.h"
#include "webhook/json_patch.h"

using nlohmann::json;
using namespace vscaler;
using webhook::AdmissionRequest;
using webhook::PodHandler;

namespace {

json recorded_review() {
  std::ifstream in(std::string(VSCALER_TEST_DATA_DIR) + "/admission/pod-create.json");
  REQUIRE(in.good());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return json::parse(buffer.str());
}

AdmissionRequest parse(const json& review) {
  webhook::ParseOptions options;
  options.projection = &PodHandler::projection();
  auto request = webhook::parse_review(review.dump(), options);
  REQUIRE(request.ok());
  return *request;
}

struct Fixture {
  controller::ScalerStore store;
  metrics::Registry registry;
  metrics::CounterFamily& results =
      registry.counter("vscaler_pod_admission_total", "test", {"result"});
  PodHandler handler{store, results};

  void add(const std::string& name, const json& target, const char* mode, const char* containers,
           const char* status = nullptr) {
    json object = {
        {"metadata",
         {{"name", name}, {"namespace", "record"}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
        {"spec", {{"updateMode", mode}, {"containers", json::parse(containers)}}}};
    if (target.is_string()) {
      object["spec"]["deploymentName"] = target;
    } else {
      object["spec"]["targetRef"] = target;
    }
    if (status != nullptr) object["status"] = json::parse(status);
    auto scaler = api::parse_scaler(object);
    REQUIRE(scaler.ok());
    store.upsert(std::make_shared<const api::Scaler>(*scaler));
  }
  double count(const char* result) { return results.with({result}).value(); }
};

/// Whether an answer marks the pod (PodHandler's kAdmittedAnnotation).
enum class Marker { kMarked, kUnmarked };

/// `handler`'s answer to `review`, checked to carry the marker (kAdmittedAnnotation, naming a
/// scaler) or not as `expected` says, with the marker then taken out of the patch so the tests
/// below read the resource operations alone; a patch left empty becomes null.
webhook::AdmissionResponse handled(PodHandler& handler, const json& review,
                                   Marker expected = Marker::kMarked) {
  webhook::AdmissionResponse response = handler.handle(parse(review));
  const std::string key(webhook::kAdmittedAnnotation);
  json rest = json::array();
  std::optional<json> marker;
  if (response.patch.is_array()) {
    for (json& op : response.patch) {
      if (op["path"] == "/metadata/annotations" && op["value"].contains(key)) {
        marker = op["value"][key];
        op["value"].erase(key);
        if (op["value"].empty()) continue;
      } else if (op["path"] == "/metadata/annotations/" + webhook::json_pointer_escape(key)) {
        marker = op["value"];
        continue;
      }
      rest.push_back(std::move(op));
    }
    response.patch = rest.empty() ? json() : std::move(rest);
  }
  if (expected == Marker::kUnmarked) {
    CHECK_FALSE(marker.has_value());
  } else {
    REQUIRE(marker.has_value());
    REQUIRE(marker->is_string());
    CHECK(json::parse(marker->get<std::string>())["scaler"].is_string());
  }
  return response;
}

/// The pod of the review once `patch` is applied (the API server's view of the admitted pod).
json admitted(const json& review, const json& patch) {
  json pod = review["request"]["object"];
  if (patch.is_array()) pod = pod.patch(patch);
  return pod;
}

/// Records the scalers the hook asks to be reconciled.
struct RecordedHints : controller::HintSink {
  std::vector<std::string> keys;
  void hint(std::string_view key, const controller::Expectation&) override {
    keys.emplace_back(key);
  }
};

/// The requests.cpu the namespace "record" has left.
std::string value_left(const controller::QuotaCache& quotas) {
  auto headroom = quotas.headroom("record");
  REQUIRE(headroom.has_value());
  return headroom->requests.at("cpu").to_string();
}

}  // namespace

TEST_CASE("InPlaceOrRecreate and InPlace: a Deployment's new pod gets the fixed values") {
  for (const char* mode : {"InPlaceOrRecreate", "InPlace"}) {
    CAPTURE(mode);
    Fixture f;
    f.add("web", "web", mode, R"([{"name": "app", "requests": {"cpu": "250m"}}])");
    json review = recorded_review();
    auto response = handled(f.handler, review);
    CHECK(response.allowed);
    REQUIRE(response.patch.is_array());
    REQUIRE(response.patch.size() == 1);
    CHECK(response.patch[0]["op"] == "add");
    CHECK(response.patch[0]["path"] == "/spec/containers/0/resources");
    json pod = admitted(review, response.patch);
    // The container's other keys as they were; the sidecar and init container untouched.
    CHECK(pod["spec"]["containers"][0]["resources"] ==
          json::parse(R"({"requests": {"cpu": "250m", "memory": "64Mi"},
                          "limits": {"cpu": "500m", "memory": "128Mi"}})"));
    CHECK(pod["spec"]["containers"][1] == review["request"]["object"]["spec"]["containers"][1]);
    CHECK(pod["spec"]["initContainers"] == review["request"]["object"]["spec"]["initContainers"]);
    CHECK(f.count("patched") == 1);
  }
}

TEST_CASE("a pod review whose object's namespace is not the request's is forged: no patch") {
  Fixture f;
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  json review = recorded_review();
  review["request"]["object"]["metadata"]["namespace"] = "elsewhere";
  auto response = handled(f.handler, review, Marker::kUnmarked);
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  // No namespace in the request (the API server always names a pod's): the object's is not
  // believed either.
  review = recorded_review();
  review["request"]["object"]["metadata"]["namespace"] = review["request"]["namespace"];
  review["request"].erase("namespace");
  response = handled(f.handler, review, Marker::kUnmarked);
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  CHECK(f.count("patched") == 0);
  CHECK(handled(f.handler, recorded_review()).patch.is_array());  // as the API server sends it
}

TEST_CASE("a recommended container gets the recommendation's target, limits in proportion") {
  Fixture f;
  f.add("web", "web", "InPlaceOrRecreate",
        R"([{"name": "app"}, {"name": "sidecar", "mode": "Off"}])",
        R"({"recommendation": {"containerRecommendations": [
          {"containerName": "app", "target": {"cpu": "300m"}, "lowerBound": {"cpu": "250m"},
           "upperBound": {"cpu": "400m"}, "uncappedTarget": {"cpu": "300m"}}]}})");
  auto response = handled(f.handler, recorded_review());
  REQUIRE(response.patch.is_array());
  REQUIRE(response.patch.size() == 1);
  // 100m:500m is 1:5: the target 300m takes the limit to 1500m (controlledValues default).
  CHECK(response.patch[0]["value"] == json::parse(R"({"requests": {"cpu": "300m",
      "memory": "64Mi"}, "limits": {"cpu": "1500m", "memory": "128Mi"}})"));
}

TEST_CASE("a ResourceQuota's headroom caps the recommended values, never below the pod's own") {
  Fixture f;
  controller::QuotaCache quotas;
  RecordedHints hints;
  PodHandler handler{f.store, f.results, nullptr, &quotas, &hints};
  f.add("web", "web", "InPlaceOrRecreate",
        R"([{"name": "app"}, {"name": "sidecar", "mode": "Off"}])",
        R"({"recommendation": {"containerRecommendations": [
          {"containerName": "app", "target": {"cpu": "300m"}, "lowerBound": {"cpu": "250m"},
           "upperBound": {"cpu": "400m"}, "uncappedTarget": {"cpu": "300m"}}]}})");
  auto quota = [](const char* hard, const char* used) {
    return std::make_shared<const json>(json::parse(std::string(R"({"metadata": {"name": "q",
        "namespace": "record"}, "status": {"hard": )") +
                                                    hard + R"(, "used": )" + used + "}}"));
  };
  // requests.cpu: 1 hard, 800m used -> 200m left: the 300m target is capped at 200m; limits.cpu
  // 2 - 500m = 1500m left: the proportional limit of the target (1500m) fits and stays.
  REQUIRE(quotas.rebuild(
              {quota(R"({"requests.cpu": "1", "limits.cpu": "2", "pods": "10"})",
                     R"({"requests.cpu": "800m", "limits.cpu": "500m", "pods": "3"})")}) == 0);
  auto response = handled(handler, recorded_review());
  REQUIRE(response.patch.is_array());
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "200m");
  CHECK(response.patch[0]["value"]["limits"]["cpu"] == "1500m");
  // That pod is reserved against the headroom: the next one has nothing left above its own
  // 100m, so it keeps what it asked for (no patch), and would not fit either way; its scaler is
  // reconciled to resize it once it runs (and room is made).
  auto next = handled(handler, recorded_review());
  CHECK_FALSE(next.patch.is_array());
  CHECK(f.count("unchanged") == 1);
  CHECK(hints.keys.size() == 2);  // both were capped
  // A rebuild (the next list) forgets the reservations.
  REQUIRE(quotas.rebuild({quota(R"({"cpu": "10"})", R"({"cpu": "0"})")}) == 0);
  response = handled(handler, recorded_review());
  REQUIRE(response.patch.is_array());
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "300m");
}

TEST_CASE("a sidecar init container takes its share of the quota headroom from the containers") {
  Fixture f;
  controller::QuotaCache quotas;
  RecordedHints hints;
  PodHandler handler{f.store, f.results, nullptr, &quotas, &hints};
  f.add("web", "web", "InPlace", R"([{"name": "app"}, {"name": "sidecar", "mode": "Off"}])",
        R"({"recommendation": {"containerRecommendations": [
          {"containerName": "app", "target": {"cpu": "300m"}, "lowerBound": {"cpu": "250m"},
           "upperBound": {"cpu": "400m"}, "uncappedTarget": {"cpu": "300m"}}]}})");
  // 300m of requests.cpu left; the pod's sidecar (an init container with restartPolicy Always)
  // runs beside the containers and asks 100m of it: app gets 200m, not the 300m target.
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(R"({"metadata": {"name": "q",
      "namespace": "record"}, "status": {"hard": {"requests.cpu": "1"},
      "used": {"requests.cpu": "700m"}}})"))}) == 0);
  json review = recorded_review();
  json& init = review["request"]["object"]["spec"]["initContainers"][0];
  init["restartPolicy"] = "Always";
  init["resources"] = {{"requests", {{"cpu", "100m"}}}};
  auto response = handled(handler, review);
  REQUIRE(response.patch.is_array());
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "200m");
  // A regular init container runs before them, alone: it takes nothing from their share.
  init.erase("restartPolicy");
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(R"({"metadata": {"name": "q",
      "namespace": "record"}, "status": {"hard": {"requests.cpu": "1"},
      "used": {"requests.cpu": "700m"}}})"))}) == 0);
  response = handled(handler, review);
  REQUIRE(response.patch.is_array());
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "300m");
}

TEST_CASE("fixed values the ResourceQuota cannot hold: no patch, a warning; the pod is created") {
  Fixture f;
  controller::QuotaCache quotas;
  RecordedHints hints;
  PodHandler handler{f.store, f.results, nullptr, &quotas, &hints};
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "400m"}}])");
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(
              R"({"metadata": {"name": "q", "namespace": "record"},
                  "status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "700m"}}})"))}) ==
          0);
  auto response = handled(handler, recorded_review());
  CHECK(response.allowed);
  CHECK_FALSE(response.patch.is_array());
  REQUIRE(response.warnings.size() == 1);
  CHECK(
      response.warnings[0] ==
      "vscaler: VerticalScaler web not applied to this pod: the namespace's ResourceQuota has room "
      "for less: requests.cpu 400m above the 300m left");
  // The pod as created (100m) is reserved: 200m left, still not enough for 400m. Its scaler is
  // reconciled, to resize the pod once it runs (and room is made).
  CHECK(value_left(quotas) == "200m");
  CHECK(hints.keys == std::vector<std::string>{"record/web"});
  // Room for it: patched.
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(
              R"({"metadata": {"name": "q", "namespace": "record"},
                  "status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "500m"}}})"))}) ==
          0);
  response = handled(handler, recorded_review());
  REQUIRE(response.patch.is_array());
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "400m");
  CHECK(value_left(quotas) == "100m");
  CHECK(hints.keys.size() == 1);  // a pod given its values needs nothing later
}

TEST_CASE("every pod sized is marked; a re-invoked call for it counts only what it grew by") {
  Fixture f;
  controller::QuotaCache quotas;
  PodHandler handler{f.store, f.results, nullptr, &quotas};
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "400m"}}])");
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(
              R"({"metadata": {"name": "q", "namespace": "record"},
                  "status": {"hard": {"requests.cpu": "2"}}})"))}) == 0);
  const std::string key(webhook::kAdmittedAnnotation);
  json review = recorded_review();
  auto first = handler.handle(parse(review));
  REQUIRE(first.patch.is_array());
  json pod = admitted(review, first.patch);
  CHECK(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "400m");
  // The scaler, and the pod's totals as counted against the quota.
  json marker = json::parse(pod["metadata"]["annotations"][key].get<std::string>());
  CHECK(marker["scaler"] == "web");
  CHECK(marker["requests"]["cpu"] == "400m");
  CHECK(value_left(quotas) == "1600m");
  CHECK(f.count("patched") == 1);
  // A later webhook (a sidecar injector) changed the pod, so the API server calls the hook again
  // with a new uid: nothing of ours to change, and nothing counted again...
  json again = review;
  again["request"]["uid"] = "another-uid";
  pod["metadata"]["annotations"]["sidecar.istio.io/status"] = "{}";
  again["request"]["object"] = pod;
  auto second = handler.handle(parse(again));
  CHECK(second.patch.is_null());
  CHECK(value_left(quotas) == "1600m");
  CHECK(f.count("patched") == 1);
  CHECK(f.count("unchanged") == 0);
  // ...but what it added is: a proxy of 150m is counted, and the marker says so.
  pod["spec"]["containers"].push_back(
      {{"name", "istio-proxy"}, {"resources", {{"requests", {{"cpu", "150m"}}}}}});
  again["request"]["object"] = pod;
  auto third = handler.handle(parse(again));
  REQUIRE(third.patch.is_array());
  REQUIRE(third.patch.size() == 1);
  CHECK(third.patch[0]["path"] == "/metadata/annotations/" + webhook::json_pointer_escape(key));
  CHECK(json::parse(third.patch[0]["value"].get<std::string>())["requests"]["cpu"] == "550m");
  CHECK(value_left(quotas) == "1450m");
  // Had that webhook changed our values, they are set again; the pod's growth alone is counted.
  pod = admitted(again, third.patch);
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m";
  again["request"]["object"] = pod;
  auto fourth = handler.handle(parse(again));
  REQUIRE(fourth.patch.is_array());
  CHECK(fourth.patch[0]["value"]["requests"]["cpu"] == "400m");
  // The pod now has less than its marker says, which a copied or forged marker would too: it is
  // not believed, and the pod is counted whole again (the cautious side) and marked anew.
  CHECK(value_left(quotas) == "900m");
  CHECK(fourth.patch.back()["path"] ==
        "/metadata/annotations/" + webhook::json_pointer_escape(key));
  // So is a marker that does not read, or another scaler's.
  pod = admitted(again, fourth.patch);
  for (const char* forged : {"web", R"({"scaler": "other", "requests": {"cpu": "550m"}})"}) {
    CAPTURE(forged);
    pod["metadata"]["annotations"][key] = forged;
    again["request"]["object"] = pod;
    const std::string before = value_left(quotas);
    auto answer = handler.handle(parse(again));
    CHECK(kube::Quantity::parse(before).value().nanos() -
              kube::Quantity::parse(value_left(quotas)).value().nanos() ==
          kube::Quantity::parse("550m").value().nanos());
    CHECK(answer.patch.back()["path"] ==
          "/metadata/annotations/" + webhook::json_pointer_escape(key));
    REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(
                R"({"metadata": {"name": "q", "namespace": "record"},
                    "status": {"hard": {"requests.cpu": "2"}}})"))}) == 0);
  }
}

TEST_CASE("a pod that needs no change is counted and marked too; a boosted one in one operation") {
  Fixture f;
  controller::QuotaCache quotas;
  PodHandler handler{f.store, f.results, nullptr, &quotas};
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(
              R"({"metadata": {"name": "q", "namespace": "record"},
                  "status": {"hard": {"requests.cpu": "2"}}})"))}) == 0);
  json review = recorded_review();
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "100m"}}])");
  auto unchanged = handler.handle(parse(review));
  REQUIRE(unchanged.patch.is_array());
  REQUIRE(unchanged.patch.size() == 1);
  CHECK(unchanged.patch[0]["path"] == "/metadata/annotations");
  CHECK(value_left(quotas) == "1900m");
  CHECK(f.count("unchanged") == 1);
  // A boosted pod without annotations gets both in one operation (a second "add" of
  // /metadata/annotations would replace the first).
  f.store.upsert(std::make_shared<const api::Scaler>(*api::parse_scaler(json::parse(R"({
      "metadata": {"name": "web", "namespace": "record", "creationTimestamp": "2026-01-01T00:00:00Z"},
      "spec": {"deploymentName": "web", "updateMode": "InPlace",
        "startupBoost": {"cpu": {"type": "Factor", "factor": 2, "durationSeconds": 60}},
        "containers": [{"name": "app", "requests": {"cpu": "200m"}}]}})"))));
  auto boosted = handler.handle(parse(review));
  REQUIRE(boosted.patch.is_array());
  json pod = admitted(review, boosted.patch);
  CHECK(pod["metadata"]["annotations"].contains(webhook::kAdmittedAnnotation));
  CHECK(api::has_boost_annotation(pod));
  CHECK(value_left(quotas) == "1500m");  // boosted to 400m
  // Called again once a proxy of 150m was injected: not boosted again, the proxy counted.
  pod["spec"]["containers"].push_back(
      {{"name", "istio-proxy"}, {"resources", {{"requests", {{"cpu", "150m"}}}}}});
  json again = review;
  again["request"]["object"] = pod;
  auto second = handler.handle(parse(again));
  REQUIRE(second.patch.is_array());
  CHECK(second.patch.size() == 1);  // the marker, updated
  CHECK(value_left(quotas) == "1350m");
}

TEST_CASE("the other modes leave the pod as its template made it") {
  for (const char* mode : {"Auto", "Reconcile", "Initial", "Off"}) {
    CAPTURE(mode);
    Fixture f;
    f.add("web", "web", mode, R"([{"name": "app", "requests": {"cpu": "250m"}}])");
    auto response = handled(f.handler, recorded_review(), Marker::kUnmarked);
    CHECK(response.allowed);
    CHECK(response.patch.is_null());
    CHECK(f.count("unchanged") == 1);
  }
}

TEST_CASE("values the pod already carries give no patch") {
  Fixture f;
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "0.1"}}])");
  auto response = handled(f.handler, recorded_review());
  CHECK(response.patch.is_null());
  CHECK(f.count("unchanged") == 1);
}

TEST_CASE("StatefulSet and DaemonSet owners name the workload directly") {
  for (const char* kind : {"StatefulSet", "DaemonSet"}) {
    CAPTURE(kind);
    Fixture f;
    f.add("db", json{{"apiVersion", "apps/v1"}, {"kind", kind}, {"name", "db"}}, "InPlace",
          R"([{"name": "app", "requests": {"memory": "96Mi"}}])");
    json review = recorded_review();
    json& owner = review["request"]["object"]["metadata"]["ownerReferences"][0];
    owner["kind"] = kind;
    owner["name"] = "db";
    auto response = handled(f.handler, review);
    REQUIRE(response.patch.is_array());
    CHECK(response.patch[0]["value"]["requests"]["memory"] == "96Mi");
  }
}

TEST_CASE("pods no scaler can be found for are allowed untouched and counted no_scaler") {
  Fixture f;
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  auto with = [](auto change) {
    json review = recorded_review();
    change(review["request"]["object"]["metadata"]);
    return review;
  };
  const std::vector<std::pair<const char*, json>> cases = {
      // The owner's name does not end in the pod's pod-template-hash: not a Deployment's.
      {"hash mismatch", with([](json& m) { m["labels"]["pod-template-hash"] = "other"; })},
      {"no hash label", with([](json& m) { m["labels"].erase("pod-template-hash"); })},
      {"a Job's pod", with([](json& m) { m["ownerReferences"][0]["kind"] = "Job"; })},
      {"another API group's ReplicaSet",
       with([](json& m) { m["ownerReferences"][0]["apiVersion"] = "example.com/v1"; })},
      {"not the controller", with([](json& m) { m["ownerReferences"][0]["controller"] = false; })},
      {"no owner", with([](json& m) { m.erase("ownerReferences"); })},
      {"owner of the wrong type", with([](json& m) { m["ownerReferences"] = "web"; })},
      {"another Deployment",
       with([](json& m) { m["ownerReferences"][0]["name"] = "api-5d8f7c9b6d"; })},
  };
  for (const auto& [name, review] : cases) {
    CAPTURE(name);
    auto response = handled(f.handler, review, Marker::kUnmarked);
    CHECK(response.allowed);
    CHECK(response.patch.is_null());
  }
  CHECK(f.count("no_scaler") == doctest::Approx(cases.size()));
}

TEST_CASE("a review that is not a pod CREATE is allowed untouched") {
  Fixture f;
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  json review = recorded_review();
  review["request"]["resource"]["resource"] = "deployments";
  review["request"]["resource"]["group"] = "apps";
  CHECK(handled(f.handler, review, Marker::kUnmarked).patch.is_null());
  review = recorded_review();
  review["request"]["subResource"] = "resize";
  CHECK(handled(f.handler, review, Marker::kUnmarked).patch.is_null());
  review = recorded_review();
  review["request"]["operation"] = "UPDATE";
  review["request"]["oldObject"] = review["request"]["object"];
  CHECK(handled(f.handler, review, Marker::kUnmarked).patch.is_null());
}

TEST_CASE("a value above a limit the scaler does not set: no patch, a warning naming it") {
  Fixture f;
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "2"}}])");
  auto response = handled(f.handler, recorded_review());
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0] ==
        "vscaler: VerticalScaler web not applied to this pod: container app: requests.cpu 2 would "
        "exceed limits.cpu 500m");
}

TEST_CASE("pod-level resources: raised in the same patch when the containers outgrow them") {
  Fixture f;
  f.add("web", "web", "InPlace", R"([{"name": "app", "requests": {"cpu": "400m"}}])");
  json review = recorded_review();
  json& spec = review["request"]["object"]["spec"];
  spec["resources"] = {{"requests", {{"cpu", "300m"}}}, {"limits", {{"cpu", "1"}}}};
  // A sidecar (restartable init container) counts in the total: 400m + 50m > 300m.
  spec["initContainers"][0]["restartPolicy"] = "Always";
  spec["initContainers"][0]["resources"] = {{"requests", {{"cpu", "50m"}}}};
  auto response = handled(f.handler, review);
  REQUIRE(response.patch.is_array());
  REQUIRE(response.patch.size() == 2);
  json pod = admitted(review, response.patch);
  CHECK(pod["spec"]["resources"] == json::parse(R"({"requests": {"cpu": "450m"},
      "limits": {"cpu": "1"}})"));
  CHECK(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "400m");
  CHECK(response.warnings.empty());
}

namespace {

/// Adds a scaler of `spec` (targeting Deployment web) to `store`.
void add_spec(controller::ScalerStore& store, const char* spec) {
  json object = {
      {"metadata",
       {{"name", "web"}, {"namespace", "record"}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
      {"spec", json::parse(spec)}};
  object["spec"]["deploymentName"] = "web";
  auto scaler = api::parse_scaler(object);
  REQUIRE_MESSAGE(scaler.ok(), (scaler.ok() ? "" : scaler.error()));
  store.upsert(std::make_shared<const api::Scaler>(*scaler));
}

/// Records the boosted pods the hook reports.
/// A LimitRange of namespace "record" whose type Container max cpu is `cpu`.
std::shared_ptr<const json> container_max_cpu(const char* cpu) {
  return std::make_shared<const json>(json{
      {"metadata", {{"name", "lr"}, {"namespace", "record"}}},
      {"spec", {{"limits", json::array({{{"type", "Container"}, {"max", {{"cpu", cpu}}}}})}}}});
}

struct BoostHints : controller::HintSink {
  std::vector<std::string> boosted;
  void hint(std::string_view, const controller::Expectation&) override {}
  void boosted_pod(std::string_view key) override { boosted.emplace_back(key); }
};

}  // namespace

TEST_CASE("startup boost: every mode boosts the pod from its base and records the base once") {
  for (const char* mode : {"Auto", "Off", "Initial", "InPlace"}) {
    CAPTURE(mode);
    controller::ScalerStore store;
    metrics::Registry registry;
    auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
    auto& boosts = registry.counter("vscaler_startup_boosts_total", "test", {"result"});
    BoostHints hints;
    PodHandler handler{store, results, nullptr, nullptr, &hints, &boosts};
    add_spec(store, (std::string(R"({"updateMode": ")") + mode + R"(",
        "startupBoost": {"cpu": {"type": "Factor", "factor": 2, "durationSeconds": 60}},
        "containers": [{"name": "app", "requests": {"cpu": "200m"}},
                       {"name": "sidecar", "mode": "Off"}]})")
                        .c_str());
    json review = recorded_review();
    auto response = handled(handler, review);
    REQUIRE(response.patch.is_array());
    json pod = admitted(review, response.patch);
    const json& app = pod["spec"]["containers"][0]["resources"];
    // In InPlace the base is the scaler's fixed 200m; in the other modes the pod's own 100m
    // (its template carries the values, or deliberately does not yet). Limits in proportion.
    const bool in_place = std::string(mode) == "InPlace";
    CHECK(app["requests"]["cpu"] == (in_place ? "400m" : "200m"));
    CHECK(app["limits"]["cpu"] == "1");  // 500m x2 (the fixed entry sets only the request)
    CHECK(app["requests"]["memory"] == "64Mi");
    CHECK(pod["spec"]["containers"][1] == review["request"]["object"]["spec"]["containers"][1]);
    auto record = api::boost_record_of(pod);
    REQUIRE(record);
    CHECK(record->duration_seconds == 60);
    REQUIRE(record->containers.size() == 1);
    CHECK(record->containers[0].base.request->to_string() == (in_place ? "200m" : "100m"));
    CHECK(hints.boosted == std::vector<std::string>{"record/web"});
    CHECK(boosts.with({"boosted"}).value() == 1);
    // Re-invoked (or a copy of a boosted pod): never boosted twice. (`pod` lacks the marker
    // `handled` took out: the call counts it and marks it, changing nothing else.)
    json again = review;
    again["request"]["object"] = pod;
    auto second = handled(handler, again);
    CHECK_FALSE(second.patch.is_array());
    CHECK(boosts.with({"boosted"}).value() == 1);
    // Once marked, a second call neither marks nor counts it again.
    again["request"]["object"] = admitted(again, handler.handle(parse(again)).patch);
    CHECK(results.with({"unchanged"}).value() == 2);
    CHECK(handled(handler, again, Marker::kUnmarked).patch.is_null());
    CHECK(results.with({"unchanged"}).value() == 2);
  }
}

TEST_CASE("a dry run gets the same patch and changes nothing: no headroom, no hint, no boost") {
  controller::ScalerStore store;
  metrics::Registry registry;
  auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
  auto& boosts = registry.counter("vscaler_startup_boosts_total", "test", {"result"});
  controller::QuotaCache quotas;
  struct Hints : controller::HintSink {
    int hints = 0;
    int boosted = 0;
    void hint(std::string_view, const controller::Expectation&) override { ++hints; }
    void boosted_pod(std::string_view) override { ++boosted; }
  } hints;
  PodHandler handler{store, results, nullptr, &quotas, &hints, &boosts};
  add_spec(store, R"({"updateMode": "InPlace",
      "startupBoost": {"cpu": {"type": "Factor", "factor": 2, "durationSeconds": 60}},
      "containers": [{"name": "app", "requests": {"cpu": "200m"}},
                     {"name": "sidecar", "mode": "Off"}]})");
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(R"({"metadata": {"name": "q",
      "namespace": "record"}, "status": {"hard": {"requests.cpu": "10"},
      "used": {"requests.cpu": "1"}}})"))}) == 0);
  json review = recorded_review();
  review["request"]["dryRun"] = true;
  auto dry = handled(handler, review);
  REQUIRE(dry.patch.is_array());
  CHECK(value_left(quotas) == "9");
  CHECK(hints.hints == 0);
  CHECK(hints.boosted == 0);
  CHECK(boosts.with({"boosted"}).value() == 0);
  // The same review for real: the same patch, and its effects.
  review["request"]["dryRun"] = false;
  auto real = handled(handler, review);
  CHECK(real.patch == dry.patch);
  CHECK(value_left(quotas) != "9");
  CHECK(hints.boosted == 1);
  CHECK(boosts.with({"boosted"}).value() == 1);
}

TEST_CASE("startup boost: the boost fits the quota's headroom, not the pod's declared totals") {
  controller::ScalerStore store;
  metrics::Registry registry;
  auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
  controller::QuotaCache quotas;
  // requests.cpu: 1 hard, 500m used -> 500m left.
  REQUIRE(quotas.rebuild({std::make_shared<const json>(json::parse(R"({"metadata": {"name": "q",
      "namespace": "record"}, "status": {"hard": {"requests.cpu": "1"},
      "used": {"requests.cpu": "500m"}}})"))}) == 0);
  PodHandler handler{store, results, nullptr, &quotas};
  add_spec(store, R"({"updateMode": "InPlace",
      "startupBoost": {"cpu": {"factor": 4, "durationSeconds": 60}},
      "containers": [{"name": "app", "requests": {"cpu": "300m"}},
                     {"name": "sidecar", "mode": "Off"}]})");
  // The template asks for 1 CPU, more than the quota has left; the scaler lowers it to 300m,
  // which fits, and the boost may take only the 200m left above that. (Measured against the
  // pod's own 1 CPU, it took 700m: the pod's CREATE, 1 CPU in all, was refused by the quota.)
  json review = recorded_review();
  review["request"]["object"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1";
  review["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2";
  auto response = handled(handler, review);
  REQUIRE(response.patch.is_array());
  json pod = admitted(review, response.patch);
  CHECK(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m");
  auto record = api::boost_record_of(pod);
  REQUIRE(record);
  CHECK(record->containers[0].base.request->to_string() == "300m");
}

TEST_CASE("startup boost: a container with no cpu request is left alone and counted skipped") {
  controller::ScalerStore store;
  metrics::Registry registry;
  auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
  auto& boosts = registry.counter("vscaler_startup_boosts_total", "test", {"result"});
  PodHandler handler{store, results, nullptr, nullptr, nullptr, &boosts};
  add_spec(store, R"({"updateMode": "Off", "containers": [{"name": "app", "mode": "Off"},
      {"name": "sidecar", "startupBoost": {"cpu": {"type": "Quantity", "quantity": "1"}}}]})");
  auto response = handled(handler, recorded_review());
  CHECK_FALSE(response.patch.is_array());
  CHECK(boosts.with({"skipped"}).value() == 1);
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0].find("container sidecar: not boosted, it has no cpu request") !=
        std::string::npos);
}

TEST_CASE("startup boost: none on an API server that cannot resize pods back") {
  controller::ScalerStore store;
  metrics::Registry registry;
  auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
  PodHandler handler{store, results, nullptr, nullptr, nullptr, nullptr, false};
  add_spec(store, R"({"startupBoost": {"cpu": {"factor": 2}}})");
  CHECK_FALSE(handled(handler, recorded_review(), Marker::kUnmarked).patch.is_array());
}

TEST_CASE("an in-place mode below 1.33 (no pods/resize): the pod is what its template says") {
  // DESIGN: there the values apply as in Initial, which sizes no pod at its creation.
  controller::ScalerStore store;
  metrics::Registry registry;
  auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
  PodHandler handler{store, results, nullptr, nullptr, nullptr, nullptr, false};
  add_spec(store, R"({"updateMode": "InPlace",
                      "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})");
  CHECK_FALSE(handled(handler, recorded_review(), Marker::kUnmarked).patch.is_array());
  // The same scaler where pods can be resized: sized at admission.
  PodHandler resizing{store, results};
  CHECK(handled(resizing, recorded_review()).patch.is_array());
}

TEST_CASE("fixed values the LimitRange refuses: no patch, a warning; the pod is created") {
  controller::ScalerStore store;
  metrics::Registry registry;
  auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
  controller::LimitRangeCache limit_ranges;
  REQUIRE(limit_ranges.rebuild({container_max_cpu("1")}) == 0);
  RecordedHints hints;
  PodHandler handler{store, results, &limit_ranges, nullptr, &hints};
  add_spec(store, R"({"updateMode": "InPlace",
      "containers": [{"name": "app", "limits": {"cpu": "2"}}, {"name": "sidecar", "mode": "Off"}]})");
  auto response = handled(handler, recorded_review());
  CHECK_FALSE(response.patch.is_array());
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0].find("LimitRange refuses container app: limits.cpu 2 is above the "
                                  "LimitRange's max 1") != std::string::npos);
  CHECK(results.with({"unchanged"}).value() == 1);
  CHECK(hints.keys == std::vector<std::string>{"record/web"});  // looked at again once it runs
  // Within the max: applied.
  add_spec(store, R"({"updateMode": "InPlace",
      "containers": [{"name": "app", "limits": {"cpu": "800m"}}, {"name": "sidecar", "mode": "Off"}]})");
  CHECK(handled(handler, recorded_review()).patch.is_array());
}

TEST_CASE(
    "startup boost: a LimitRange's per-container max caps the boost (LimitRanger would "
    "refuse the pod above it)") {
  controller::ScalerStore store;
  metrics::Registry registry;
  auto& results = registry.counter("vscaler_pod_admission_total", "test", {"result"});
  controller::LimitRangeCache limit_ranges;
  REQUIRE(limit_ranges.rebuild({container_max_cpu("300m")}) == 0);
  PodHandler handler{store, results, &limit_ranges};
  add_spec(store, R"({"updateMode": "Off", "startupBoost": {"cpu": {"factor": 4}},
      "containers": [{"name": "app"}, {"name": "sidecar", "mode": "Off"}]})");
  json review = recorded_review();
  review["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "200m";
  auto response = handled(handler, review);
  REQUIRE(response.patch.is_array());
  json pod = admitted(review, response.patch);
  // 100m/200m x4 would be 400m/800m; the limit may be 300m at most, so the request stops at
  // 150m (the limit in proportion, 300m).
  CHECK(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "150m");
  CHECK(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "300m");
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0].find("capped by the namespace's LimitRange") != std::string::npos);
}
