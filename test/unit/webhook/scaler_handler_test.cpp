// The VerticalScaler validating hook: denials naming the field, warnings from memory only (it
// has no API client to read with: a forged review must make vscaler read nothing).
#include "webhook/scaler_handler.h"

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

#include "api/namespace_scalers.h"

using nlohmann::json;
using namespace vscaler;

namespace {

webhook::AdmissionRequest recorded_scaler_create() {
  std::ifstream in(std::string(VSCALER_TEST_DATA_DIR) + "/admission/verticalscaler-create.json");
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto request = webhook::parse_review(buffer.str());
  REQUIRE(request.ok());
  return *request;
}

}  // namespace

TEST_CASE("a valid scaler is allowed without a warning: what needs a read goes to status") {
  controller::ScalerStore store;
  webhook::ScalerHandler handler(store);
  auto response = handler.handle(recorded_scaler_create());
  CHECK(response.allowed);
  CHECK(response.warnings.empty());
}

TEST_CASE("an invalid spec is denied with every error naming its field") {
  controller::ScalerStore store;
  webhook::ScalerHandler handler(store);
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
  webhook::ScalerHandler handler(store);
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

TEST_CASE("another scaler on the same Deployment is warned about, from memory") {
  controller::ScalerStore store;
  json other = {{"metadata", {{"name", "first"}, {"namespace", "record"}}},
                {"spec", {{"deploymentName", "web"}, {"containers", {{{"name", "app"}}}}}}};
  store.upsert(std::make_shared<const api::Scaler>(*api::parse_scaler(other)));
  webhook::ScalerHandler handler(store);
  auto response = handler.handle(recorded_scaler_create());
  CHECK(response.allowed);
  REQUIRE(response.warnings.size() == 1);
  CHECK(response.warnings[0] ==
        "VerticalScaler first already targets Deployment web; only the oldest scaler is applied");
}

TEST_CASE("the scaler vscaler made for an opted-in namespace is no rival to a person's") {
  controller::ScalerStore store;
  json made = {
      {"metadata",
       {{"name", "vsc-deployment-web"},
        {"namespace", "record"},
        {"labels", {{std::string(api::kManagedByLabel), std::string(api::kManagedByNamespace)}}}}},
      {"spec", {{"deploymentName", "web"}, {"updateMode", "Off"}}}};
  store.upsert(std::make_shared<const api::Scaler>(*api::parse_scaler(made)));
  webhook::ScalerHandler handler(store);
  auto response = handler.handle(recorded_scaler_create());
  CHECK(response.allowed);
  CHECK(response.warnings.empty());  // the person's wins; the made one is deleted
}

TEST_CASE("a forged review naming another namespace in its object learns nothing of it") {
  controller::ScalerStore store;
  json other = {{"metadata", {{"name", "first"}, {"namespace", "victim"}}},
                {"spec", {{"deploymentName", "web"}, {"containers", {{{"name", "app"}}}}}}};
  store.upsert(std::make_shared<const api::Scaler>(*api::parse_scaler(other)));
  webhook::ScalerHandler handler(store);
  auto request = recorded_scaler_create();  // request.namespace "record"
  request.object["metadata"]["namespace"] = "victim";
  auto response = handler.handle(request);
  CHECK(response.allowed);
  CHECK(response.warnings.empty());
  // No namespace in the request: the API server always sends a namespaced object's.
  request.namespace_name.clear();
  response = handler.handle(request);
  CHECK(response.allowed);
  CHECK(response.warnings.empty());
  // Nor in the object: the empty request namespace would be its own.
  request.object["metadata"].erase("namespace");
  response = handler.handle(request);
  CHECK(response.allowed);
  CHECK(response.warnings.empty());
}

TEST_CASE("a StatefulSet scaler: a Deployment scaler of that name is no rival") {
  controller::ScalerStore store;
  json deployment_scaler = {
      {"metadata", {{"name", "first"}, {"namespace", "record"}}},
      {"spec", {{"deploymentName", "web"}, {"containers", {{{"name", "app"}}}}}}};
  store.upsert(std::make_shared<const api::Scaler>(*api::parse_scaler(deployment_scaler)));
  webhook::ScalerHandler handler(store);
  auto request = recorded_scaler_create();
  request.object["spec"].erase("deploymentName");
  request.object["spec"]["targetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "web"}};
  auto response = handler.handle(request);
  CHECK(response.allowed);
  CHECK(response.warnings.empty());  // no "already targets": another workload

  request.object["spec"]["targetRef"]["kind"] = "CronJob";
  response = handler.handle(request);
  CHECK_FALSE(response.allowed);
  CHECK(response.status_message.find("spec.targetRef.kind") != std::string::npos);
}
