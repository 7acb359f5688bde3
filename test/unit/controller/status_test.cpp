// build_status: the status a reconcile report becomes — the kind-neutral target (whose ref feeds
// the TARGET printer column) beside the Deployment fields earlier versions wrote, TargetFound
// beside DeploymentFound, and no change (no write) for an unchanged report.
#include "controller/status.h"

#include <doctest/doctest.h>

using nlohmann::json;
using vscaler::controller::build_status;
using vscaler::controller::StatusReport;
namespace condition = vscaler::controller::condition;
namespace reason = vscaler::controller::reason;

namespace {

StatusReport found_report() {
  StatusReport report;
  report.target = {"Deployment", "web"};
  report.target_uid = "u-1";
  report.target_found = true;
  report.conditions.push_back(
      {condition::kTargetFound, true, reason::kFound, "Deployment web exists"});
  return report;
}

const json* find_condition(const json& status, const std::string& type) {
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("status.target names kind and name for the TARGET column; status.deployment stays") {
  json status = build_status(json::object(), 3, found_report(), "2026-12-01T00:00:00Z");
  CHECK(status["target"] == json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment",
      "name": "web", "uid": "u-1", "found": true, "ref": "Deployment/web"})"));
  CHECK(status["deployment"] == json::parse(R"({"name": "web", "uid": "u-1", "found": true})"));
  CHECK(status["observedGeneration"] == 3);
}

TEST_CASE("TargetFound is written beside DeploymentFound with the same status and reason") {
  StatusReport report = found_report();
  report.target_found = false;
  report.target_uid.clear();
  report.conditions = {{condition::kTargetFound, false, reason::kNotFound, "gone"}};
  json status = build_status(json::object(), 1, report, "2026-12-01T00:00:00Z");
  const json* target_found = find_condition(status, condition::kTargetFound);
  const json* deployment_found = find_condition(status, condition::kDeploymentFound);
  REQUIRE(target_found != nullptr);
  REQUIRE(deployment_found != nullptr);
  CHECK((*target_found)["status"] == "False");
  CHECK((*target_found)["reason"] == "NotFound");
  CHECK((*target_found)["message"] == "gone");
  CHECK_FALSE(status["target"].contains("uid"));
  CHECK(status["target"]["found"] == false);
}

TEST_CASE("an unchanged report rebuilds a byte-identical status (so nothing is written)") {
  json first = build_status(json::object(), 2, found_report(), "2026-12-01T00:00:00Z");
  json second = build_status(first, 2, found_report(), "2026-12-01T00:05:00Z");
  CHECK(second == first);
}

TEST_CASE(
    "a StatefulSet target: status.target names it; no status.deployment, no DeploymentFound") {
  // Retargeted from a Deployment: what was written for it goes.
  json stored = build_status(json::object(), 1, found_report(), "2026-12-01T00:00:00Z");
  StatusReport report;
  report.target = {"StatefulSet", "db"};
  report.target_uid = "u-2";
  report.target_found = true;
  report.conditions = {{condition::kTargetFound, true, reason::kFound, "StatefulSet db exists"}};
  json status = build_status(stored, 2, report, "2026-12-01T00:01:00Z");
  CHECK(status["target"] == json::parse(R"({"apiVersion": "apps/v1", "kind": "StatefulSet",
      "name": "db", "uid": "u-2", "found": true, "ref": "StatefulSet/db"})"));
  CHECK_FALSE(status.contains("deployment"));
  CHECK(find_condition(status, condition::kDeploymentFound) == nullptr);
  REQUIRE(find_condition(status, condition::kTargetFound) != nullptr);
  CHECK((*find_condition(status, condition::kTargetFound))["message"] == "StatefulSet db exists");
}
