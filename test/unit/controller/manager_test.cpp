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
        std::string events;
        {
          std::lock_guard lock(mutex_);
          for (const json& object : modified_) {
            events += json{{"type", "MODIFIED"}, {"object", object}}.dump() + "\n";
          }
          modified_.clear();
        }
        if (events.empty()) {
          std::this_thread::sleep_for(200ms);  // a quiet watch that the server ends
          return;
        }
        res.set_content(events, "application/json");
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
  json scaler() {
    std::lock_guard lock(mutex_);
    return scaler_;
  }
  // Serves `scaler` from now on, with a resourceVersion one above the stored one; with `watched`
  // the next watch request gets it as a MODIFIED event.
  void update_scaler(json scaler, bool watched) {
    std::lock_guard lock(mutex_);
    const int version = std::stoi(scaler_["metadata"]["resourceVersion"].get<std::string>());
    scaler["metadata"]["resourceVersion"] = std::to_string(version + 1);
    scaler_ = std::move(scaler);
    if (watched) modified_.push_back(scaler_);
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
  std::vector<json> modified_;  // MODIFIED events for the next watch request
  json deployment_;
  int deployment_gets_ = 0;
  int deployment_patches_ = 0;
};

// Twenty seconds: these wait on a manager with several threads, slow under the sanitizers.
bool eventually(const std::function<bool()>& condition) {
  return testing::eventually(condition, 20s);
}

// The Deployment GETs once the manager has settled (none for half a second).
int settled_gets(FakeApiServer& server) {
  int gets = -1;
  REQUIRE(eventually([&] {
    int before = server.deployment_gets();
    std::this_thread::sleep_for(500ms);
    gets = server.deployment_gets();
    return gets == before;
  }));
  return gets;
}

// The manager of namespace "shop" with two workers and no resync during a test.
controller::ManagerOptions test_options() {
  controller::ManagerOptions options;
  options.ns = "shop";
  options.workers = 2;
  options.resync_period = 1h;
  return options;
}

}  // namespace

TEST_CASE("manager: a listed scaler is reconciled; a hint re-checks until its write is visible") {
  FakeApiServer server;
  metrics::Registry registry;
  controller::Manager manager(server.client(), test_options(), registry);
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

TEST_CASE("manager: a recommendation whose bounds alone moved wakes the reconciler unless in Off") {
  // A status.recommendation as the recommender writes it (another leader's, or this process's
  // echo from the informer): in Off the reconciler shows the targets only.
  auto recommendation = [](const char* target, const char* upper) {
    return json{{"containerRecommendations", json::array({{{"containerName", "app"},
                                                           {"target", {{"cpu", target}}},
                                                           {"lowerBound", {{"cpu", target}}},
                                                           {"upperBound", {{"cpu", upper}}}}})}};
  };
  for (const char* mode : {"Off", "Auto"}) {
    CAPTURE(mode);
    FakeApiServer server;
    json scaler = server.scaler();
    scaler["spec"]["updateMode"] = mode;
    scaler["spec"].erase("containers");  // every container recommended
    scaler["status"]["recommendation"] = recommendation("300m", "1");
    server.update_scaler(scaler, false);
    metrics::Registry registry;
    controller::Manager manager(server.client(), test_options(), registry);
    manager.start();
    REQUIRE(eventually([&] { return manager.synced(); }));
    REQUIRE(eventually([&] { return server.deployment_gets() >= 1; }));
    int gets = settled_gets(server);
    auto stored = [&manager](const json& expected) {
      return eventually([&] {
        auto current = manager.store().get("shop/web");
        return current != nullptr && current->recommendation() == expected;
      });
    };

    // The upperBound moved, the target did not.
    scaler = server.scaler();
    scaler["status"]["recommendation"] = recommendation("300m", "2");
    server.update_scaler(scaler, true);
    REQUIRE(stored(recommendation("300m", "2")));
    if (std::string(mode) == "Off") {
      std::this_thread::sleep_for(500ms);
      CHECK(server.deployment_gets() == gets);
    } else {
      CHECK(eventually([&] { return server.deployment_gets() > gets; }));
    }

    // A new target: read in every mode.
    gets = server.deployment_gets();
    scaler = server.scaler();
    scaler["status"]["recommendation"] = recommendation("400m", "2");
    server.update_scaler(scaler, true);
    REQUIRE(stored(recommendation("400m", "2")));
    CHECK(eventually([&] { return server.deployment_gets() > gets; }));
    manager.stop();
  }
}

TEST_CASE("manager: a scaler recreated under its name at the same generation is reconciled") {
  // Deleted and created again while the watch was down: the relist reports an update, and both
  // have generation 1. Only the uid says that the spec may be another.
  FakeApiServer server;
  json scaler = server.scaler();
  scaler["spec"]["updateMode"] = "Off";
  server.update_scaler(scaler, false);
  metrics::Registry registry;
  controller::Manager manager(server.client(), test_options(), registry);
  manager.start();
  REQUIRE(eventually([&] { return manager.synced(); }));
  REQUIRE(eventually([&] { return server.deployment_gets() >= 1; }));
  const int gets = settled_gets(server);
  scaler = server.scaler();
  scaler["metadata"]["uid"] = "s-2";
  scaler["spec"]["updateMode"] = "Reconcile";
  server.update_scaler(scaler, true);
  CHECK(eventually([&] {
    auto current = manager.store().get("shop/web");
    return current != nullptr && current->uid == "s-2";
  }));
  CHECK(eventually([&] { return server.deployment_gets() > gets; }));
  // Reconciled in its new mode: the declared 250m is applied.
  CHECK(eventually([&] {
    return server.deployment()["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
                              ["cpu"] == "250m";
  }));
  manager.stop();
}
