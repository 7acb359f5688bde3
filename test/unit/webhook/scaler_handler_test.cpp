// The VerticalScaler validating hook: denials naming the field, warnings from the cluster state.
#include "webhook/scaler_handler.h"

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

using nlohmann::json;
using namespace vscaler;

namespace {

/// Serves one Deployment (or none) to the hook; the hook only reads.
class DeploymentsOnly : public controller::ReconcileApi {
 public:
  std::optional<json> deployment;
  std::vector<std::chrono::milliseconds> timeouts;  ///< of each GET
  std::vector<api::TargetRef> targets;              ///< of each GET
  controller::ApiResult get_workload(const std::string&, const api::TargetRef& target,
                                     std::chrono::milliseconds timeout = {}) override {
    timeouts.push_back(timeout);
    targets.push_back(target);
    if (!deployment) {
      return kube::fail(kube::make_error(kube::ErrorKind::kNotFound, target.name + " not found"));
    }
    return *deployment;
  }
  controller::ApiResult patch_workload(const std::string&, const api::TargetRef&,
                                       const json&) override {
    FAIL("the validating hook must not write");
    return json();
  }
  controller::ApiResult get_scaler(const std::string&, const std::string&) override {
    return json();
  }
  controller::ApiResult patch_scaler_status(const std::string&, const std::string&,
                                            const json&) override {
    FAIL("the validating hook must not write");
    return json();
  }
  void record_event(const api::Scaler&, bool, const std::string&, const std::string&) override {}
};

webhook::AdmissionRequest recorded_scaler_create() {
  std::ifstream in(std::string(VSCALER_TEST_DATA_DIR) + "/admission/verticalscaler-create.json");
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto request = webhook::parse_review(buffer.str());
  REQUIRE(request.ok());
  return *request;
}

}  // namespace

TEST_CASE("a valid scaler for a missing Deployment is allowed with a warning") {
  controller::ScalerStore store;
  DeploymentsOnly api;
  webhook::ScalerHandler handler(store, api);
  auto response = handler.handle(recorded_scaler_create());
  CHECK(response.allowed);
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0] ==
        "Deployment web does not exist yet; it is scaled once it is created");
}

TEST_CASE("an invalid spec is denied with every error naming its field") {
  controller::ScalerStore store;
  DeploymentsOnly api;
  webhook::ScalerHandler handler(store, api);
  auto request = recorded_scaler_create();
  request.object["spec"]["containers"][0]["requests"]["gpu"] = "1";
  request.object["spec"]["deploymentName"] = "Bad_Name";
  auto response = handler.handle(request);
  CHECK_FALSE(response.allowed);
  CHECK(response.status_code == 422);
  CHECK(response.status_message.find("spec.deploymentName") != std::string::npos);
  CHECK(response.status_message.find("spec.containers[0].requests.gpu") != std::string::npos);
}

TEST_CASE("a scaler whose metadata is not an object is denied with 400, not thrown (a 500)") {
  controller::ScalerStore store;
  DeploymentsOnly api;
  webhook::ScalerHandler handler(store, api);
  for (json metadata : {json("oops"), json(7), json::array()}) {
    CAPTURE(metadata);
    auto request = recorded_scaler_create();
    request.object["metadata"] = metadata;
    webhook::AdmissionResponse response;
    REQUIRE_NOTHROW(response = handler.handle(request));
    CHECK_FALSE(response.allowed);
    CHECK(response.status_code == 400);
    CHECK(response.status_message.find("metadata") != std::string::npos);
  }
}

TEST_CASE("another scaler on the same Deployment and conflicting limits are warned about") {
  controller::ScalerStore store;
  json other = {{"metadata", {{"name", "first"}, {"namespace", "record"}}},
                {"spec", {{"deploymentName", "web"}, {"containers", {{{"name", "app"}}}}}}};
  store.upsert(std::make_shared<const api::Scaler>(*api::parse_scaler(other)));
  DeploymentsOnly api;
  api.deployment = json::parse(R"({"metadata": {"name": "web"}, "spec": {"template": {"spec":
      {"containers": [{"name": "app", "resources": {"limits": {"cpu": "100m"}}}]}}}})");
  webhook::ScalerHandler handler(store, api);
  auto response = handler.handle(recorded_scaler_create());  // requests cpu 250m
  CHECK(response.allowed);
  REQUIRE(response.warnings.size() == 2);
  CHECK(response.warnings[0] ==
        "VerticalScaler first already targets Deployment web; only the oldest scaler is applied");
  CHECK(response.warnings[1].find("requests.cpu 250m would exceed limits.cpu 100m") !=
        std::string::npos);
}

TEST_CASE("the live GET is bounded by the review's deadline, and skipped when none is left") {
  using namespace std::chrono_literals;
  controller::ScalerStore store;
  DeploymentsOnly api;
  webhook::ScalerHandler handler(store, api);
  auto request = recorded_scaler_create();
  request.deadline = std::chrono::steady_clock::now() + 1s;
  handler.handle(request);
  REQUIRE(api.timeouts.size() == 1);
  CHECK(api.timeouts[0] > 0ms);
  CHECK(api.timeouts[0] <= 900ms);  // what is left, less the margin for the answer

  request.deadline = std::chrono::steady_clock::now() + 50ms;  // less than the margin
  auto response = handler.handle(request);
  CHECK(api.timeouts.size() == 1);  // no GET
  CHECK(response.allowed);
  CHECK(response.warnings.empty());

  request.deadline = {};  // unknown: bounded all the same
  handler.handle(request);
  REQUIRE(api.timeouts.size() == 2);
  CHECK(api.timeouts[1] == 2000ms);
}

TEST_CASE("lookup budget: what is left less the margin, at most 2 s") {
  using namespace std::chrono_literals;
  auto now = std::chrono::steady_clock::now();
  CHECK(webhook::lookup_budget(now + 10s, now) == 2000ms);
  CHECK(webhook::lookup_budget(now + 600ms, now) == 500ms);
  CHECK(webhook::lookup_budget(now - 1s, now) < 0ms);
  CHECK(webhook::lookup_budget({}, now) == 2000ms);
}

TEST_CASE("a StatefulSet scaler reads the StatefulSet; a Deployment of that name is no rival") {
  controller::ScalerStore store;
  json deployment_scaler = {
      {"metadata", {{"name", "first"}, {"namespace", "record"}}},
      {"spec", {{"deploymentName", "web"}, {"containers", {{{"name", "app"}}}}}}};
  store.upsert(std::make_shared<const api::Scaler>(*api::parse_scaler(deployment_scaler)));
  DeploymentsOnly api;
  webhook::ScalerHandler handler(store, api);
  auto request = recorded_scaler_create();
  request.object["spec"].erase("deploymentName");
  request.object["spec"]["targetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "web"}};
  auto response = handler.handle(request);
  CHECK(response.allowed);
  REQUIRE(api.targets.size() == 1);
  CHECK(api.targets[0] == api::TargetRef{"StatefulSet", "web"});
  REQUIRE(response.warnings.size() == 1);  // no "already targets": another workload
  CHECK(response.warnings[0] ==
        "StatefulSet web does not exist yet; it is scaled once it is created");

  request.object["spec"]["targetRef"]["kind"] = "CronJob";
  response = handler.handle(request);
  CHECK_FALSE(response.allowed);
  CHECK(response.status_message.find("spec.targetRef.kind") != std::string::npos);
}
