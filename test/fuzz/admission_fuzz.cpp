// Fuzzes the admission path on arbitrary request bodies: parse_review (whole, and with the
// Deployment hook's projection, as the server runs it), then DeploymentHandler and ScalerHandler
// against a fixed set of scalers (Auto, Reconcile, Off, a wildcard, limits, a conflict) whose
// targets are the names of the recorded reviews in the seed corpus.
// Properties: nothing crashes or throws (a handler exception would be a 500); the projection never
// changes whether a body is accepted; a rejected body says why; the Deployment hook never denies
// and never patches a DELETE; every patch it emits passes validate_json_patch, applies to the
// whole admitted object, and is a fixpoint (the patched object needs no further patch); every
// response encodes to JSON that parses back with the request's uid; oldObject read as stored holds
// what its whole tree holds; the admitted object written by kube::compact_json is nlohmann's dump.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "api/scaler.h"
#include "controller/expectations.h"
#include "controller/scaler_store.h"
#include "controller/work_queue.h"
#include "kube/json_text.h"
#include "kube/object_meta.h"
#include "metrics/registry.h"
#include "webhook/admission.h"
#include "webhook/deployment_handler.h"
#include "webhook/scaler_handler.h"

namespace {

using nlohmann::json;
using namespace vscaler;

[[noreturn]] void failed(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "admission_fuzz: property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

struct World {
  controller::ScalerStore store;
  controller::WorkQueue queue;
  controller::Expectations expectations;
  controller::QueueingHintSink hints{expectations, queue};
  metrics::Counter enqueued;
  webhook::DeploymentHandler deployments{store, hints, enqueued};
  webhook::ScalerHandler scalers{store};

  World() {
    add("record", "web", "web", "Auto", R"([{"name":"app","requests":{"cpu":"250m","memory":"64Mi"},
        "limits":{"cpu":"1","memory":"256Mi"}},{"name":"sidecar","requests":{"cpu":"10m"}}])",
        "2026-01-01T00:00:00Z");
    add("record", "web-younger", "web", "Reconcile", R"([{"name":"app","requests":{"cpu":"2"}}])",
        "2026-01-02T00:00:00Z");
    add("record", "big", "big", "Auto", R"([{"name":"*","requests":{"cpu":"100m"}}])");
    add("shop", "web", "web", "Auto",
        R"([{"name":"app","requests":{"memory":"1Gi"},"limits":{"memory":"1Gi"}}])");
    add("record", "x", "x", "Reconcile", R"([{"name":"app","requests":{"cpu":"1"}}])");
    add("record", "off", "off", "Off", R"([{"name":"*","limits":{"cpu":"3"}}])");
    // A StatefulSet named like the Deployment "web": reviews of statefulsets find this one.
    add("record", "web-sts", "web", "Auto", R"([{"name":"app","requests":{"cpu":"300m"}}])",
        "2026-01-01T00:00:00Z", "StatefulSet");
  }
  void add(const char* ns, const char* name, const char* deployment, const char* mode,
           const char* containers, const char* created = "2026-01-01T00:00:00Z",
           const char* kind = "Deployment") {
    json object = {
        {"metadata", {{"name", name}, {"namespace", ns}, {"creationTimestamp", created}}},
        {"spec",
         {{"deploymentName", deployment},
          {"updateMode", mode},
          {"containers", json::parse(containers)}}}};
    if (std::string_view(kind) != "Deployment") {
      object["spec"].erase("deploymentName");
      object["spec"]["targetRef"] = {
          {"apiVersion", "apps/v1"}, {"kind", kind}, {"name", deployment}};
    }
    auto scaler = api::parse_scaler(object);
    if (!scaler.ok()) failed("a fixture scaler does not parse:", scaler.error());
    store.upsert(std::make_shared<const api::Scaler>(*scaler));
  }
};

World& world() {
  static World instance;
  return instance;
}

void check_encoding(const std::string& uid, const webhook::AdmissionResponse& response) {
  std::string text = webhook::encode_review(uid, response);
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) failed("encode_review produced invalid JSON");
  if (parsed["response"]["uid"] != uid) failed("encode_review lost the uid");
}

// The hook's projection reads oldObject as stored: what it holds is what the whole tree holds,
// read as a request parsed without the projection reads it (webhook::stored_old_object_of).
void check_old_stored(const webhook::AdmissionRequest& whole,
                      const webhook::AdmissionRequest& reduced) {
  if (!reduced.old_stored) {
    if (whole.old_object.is_object()) failed("an oldObject was not read as stored");
    return;
  }
  const webhook::StoredOldObject& old = *reduced.old_stored;
  const webhook::StoredOldObject tree = webhook::stored_old_object_of(whole.old_object);
  if (old.name != tree.name || old.namespace_name != tree.namespace_name || old.uid != tree.uid ||
      old.generation != tree.generation ||
      old.generation != kube::meta_generation(whole.old_object)) {
    failed("oldObject's metadata read as stored differs from its tree");
  }
  bool same = old.containers.size() == tree.containers.size();
  for (std::size_t i = 0; same && i < tree.containers.size(); ++i) {
    same = old.containers[i].name == tree.containers[i].name &&
           old.containers[i].requests == tree.containers[i].requests &&
           old.containers[i].limits == tree.containers[i].limits;
  }
  if (!same) failed("oldObject's containers read as stored differ from its tree");
}

void run(std::string_view body) {
  webhook::ParseOptions projected;
  projected.projection = &webhook::DeploymentHandler::projection();
  auto whole = webhook::parse_review(body);
  auto reduced = webhook::parse_review(body, projected);
  if (whole.ok() != reduced.ok()) failed("the projection changed whether the body is accepted");
  if (!whole.ok()) {
    if (whole.error().empty() || reduced.error() != whole.error()) {
      failed("rejections differ or say nothing:", whole.error() + " / " + reduced.error());
    }
    return;
  }
  check_old_stored(*whole, *reduced);
  if (kube::compact_json(whole->object) !=
      whole->object.dump(-1, ' ', false, json::error_handler_t::replace)) {
    failed("compact_json differs from nlohmann's dump of the admitted object");
  }
  World& w = world();

  webhook::AdmissionResponse response = w.deployments.handle(*reduced);
  if (!response.allowed) failed("the Deployment hook denied a write");
  check_encoding(reduced->uid, response);
  if (!response.patch.is_null()) {
    if (reduced->operation == webhook::Operation::kDelete) failed("a patch on DELETE");
    if (auto valid = webhook::validate_json_patch(response.patch); !valid.ok()) {
      failed("an invalid JSON patch:", valid.error());
    }
    json patched;
    try {
      patched = whole->object.patch(response.patch);
    } catch (const std::exception& e) {
      failed("the patch does not apply to the admitted object:", e.what());
    }
    webhook::AdmissionRequest again = *reduced;
    again.object = patched;
    webhook::AdmissionResponse second = w.deployments.handle(again);
    if (!second.patch.is_null() && !second.patch.empty()) {
      failed("the patched object needs another patch:", second.patch.dump());
    }
  }

  webhook::AdmissionResponse validated = w.scalers.handle(*whole);
  check_encoding(whole->uid, validated);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception& e) {
    failed("an exception escaped (the server would answer 500):", e.what());
  }
  return 0;
}
