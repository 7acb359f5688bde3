// The workload admission hook on real AdmissionReview bodies recorded from the local API server
// (test/data/admission/, made by test/tools/record_admission.sh); StatefulSet and DaemonSet
// reviews are the recorded Deployment ones with the resource and kind rewritten (the hook reads
// the same fields of every kind).
#include "webhook/deployment_handler.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "controller/expectations.h"
#include "controller/work_queue.h"

using nlohmann::json;
using namespace vscaler;
using webhook::AdmissionRequest;
using webhook::DeploymentHandler;

namespace {

std::string read_recording(const std::string& name) {
  std::ifstream in(std::string(VSCALER_TEST_DATA_DIR) + "/admission/" + name);
  REQUIRE_MESSAGE(in.good(), name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// The recording `name`'s request.oldObject, as written (the handler's projection reads it as
/// stored, without a tree).
json recorded_old_object(const std::string& name) {
  return json::parse(read_recording(name))["request"]["oldObject"];
}

/// The recording `name` parsed whole, without the handler's projection (oldObject a tree).
AdmissionRequest recorded_whole(const std::string& name) {
  auto request = webhook::parse_review(read_recording(name));
  REQUIRE_MESSAGE(request.ok(), name);
  return *request;
}

AdmissionRequest recorded(const std::string& name) {
  webhook::ParseOptions options;
  options.projection = &DeploymentHandler::projection();
  auto request = webhook::parse_review(read_recording(name), options);
  REQUIRE_MESSAGE(request.ok(), name);
  return *request;
}

/// The recording `name` as a review of `resource` (statefulsets, daemonsets, ...) of `kind`.
AdmissionRequest recorded_as(const std::string& name, const std::string& resource,
                             const std::string& kind) {
  json review = json::parse(read_recording(name));
  json& request = review["request"];
  for (const char* field : {"resource", "requestResource"}) request[field]["resource"] = resource;
  for (const char* field : {"kind", "requestKind"}) request[field]["kind"] = kind;
  for (const char* field : {"object", "oldObject"}) {
    if (request[field].is_object()) request[field]["kind"] = kind;
  }
  webhook::ParseOptions options;
  options.projection = &DeploymentHandler::projection();
  auto parsed = webhook::parse_review(review.dump(), options);
  REQUIRE_MESSAGE(parsed.ok(), name);
  return *parsed;
}

struct Fixture {
  controller::ScalerStore store;
  controller::WorkQueue queue;
  // Hinted UPDATEs are looked at once here: the learned first-look delay is the expectations'
  // concern (expectations_test), and a delayed key is not in the queue yet.
  controller::Expectations expectations{[] {
    controller::ExpectationsOptions options;
    options.first_look_initial = std::chrono::microseconds(0);
    return options;
  }()};
  controller::QueueingHintSink hints{expectations, queue};
  metrics::Counter enqueued;
  DeploymentHandler handler{store, hints, enqueued};

  void add_scaler(const std::string& name, const std::string& deployment, const char* mode,
                  const char* containers, const char* created = "2026-01-01T00:00:00Z") {
    json object = {
        {"metadata", {{"name", name}, {"namespace", "record"}, {"creationTimestamp", created}}},
        {"spec",
         {{"deploymentName", deployment},
          {"updateMode", mode},
          {"containers", json::parse(containers)}}}};
    auto scaler = api::parse_scaler(object);
    REQUIRE(scaler.ok());
    store.upsert(std::make_shared<const api::Scaler>(*scaler));
  }
  /// A scaler of `kind` (spec.targetRef) for the workload `target`.
  void add_ref_scaler(const std::string& name, const std::string& kind, const std::string& target,
                      const char* mode, const char* containers) {
    json object = {
        {"metadata",
         {{"name", name}, {"namespace", "record"}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
        {"spec",
         {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", kind}, {"name", target}}},
          {"updateMode", mode},
          {"containers", json::parse(containers)}}}};
    auto scaler = api::parse_scaler(object);
    REQUIRE(scaler.ok());
    store.upsert(std::make_shared<const api::Scaler>(*scaler));
  }
  /// What the hook recorded for `key` (empty when nothing).
  controller::Expectation expected(const std::string& key) const {
    return expectations.pending(key).value_or(controller::Expectation{});
  }
  std::optional<controller::WorkItem> next() {
    return queue.len() > 0 ? queue.get() : std::nullopt;
  }
};

}  // namespace

TEST_CASE("a Deployment no scaler targets is allowed untouched and nothing is enqueued") {
  Fixture f;
  auto response = f.handler.handle(recorded("deployment-update-resources.json"));
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  CHECK(f.queue.len() == 0);
}

TEST_CASE("an UPDATE enqueues the active scaler with hint generation > the old generation") {
  Fixture f;
  f.add_scaler("web", "web", "Reconcile", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  AdmissionRequest request = recorded("deployment-update-resources.json");
  auto response = f.handler.handle(request);
  CHECK(response.allowed);
  CHECK(response.patch.is_null());  // Reconcile mode: no admission patch
  auto item = f.next();
  REQUIRE(item);
  CHECK(item->key == "record/web");
  json generation =
      recorded_old_object("deployment-update-resources.json")["metadata"]["generation"];
  REQUIRE(generation.get<std::int64_t>() > 0);
  CHECK(f.expected(item->key).min_generation_exclusive == generation);
  CHECK(f.enqueued.value() == 1);
}

TEST_CASE("a review whose object's namespace is not the request's is forged: no patch, no hint") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  AdmissionRequest request = recorded("deployment-update-resources.json");
  // Another namespace, or none (the API server always names a workload's): the object still
  // says "record".
  for (const char* ns : {"elsewhere", ""}) {
    CAPTURE(ns);
    request.namespace_name = ns;
    auto response = f.handler.handle(request);
    CHECK(response.allowed);
    CHECK(response.patch.is_null());
    CHECK(response.warnings.empty());
    CHECK(f.queue.len() == 0);
    CHECK(f.enqueued.value() == 0);
  }
  request.namespace_name = "record";  // the same review, as the API server sends it: handled
  CHECK(f.handler.handle(request).patch.is_array());
  CHECK(f.enqueued.value() == 1);
}

TEST_CASE("a CREATE enqueues with a must-exist hint") {
  Fixture f;
  f.add_scaler("web", "web", "Reconcile", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  f.handler.handle(recorded("deployment-create.json"));
  auto item = f.next();
  REQUIRE(item);
  CHECK(f.expected(item->key).must_exist);
}

TEST_CASE("a DELETE and a deletecollection item name the Deployment only in oldObject") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  f.add_scaler("big", "big", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  AdmissionRequest single = recorded("deployment-delete.json");
  auto response = f.handler.handle(single);
  CHECK(response.patch.is_null());  // never a patch on DELETE
  auto item = f.next();
  REQUIRE(item);
  json uid = recorded_old_object("deployment-delete.json")["metadata"]["uid"];
  REQUIRE_FALSE(uid.get<std::string>().empty());
  CHECK(f.expected(item->key).gone_uid == uid);
  f.queue.done(item->key);

  AdmissionRequest collection = recorded("deployment-deletecollection.json");
  CHECK(collection.name.empty());
  response = f.handler.handle(collection);
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  item = f.next();
  REQUIRE(item);
  CHECK(item->key == "record/big");
  uid = recorded_old_object("deployment-deletecollection.json")["metadata"]["uid"];
  REQUIRE_FALSE(uid.get<std::string>().empty());
  CHECK(f.expected(item->key).gone_uid == uid);
}

TEST_CASE("a generateName CREATE has no name yet and matches no scaler") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "*", "requests": {"cpu": "250m"}}])");
  auto response = f.handler.handle(recorded("deployment-create-generatename.json"));
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  CHECK(f.queue.len() == 0);
}

TEST_CASE("Auto mode patches the write with each matched container's whole merged resources") {
  Fixture f;
  f.add_scaler(
      "web", "web", "Auto",
      R"([{"name": "app", "requests": {"cpu": "250m"}}, {"name": "*", "limits": {"memory": "64Mi"}}])");
  AdmissionRequest request = recorded("deployment-create.json");
  auto response = f.handler.handle(request);
  CHECK(response.allowed);
  REQUIRE(response.patch.is_array());
  CHECK(response.patch.size() == 2);
  CHECK(response.patch[0] == json::parse(R"({"op": "add", "path":
      "/spec/template/spec/containers/0/resources", "value": {"requests": {"cpu": "250m",
      "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}})"));
  CHECK(response.patch[1]["path"] == "/spec/template/spec/containers/1/resources");
  CHECK(webhook::validate_json_patch(response.patch).ok());
  // The writer set cpu 100m; vscaler overrides it and says so.
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0] == "vscaler: VerticalScaler web overrides app requests.cpu=100m");
}

TEST_CASE("the Auto patch applies to the full recorded object and leaves it consistent") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "*", "requests": {"cpu": "300m"}}])");
  std::string body = read_recording("deployment-create.json");
  json full = json::parse(body)["request"]["object"];
  auto response = f.handler.handle(recorded("deployment-create.json"));
  json patched = full.patch(response.patch);
  for (const json& container : patched["spec"]["template"]["spec"]["containers"]) {
    CHECK(container["resources"]["requests"]["cpu"] == "300m");
  }
  CHECK(patched["spec"]["template"]["spec"]["initContainers"] ==
        full["spec"]["template"]["spec"]["initContainers"]);
  CHECK(patched["spec"]["template"]["spec"]["containers"][0]["env"] ==
        full["spec"]["template"]["spec"]["containers"][0]["env"]);
}

