// KubeReconcileApi, the reconciler's API calls on the real kube::Client and transport, against a
// local plain-HTTP server that records each request and answers like the API server: paths,
// verbs, patch types, fieldManager, the /status subresource, Events, and errors as values.
#include "controller/kube_api.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/event_recorder.h"
#include "test/unit/support/local_http_server.h"

using namespace std::chrono_literals;
using nlohmann::json;
using namespace vscaler;

namespace {

// One request as the server saw it.
struct Seen {
  std::string method;
  std::string path;
  std::string query;
  std::string content_type;
  json body;
};

// Answers every request with `answer` (or 404 for /missing paths) and records it.
class RecordingServer : public testing::LocalHttpServer {
 public:
  RecordingServer() {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      Seen seen{req.method, req.path, "", req.get_header_value("Content-Type"),
                req.body.empty() ? json() : json::parse(req.body)};
      for (const auto& [key, value] : req.params) seen.query += key + "=" + value + ";";
      {
        std::lock_guard lock(mutex_);
        seen_.push_back(std::move(seen));
      }
      if (req.path.find("/missing") != std::string::npos) {
        res.status = 404;
        res.set_content(R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})",
                        "application/json");
        return;
      }
      json answer = req.body.empty() ? json{{"metadata", {{"name", "x"}}}} : json::parse(req.body);
      res.set_content(answer.dump(), "application/json");
    };
    server().Get(".*", handler);
    server().Patch(".*", handler);
    server().Post(".*", handler);
    start();
  }
  ~RecordingServer() { stop(); }  // before the members the handler uses go
  std::vector<Seen> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  std::mutex mutex_;
  std::vector<Seen> seen_;
};

api::Scaler scaler() {
  api::Scaler s;
  s.ns = "shop";
  s.name = "web";
  s.uid = "u-1";
  s.resource_version = "7";
  return s;
}

}  // namespace

TEST_CASE("kube api: reads and writes go to the right paths with vscaler's field manager") {
  RecordingServer server;
  controller::KubeReconcileApi api(server.client());
  CHECK(api.get_workload("shop", {"Deployment", "web"}).ok());
  json patch = {{"spec", {{"template", {{"spec", {{"containers", json::array()}}}}}}}};
  CHECK(api.patch_workload("shop", {"Deployment", "web"}, patch).ok());
  CHECK(api.get_scaler("shop", "web").ok());
  json status = {{"metadata", {{"resourceVersion", "7"}}}, {"status", {{"observedGeneration", 1}}}};
  CHECK(api.patch_scaler_status("shop", "web", status).ok());

  auto seen = server.seen();
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].method == "GET");
  CHECK(seen[0].path == "/apis/apps/v1/namespaces/shop/deployments/web");
  CHECK(seen[1].method == "PATCH");
  CHECK(seen[1].path == "/apis/apps/v1/namespaces/shop/deployments/web");
  CHECK(seen[1].content_type == "application/strategic-merge-patch+json");
  CHECK(seen[1].query.find("fieldManager=vscaler") != std::string::npos);
  CHECK(seen[1].body == patch);
  CHECK(seen[2].path == "/apis/scaling.vscaler.dev/v1beta1/namespaces/shop/verticalscalers/web");
  CHECK(seen[3].method == "PATCH");
  CHECK(seen[3].path ==
        "/apis/scaling.vscaler.dev/v1beta1/namespaces/shop/verticalscalers/web/status");
  CHECK(seen[3].content_type == "application/merge-patch+json");
  CHECK(seen[3].query.find("fieldManager=vscaler") != std::string::npos);
  CHECK(seen[3].body == status);
}

TEST_CASE("kube api: each workload kind is read and patched at its own path") {
  RecordingServer server;
  controller::KubeReconcileApi api(server.client());
  json patch = {{"spec", {{"template", {{"spec", {{"containers", json::array()}}}}}}}};
  CHECK(api.get_workload("shop", {"StatefulSet", "db"}).ok());
  CHECK(api.patch_workload("shop", {"DaemonSet", "agent"}, patch).ok());
  // An unsupported kind (parse_scaler refuses it) is an error value and sends nothing.
  CHECK_FALSE(api.get_workload("shop", {"ReplicaSet", "x"}).ok());
  auto seen = server.seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].path == "/apis/apps/v1/namespaces/shop/statefulsets/db");
  CHECK(seen[1].method == "PATCH");
  CHECK(seen[1].path == "/apis/apps/v1/namespaces/shop/daemonsets/agent");
  CHECK(seen[1].content_type == "application/strategic-merge-patch+json");
}

TEST_CASE("kube api: a missing Deployment is an error value, NotFound") {
  RecordingServer server;
  controller::KubeReconcileApi api(server.client());
  auto missing = api.get_workload("shop", {"Deployment", "missing"});
  REQUIRE_FALSE(missing.ok());
  CHECK(kube::is_not_found(missing.error()));
}

TEST_CASE("kube api: an Event is queued, then posted and aggregated through the API server") {
  RecordingServer server;
  controller::KubeEventWriter writer(server.client());
  controller::EventRecorder events(writer);
  controller::KubeReconcileApi api(server.client(), &events);
  api.record_event(scaler(), true, "Conflict", "VerticalScaler old already manages it");
  CHECK(server.seen().empty());  // nothing written on the reconciling thread
  api.record_event(scaler(), true, "Conflict", "VerticalScaler old already manages it");
  CHECK(events.flush() == 2);
  auto seen = server.seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].method == "POST");
  CHECK(seen[0].path == "/api/v1/namespaces/shop/events");
  const json& event = seen[0].body;
  CHECK(event["type"] == "Warning");
  CHECK(event["reason"] == "Conflict");
  CHECK(event["involvedObject"]["kind"] == "VerticalScaler");
  CHECK(event["involvedObject"]["uid"] == "u-1");
  std::string name = event["metadata"]["name"];
  CHECK(name.rfind("web.", 0) == 0);
  CHECK(event["count"] == 1);
  // The repeat bumps the count of the same Event.
  CHECK(seen[1].method == "PATCH");
  CHECK(seen[1].path == "/api/v1/namespaces/shop/events/" + name);
  CHECK(seen[1].content_type == "application/merge-patch+json");
  CHECK(seen[1].body["count"] == 2);
}

TEST_CASE("kube api: the labelled namespaces, those being deleted marked") {
  testing::LocalHttpServer server;
  std::mutex mutex;
  std::string selector;
  server.server().Get(
      "/api/v1/namespaces", [&](const httplib::Request& req, httplib::Response& res) {
        {
          std::lock_guard lock(mutex);
          selector = req.get_param_value("labelSelector");
        }
        res.set_content(R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
        "metadata":{},"items":[
          {"metadata":{"name":"shop"}},
          {"metadata":{"name":"gone","deletionTimestamp":"2026-12-06T10:00:00Z"}}]})",
                        "application/json");
      });
  server.start();
  controller::KubeOptInApi api(server.client());
  auto names = api.labelled_namespaces();
  REQUIRE(names.ok());
  REQUIRE(names->size() == 2);
  CHECK((*names)[0].name == "shop");
  CHECK_FALSE((*names)[0].terminating);
  CHECK((*names)[1].name == "gone");
  CHECK((*names)[1].terminating);
  std::lock_guard lock(mutex);
  CHECK(selector == "vscaler.dev/recommend=true");
  server.stop();
}
