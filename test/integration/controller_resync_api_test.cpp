// KubeResyncApi against the real API server: a namespace's workloads are listed page by page as
// asked (metadata only), so a resync's memory is set by the page and not by the namespace. A list
// at resourceVersion 0 would come back whole from the watch cache, `limit` ignored.
#include <algorithm>
#include <string>
#include <vector>

#include "controller/kube_api.h"
#include "kube_support.h"

using namespace kube_test;
using vscaler::controller::KubeResyncApi;
using vscaler::controller::WorkloadMeta;

namespace {

// A Deployment of no replicas: nothing for a controller (on the full plane) to start.
json idle_deployment(const std::string& name) {
  json labels = {{"app", name}};
  return json{
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"replicas", 0},
        {"selector", {{"matchLabels", labels}}},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"containers",
             json::array({{{"name", "app"}, {"image", "registry.k8s.io/pause:3.10"}}})}}}}}}}};
}

}  // namespace

TEST_CASE("the resync lists a namespace's workloads in pages of the size it asks for") {
  Client client = admin_client();
  TestNamespace ns(client, "resync-pages");
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) {
    names.push_back("w" + std::to_string(i));
    auto created = client.create(resources::kDeployments, ns.name, idle_deployment(names.back()));
    REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().to_string()));
  }

  KubeResyncApi api(client, 2);
  int calls = 0;
  auto listed = api.list_workloads(ns.name, "Deployment", calls);
  REQUIRE_MESSAGE(listed.ok(), (listed.ok() ? "" : listed.error().to_string()));
  CHECK(calls == 3);  // 2 + 2 + 1
  std::vector<std::string> seen;
  for (const WorkloadMeta& meta : *listed) {
    seen.push_back(meta.name);
    CHECK_FALSE(meta.uid.empty());
    CHECK(meta.generation == 1);
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == names);

  for (const auto& name : names) (void)client.remove(resources::kDeployments, ns.name, name);
}