TEST_CASE("a patch that would make requests exceed a limit is not sent; a warning says why") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "2"}}])");
  auto response = f.handler.handle(recorded("deployment-create.json"));
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0].find("container app: requests.cpu 2 would exceed limits.cpu 500m") !=
        std::string::npos);
  CHECK(f.queue.len() == 1);  // still hinted: the reconciler reports InvalidResources
}

TEST_CASE("values already equal by value yield no patch") {
  Fixture f;
  f.add_scaler("web", "web", "Auto",
               R"([{"name": "app", "requests": {"cpu": "0.1", "memory": "64Mi"}}])");
  auto response = f.handler.handle(recorded("deployment-create.json"));
  CHECK(response.patch.is_null());
  CHECK(response.warnings.empty());
}

TEST_CASE("a dry-run request enqueues nothing but gets the same patch") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  AdmissionRequest request = recorded("deployment-update-dryrun.json");
  CHECK(request.dry_run);
  auto response = f.handler.handle(request);
  CHECK(f.queue.len() == 0);
  CHECK(f.enqueued.value() == 0);
  REQUIRE(response.patch.is_array());
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "250m");
}

TEST_CASE("with two scalers on one Deployment only the oldest is enqueued and patches") {
  Fixture f;
  f.add_scaler("young", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "1"}}])",
               "2026-02-01T00:00:00Z");
  f.add_scaler("old", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])",
               "2026-01-01T00:00:00Z");
  auto response = f.handler.handle(recorded("deployment-update-resources.json"));
  auto item = f.next();
  REQUIRE(item);
  CHECK(item->key == "record/old");
  CHECK(f.queue.len() == 0);
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "250m");
}

