// The table of workload kinds: each kind's API resource and back, and the OnDelete rule.
#include "kube/workloads.h"

#include <doctest/doctest.h>

using nlohmann::json;
using namespace vscaler::kube;

TEST_CASE("each supported kind has its apps/v1 resource, and a review's resource names its kind") {
  REQUIRE(workload_kinds().size() == 3);
  CHECK(workload_kinds()[0].kind == "Deployment");
  CHECK(workload_resource("Deployment")->path("ns", "web") ==
        "/apis/apps/v1/namespaces/ns/deployments/web");
  CHECK(workload_resource("StatefulSet")->path("ns", "db") ==
        "/apis/apps/v1/namespaces/ns/statefulsets/db");
  CHECK(workload_resource("DaemonSet")->path("ns", "agent") ==
        "/apis/apps/v1/namespaces/ns/daemonsets/agent");
  for (const char* kind : {"ReplicaSet", "CronJob", "statefulset", ""}) {
    CAPTURE(kind);
    CHECK(workload_resource(kind) == nullptr);
  }
  CHECK(workload_kind_of("apps", "deployments") == "Deployment");
  CHECK(workload_kind_of("apps", "statefulsets") == "StatefulSet");
  CHECK(workload_kind_of("apps", "daemonsets") == "DaemonSet");
  CHECK(workload_kind_of("apps", "replicasets").empty());
  CHECK(workload_kind_of("extensions", "deployments").empty());
  CHECK(workload_kind_of("", "pods").empty());
}

TEST_CASE("only updateStrategy OnDelete leaves running pods to be replaced when deleted") {
  CHECK(
      updates_only_on_delete(json::parse(R"({"spec": {"updateStrategy": {"type": "OnDelete"}}})")));
  CHECK_FALSE(updates_only_on_delete(
      json::parse(R"({"spec": {"updateStrategy": {"type": "RollingUpdate"}}})")));
  CHECK_FALSE(
      updates_only_on_delete(json::parse(R"({"spec": {"strategy": {"type": "Recreate"}}})")));
  CHECK_FALSE(updates_only_on_delete(json::parse(R"({"spec": {"updateStrategy": "OnDelete"}})")));
  CHECK_FALSE(updates_only_on_delete(json()));
}
