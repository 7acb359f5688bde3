// Manager, assembled as cmd/main.cpp runs it (informer, queue, expectations, workers, reconciler,
// Events), against a small local HTTP stand-in for the API server that serves one VerticalScaler
// and one Deployment and applies the Deployment patches it receives.
#include "controller/manager.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/unit/support/eventually.h"
#include "test/unit/support/local_http_server.h"

using namespace std::chrono_literals;
using nlohmann::json;
using namespace vscaler;

namespace {

class FakeApiServer : public testing::LocalHttpServer {
 public:
  FakeApiServer() {
    scaler_ = json::parse(R"({"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler",
      "metadata":{"name":"web","namespace":"shop","uid":"s-1","generation":1,"resourceVersion":"10",
        "creationTimestamp":"2026-01-01T00:00:00Z"},
      "spec":{"deploymentName":"web","updateMode":"Reconcile",
        "containers":[{"name":"app","requests":{"cpu":"250m"}}]}})");
    deployment_ = json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"web","namespace":"shop","uid":"d-1","generation":1},
      "spec":{"template":{"spec":{"containers":[{"name":"app","resources":{}}]}}}})");
    const std::string scalers = "/apis/scaling.vscaler.dev/v1beta1/namespaces/shop/verticalscalers";
    const std::string web = "/apis/apps/v1/namespaces/shop/deployments/web";
    server().Get(scalers, [this](const httplib::Request& req, httplib::Response& res) {
      if (req.has_param("watch")) {
        std::this_thread::sleep_for(200ms);  // a quiet watch that the server ends
        return;
      }
      std::lock_guard lock(mutex_);
      json list = {{"kind", "VerticalScalerList"},
                   {"metadata", {{"resourceVersion", "10"}}},
                   {"items", json::array({scaler_})}};
      res.set_content(list.dump(), "application/json");
    });
    server().Patch(scalers + "/web/status",
                   [this](const httplib::Request& req, httplib::Response& res) {
                     std::lock_guard lock(mutex_);
                     scaler_.merge_patch(json::parse(req.body));
                     res.set_content(scaler_.dump(), "application/json");
                   });
    server().Get(web, [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mutex_);
      ++deployment_gets_;
      res.set_content(deployment_.dump(), "application/json");
    });
    server().Patch(web, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mutex_);
      json patch = json::parse(req.body);
      for (const json& container : patch["spec"]["template"]["spec"]["containers"]) {
        deployment_["spec"]["template"]["spec"]["containers"][0]["resources"].merge_patch(
            container["resources"]);
      }
      deployment_["metadata"]["generation"] = deployment_["metadata"]["generation"].get<int>() + 1;
      ++deployment_patches_;
      res.set_content(deployment_.dump(), "application/json");
    });
    server().Post("/api/v1/namespaces/shop/events",
                  [](const httplib::Request& req, httplib::Response& res) {
                    res.status = 201;
                    res.set_content(req.body, "application/json");
                  });
    start();
  }
  ~FakeApiServer() { stop(); }  // before the members the handlers use go
  json deployment() {
    std::lock_guard lock(mutex_);
    return deployment_;
  }
  int deployment_gets() {
    std::lock_guard lock(mutex_);
    return deployment_gets_;
  }
  int deployment_patches() {
    std::lock_guard lock(mutex_);
    return deployment_patches_;
  }

 private:
  std::mutex mutex_;
  json scaler_;
  json deployment_;
  int deployment_gets_ = 0;
  int deployment_patches_ = 0;
};

// Twenty seconds: these wait on a manager with several threads, slow under the sanitizers.
bool eventually(const std::function<bool()>& condition) {
  return testing::eventually(condition, 20s);
}

}  // namespace

TEST_CASE("manager: a listed scaler is reconciled; a hint re-checks until its write is visible") {
  FakeApiServer server;
  metrics::Registry registry;
  controller::ManagerOptions options;
  options.ns = "shop";
  options.workers = 2;
  options.resync_period = 1h;
  controller::Manager manager(server.client(), options, registry);
  manager.start();
  REQUIRE(eventually([&] { return manager.synced(); }));
  REQUIRE(eventually([&] { return server.deployment_patches() == 1; }));
  CHECK(server.deployment()["spec"]["template"]["spec"]["containers"][0]["resources"] ==
        json{{"requests", {{"cpu", "250m"}}}});
  CHECK(manager.store().get("shop/web") != nullptr);

  // A hinted UPDATE whose write is not stored yet (generation 2 is not > 5): the workers look
  // again with a short backoff instead of once.
  int gets = server.deployment_gets();
  controller::Expectation expectation;
  expectation.min_generation_exclusive = 5;
  manager.hints().hint("shop/web", expectation);
  CHECK(eventually([&] { return server.deployment_gets() >= gets + 3; }));
  CHECK(server.deployment_patches() == 1);  // already applied: nothing more is written
  auto start = std::chrono::steady_clock::now();
  manager.stop();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}