TEST_CASE("an UPDATE that changes the template is hinted with its generation, whatever the patch") {
  // The status must follow the new template (a container added, a limit raised): the worker
  // looks again until the write is stored.
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  json review = json::parse(read_recording("deployment-update-resources.json"));
  review["request"]["object"]["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2";
  webhook::ParseOptions options;
  options.projection = &DeploymentHandler::projection();
  auto request = webhook::parse_review(review.dump(), options);
  REQUIRE(request.ok());
  REQUIRE(request->subtree_unchanged == false);
  auto response = f.handler.handle(*request);
  CHECK(response.patch.is_array());
  auto item = f.next();
  REQUIRE(item);
  json generation =
      recorded_old_object("deployment-update-resources.json")["metadata"]["generation"];
  CHECK(f.expected(item->key).min_generation_exclusive == generation);
}

TEST_CASE("in Auto mode an UPDATE is hinted without a generation: the write may become a no-op") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  f.handler.handle(recorded("deployment-update-resources.json"));
  auto item = f.next();
  REQUIRE(item);
  CHECK(f.expected(item->key).min_generation_exclusive == 0);
  CHECK_FALSE(f.expected(item->key).any());
}

TEST_CASE("a StatefulSet and a Deployment named alike: each review finds only its own scaler") {
  Fixture f;
  f.add_scaler("web-deploy", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  f.add_ref_scaler("web-sts", "StatefulSet", "web", "Auto",
                   R"([{"name": "app", "requests": {"cpu": "400m"}}])");
  auto sts = f.handler.handle(recorded_as("deployment-create.json", "statefulsets", "StatefulSet"));
  CHECK(sts.allowed);
  REQUIRE(sts.patch.is_array());
  CHECK(sts.patch[0]["value"]["requests"]["cpu"] == "400m");
  auto item = f.next();
  REQUIRE(item);
  CHECK(item->key == "record/web-sts");
  CHECK(f.expected(item->key).must_exist);
  CHECK(f.queue.len() == 0);
  f.queue.done(item->key);

  auto deploy = f.handler.handle(recorded("deployment-create.json"));
  REQUIRE(deploy.patch.is_array());
  CHECK(deploy.patch[0]["value"]["requests"]["cpu"] == "250m");
  item = f.next();
  REQUIRE(item);
  CHECK(item->key == "record/web-deploy");
  CHECK(f.queue.len() == 0);
}

TEST_CASE("a DaemonSet UPDATE and DELETE are hinted like a Deployment's") {
  Fixture f;
  f.add_ref_scaler("agent", "DaemonSet", "web", "Reconcile",
                   R"([{"name": "app", "requests": {"cpu": "20m"}}])");
  // A Deployment of that name is not the DaemonSet's: nothing.
  f.handler.handle(recorded("deployment-update-resources.json"));
  CHECK(f.queue.len() == 0);
  AdmissionRequest update =
      recorded_as("deployment-update-resources.json", "daemonsets", "DaemonSet");
  auto response = f.handler.handle(update);
  CHECK(response.patch.is_null());  // Reconcile mode
  auto item = f.next();
  REQUIRE(item);
  CHECK(item->key == "record/agent");
  CHECK(f.expected(item->key).min_generation_exclusive ==
        recorded_old_object("deployment-update-resources.json")["metadata"]["generation"]);
  f.queue.done(item->key);
  AdmissionRequest deleted = recorded_as("deployment-delete.json", "daemonsets", "DaemonSet");
  response = f.handler.handle(deleted);
  CHECK(response.patch.is_null());
  item = f.next();
  REQUIRE(item);
  CHECK(f.expected(item->key).gone_uid ==
        recorded_old_object("deployment-delete.json")["metadata"]["uid"]);
}

TEST_CASE("a review of an unsupported kind or a subresource is allowed untouched") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "250m"}}])");
  f.add_ref_scaler("web-sts", "StatefulSet", "web", "Auto",
                   R"([{"name": "app", "requests": {"cpu": "700m"}}])");
  auto response =
      f.handler.handle(recorded_as("deployment-create.json", "replicasets", "ReplicaSet"));
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  AdmissionRequest scale = recorded_as("deployment-create.json", "statefulsets", "StatefulSet");
  scale.sub_resource = "scale";
  response = f.handler.handle(scale);
  CHECK(response.patch.is_null());
  CHECK(f.queue.len() == 0);
}

