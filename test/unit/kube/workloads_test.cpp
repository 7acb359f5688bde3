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

TEST_CASE("a pod's workload comes from its controller owner and pod-template-hash alone") {
  auto pod = [](const char* kind, const char* name, const char* hash) {
    json object = {{"metadata",
                    {{"ownerReferences", json::array({{{"apiVersion", "apps/v1"},
                                                       {"kind", kind},
                                                       {"name", name},
                                                       {"controller", true}}})}}}};
    if (hash != nullptr) object["metadata"]["labels"]["pod-template-hash"] = hash;
    return object;
  };
  PodWorkload web = workload_of_pod(pod("ReplicaSet", "web-7d9c5b", "7d9c5b"));
  CHECK(web.kind == "Deployment");
  CHECK(web.name == "web");
  // A Deployment whose own name ends in a dash-and-hash-like part keeps it.
  CHECK(workload_of_pod(pod("ReplicaSet", "api-v2-66f9", "66f9")).name == "api-v2");
  CHECK(workload_of_pod(pod("StatefulSet", "db", nullptr)).kind == "StatefulSet");
  CHECK(workload_of_pod(pod("StatefulSet", "db", nullptr)).name == "db");
  CHECK(workload_of_pod(pod("DaemonSet", "agent", nullptr)).kind == "DaemonSet");
  for (const json& other :
       {pod("ReplicaSet", "web-7d9c5b", "other"), pod("ReplicaSet", "web7d9c5b", "7d9c5b"),
        pod("ReplicaSet", "-7d9c5b", "7d9c5b"), pod("ReplicaSet", "web-7d9c5b", nullptr),
        pod("ReplicaSet", "web-7d9c5b", ""), pod("Job", "batch", nullptr),
        pod("Deployment", "web", nullptr), json::object(), json::array()}) {
    CAPTURE(other.dump());
    CHECK(workload_of_pod(other).kind.empty());
  }
  json not_apps = pod("StatefulSet", "db", nullptr);
  not_apps["metadata"]["ownerReferences"][0]["apiVersion"] = "apps.kruise.io/v1beta1";
  CHECK(workload_of_pod(not_apps).kind.empty());
  json not_controller = pod("StatefulSet", "db", nullptr);
  not_controller["metadata"]["ownerReferences"][0]["controller"] = false;
  CHECK(workload_of_pod(not_controller).kind.empty());
}
