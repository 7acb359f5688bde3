// blind_restore: which scalers' restoring patch can be built without reading the workload, what
// it holds, and how its answer's generation is judged.
#include "controller/blind_restore.h"

#include <doctest/doctest.h>

using nlohmann::json;
using namespace vscaler::api;
using namespace vscaler::controller;

namespace {

Scaler scaler_of(const char* spec) {
  json object = {{"metadata", {{"name", "web"}, {"namespace", "shop"}, {"generation", 1}}},
                 {"spec", json::parse(spec)}};
  auto parsed = parse_scaler(object);
  REQUIRE(parsed.ok());
  return *parsed;
}

}  // namespace

TEST_CASE("a Reconcile-mode scaler of fixed values for named containers: every declared key") {
  auto patch = blind_restore_patch(scaler_of(R"({"deploymentName": "web", "updateMode": "Reconcile",
    "containers": [{"name": "app", "requests": {"cpu": "250m", "memory": "128Mi"}},
                   {"name": "side", "mode": "Off"},
                   {"name": "proxy", "limits": {"cpu": "1"}}]})"));
  REQUIRE(patch.has_value());
  CHECK(*patch == json::parse(R"({"spec": {"template": {"spec": {"containers": [
    {"name": "app", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}},
    {"name": "proxy", "resources": {"limits": {"cpu": "1"}}}]}}}})"));
}

TEST_CASE("no blind patch when the workload decides what it holds") {
  const char* specs[] = {
      // Auto: the hook already set the values in the write.
      R"({"deploymentName": "web", "updateMode": "Auto",
          "containers": [{"name": "app", "requests": {"cpu": "250m"}}]})",
      // "*": which containers it covers is in the workload.
      R"({"deploymentName": "web", "updateMode": "Reconcile",
          "containers": [{"name": "*", "requests": {"cpu": "250m"}}]})",
      // Scaled from usage: the values depend on the current ones.
      R"({"deploymentName": "web", "updateMode": "Reconcile",
          "containers": [{"name": "app", "requests": {"cpu": "250m"}}, {"name": "side"}]})",
      // No containers: every container from usage.
      R"({"deploymentName": "web", "updateMode": "Reconcile"})",
      // Only Off entries: nothing to write.
      R"({"deploymentName": "web", "updateMode": "Reconcile",
          "containers": [{"name": "app", "mode": "Off"}]})",
  };
  for (const char* spec : specs) {
    CAPTURE(spec);
    CHECK_FALSE(blind_restore_patch(scaler_of(spec)).has_value());
  }
}

TEST_CASE("only a hinted UPDATE's expectation alone lets the PATCH stand in for the read") {
  Expectation update;
  update.min_generation_exclusive = 4;
  CHECK(blind_restore_applies(update));
  Expectation create = update;
  create.must_exist = true;
  CHECK_FALSE(blind_restore_applies(create));
  Expectation deleted = update;
  deleted.gone_uid = "u1";
  CHECK_FALSE(blind_restore_applies(deleted));
  CHECK_FALSE(blind_restore_applies(Expectation{}));
}

TEST_CASE("the answer's generation says whether the restore wrote") {
  CHECK_FALSE(blind_restore_wrote(4, 4));  // the hinted write not stored yet
  CHECK_FALSE(blind_restore_wrote(4, 5));  // stored; it left the values alone
  CHECK(blind_restore_wrote(4, 6));        // stored, and the restore wrote after it
}