// ---- recommendations at admission ---------------------------------------------------------

namespace {

/// A scaler of `mode` whose container app is recommended, with a recommendation of cpu 300m.
void add_recommended(controller::ScalerStore& store, const char* mode) {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "record"}}},
                 {"spec", {{"deploymentName", "web"}, {"updateMode", mode}}},
                 {"status", json::parse(R"({"recommendation": {"containerRecommendations": [
      {"containerName": "app", "target": {"cpu": "300m"}, "lowerBound": {"cpu": "250m"},
       "upperBound": {"cpu": "400m"}, "uncappedTarget": {"cpu": "300m"}}]}})")}};
  object["spec"]["containers"] = json::parse(R"([{"name": "app"}, {"name": "sidecar",
      "mode": "Off"}])");
  auto scaler = api::parse_scaler(object);
  REQUIRE(scaler.ok());
  store.upsert(std::make_shared<const api::Scaler>(*scaler));
}

/// The same recording with the Deployment named `name` (the recordings name it web or big).
AdmissionRequest renamed(AdmissionRequest request, const char* name) {
  for (json* object : {&request.object, &request.old_object}) {
    if (object->is_object()) (*object)["metadata"]["name"] = name;
  }
  if (request.old_stored) request.old_stored->name = name;
  return request;
}

}  // namespace

TEST_CASE("Auto: a CREATE gets the recommendation's target, limits in proportion, and is counted") {
  Fixture f;
  metrics::Counter applied;
  DeploymentHandler handler{f.store, f.hints, f.enqueued, &applied};
  add_recommended(f.store, "Auto");
  auto response = handler.handle(recorded("deployment-create.json"));
  REQUIRE(response.patch.is_array());
  REQUIRE(response.patch.size() == 1);  // the sidecar is mode Off
  CHECK(response.patch[0]["value"] == json::parse(R"({"requests": {"cpu": "300m",
      "memory": "64Mi"}, "limits": {"cpu": "1500m", "memory": "128Mi"}})"));
  CHECK(applied.value() == 1);
}

TEST_CASE("Auto: the namespace's LimitRange max caps the proportional limit, and the request") {
  Fixture f;
  controller::LimitRangeCache limit_ranges;
  json range = {
      {"metadata", {{"namespace", "record"}, {"name", "caps"}}},
      {"spec", {{"limits", json::array({{{"type", "Container"}, {"max", {{"cpu", "1"}}}}})}}}};
  REQUIRE(limit_ranges.rebuild({std::make_shared<const json>(range)}) == 0);
  DeploymentHandler handler{f.store, f.hints, f.enqueued, nullptr, &limit_ranges};
  add_recommended(f.store, "Auto");
  auto response = handler.handle(recorded("deployment-create.json"));
  REQUIRE(response.patch.is_array());
  REQUIRE(response.patch.size() == 1);
  // 100m:500m is 1:5, so the target 300m would take the limit to 1500m, over the max of 1: the
  // request is held at 200m where the limit is 1 (LimitRanger refuses the pod otherwise).
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "200m");
  CHECK(response.patch[0]["value"]["limits"]["cpu"] == "1");
}

TEST_CASE(
    "Auto and Initial: a write that only resets controlled keys gets back what oldObject "
    "carried, not the target") {
  for (const char* mode : {"Auto", "Initial"}) {
    CAPTURE(mode);
    Fixture f;
    add_recommended(f.store, mode);
    // kubectl set resources: requests.cpu 100m -> 200m, nothing else.
    auto response = f.handler.handle(recorded("deployment-update-resources.json"));
    REQUIRE(response.patch.is_array());
    REQUIRE(response.patch.size() == 1);
    CHECK(response.patch[0]["value"]["requests"]["cpu"] == "100m");
    CHECK(response.patch[0]["value"]["limits"]["cpu"] == "500m");
    // The writer set 200m: vscaler says it overrides it.
    REQUIRE(response.warnings.size() == 1);
    CHECK(response.warnings[0] == "vscaler: VerticalScaler web overrides app requests.cpu=200m");
  }
}

TEST_CASE("a review parsed without the handler's projection gets the same answer and hint") {
  // The handler reads oldObject as the projection stores it; from a request parsed whole it reads
  // the tree the same way (a reset's values, a carried-over value, the generation, the uid and,
  // on DELETE, the name).
  for (const char* mode : {"Auto", "Initial", "Reconcile"}) {
    for (const char* name :
         {"deployment-update-resources.json", "deployment-update-20k.json",
          "deployment-delete.json", "deployment-deletecollection.json", "deployment-create.json"}) {
      CAPTURE(mode);
      CAPTURE(name);
      Fixture projected;
      Fixture whole;
      for (Fixture* f : {&projected, &whole}) {
        add_recommended(f->store, mode);
        f->add_scaler("big", "big", mode, R"([{"name": "app", "requests": {"cpu": "250m"}}])");
      }
      auto a = projected.handler.handle(renamed(recorded(name), "web"));
      auto b = whole.handler.handle(renamed(recorded_whole(name), "web"));
      CHECK(a.patch == b.patch);
      CHECK(a.warnings == b.warnings);
      auto hinted_a = projected.next();
      auto hinted_b = whole.next();
      REQUIRE(hinted_a.has_value() == hinted_b.has_value());
      if (!hinted_a) continue;
      CHECK(hinted_a->key == hinted_b->key);
      auto hint_a = projected.expected(hinted_a->key);
      auto hint_b = whole.expected(hinted_b->key);
      CHECK(hint_a.min_generation_exclusive == hint_b.min_generation_exclusive);
      CHECK(hint_a.gone_uid == hint_b.gone_uid);
      CHECK(hint_a.must_exist == hint_b.must_exist);
    }
  }
}

TEST_CASE("Initial: a write that changes the template (an image) gets the latest target") {
  Fixture f;
  add_recommended(f.store, "Initial");
  auto response = f.handler.handle(renamed(recorded("deployment-update-20k.json"), "web"));
  REQUIRE(response.patch.is_array());
  REQUIRE(response.patch.size() == 1);
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "300m");
  CHECK(response.patch[0]["value"]["limits"]["cpu"] == "1500m");
  // 100m/500m were only carried over by the image change: no warning about overriding them.
  CHECK(response.warnings.empty());
}

TEST_CASE("Reconcile mode sends no admission patch") {
  Fixture f;
  add_recommended(f.store, "Reconcile");
  auto response = f.handler.handle(recorded("deployment-create.json"));
  CHECK(response.patch.is_null());
  CHECK(f.next().has_value());  // still hinted
}

TEST_CASE("vscaler's own writes (field manager vscaler) are allowed untouched and not hinted") {
  Fixture f;
  add_recommended(f.store, "Auto");
  AdmissionRequest request = recorded("deployment-update-resources.json");
  CHECK(request.field_manager == "kubectl-set");
  request.field_manager = "vscaler";
  auto response = f.handler.handle(request);
  CHECK(response.allowed);
  CHECK(response.patch.is_null());
  CHECK(response.warnings.empty());
  CHECK_FALSE(f.next().has_value());
}

TEST_CASE("a resources-only write to a recommended container with no recommendation yet stands") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app"}])");
  auto response = f.handler.handle(recorded("deployment-update-resources.json"));
  CHECK(response.patch.is_null());
  CHECK(response.warnings.empty());
}

TEST_CASE("pod-level resources survive the projection and are raised in the same patch") {
  Fixture f;
  f.add_scaler("web", "web", "Auto", R"([{"name": "app", "requests": {"cpu": "400m"}}])");
  json review = json::parse(read_recording("deployment-create.json"));
  json& spec = review["request"]["object"]["spec"]["template"]["spec"];
  spec["resources"] = {{"requests", {{"cpu", "300m"}}}};
  webhook::ParseOptions options;
  options.projection = &DeploymentHandler::projection();
  auto request = webhook::parse_review(review.dump(), options);
  REQUIRE(request.ok());
  auto response = f.handler.handle(*request);
  REQUIRE(response.patch.is_array());
  REQUIRE(response.patch.size() == 2);
  CHECK(response.patch[0]["path"] == "/spec/template/spec/resources");
  // The app's 400m and the sidecar's (none) are the total.
  CHECK(response.patch[0]["value"]["requests"]["cpu"] == "400m");
}
