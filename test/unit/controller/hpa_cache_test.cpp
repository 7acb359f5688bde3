// hpa_warnings and HpaCache: an HPA on cpu or memory of the same target warns; on other metrics
// or another target it does not; the cache keeps only those, per namespace, and says which
// namespaces changed.
#include "controller/hpa_cache.h"

#include <doctest/doctest.h>

using nlohmann::json;
using vscaler::controller::hpa_warnings;
using vscaler::controller::HpaCache;

TEST_CASE("an HPA scaling the same Deployment on cpu (Resource) or memory (ContainerResource)") {
  json list = json::parse(R"({"items": [
    {"metadata": {"name": "cpu-hpa"}, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1",
     "kind": "Deployment", "name": "web"}, "metrics": [{"type": "Resource", "resource":
     {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]}},
    {"metadata": {"name": "mem-hpa"}, "spec": {"scaleTargetRef": {"kind": "Deployment",
     "name": "web"}, "metrics": [{"type": "ContainerResource", "containerResource":
     {"name": "memory", "container": "app"}}, {"type": "Resource", "resource": {"name": "cpu"}}]}},
    {"metadata": {"name": "qps"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
     "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}}}]}},
    {"metadata": {"name": "other"}, "spec": {"scaleTargetRef": {"kind": "Deployment",
     "name": "api"}, "metrics": [{"type": "Resource", "resource": {"name": "cpu"}}]}},
    {"metadata": {"name": "broken"}, "spec": 5}]})");
  auto warnings = hpa_warnings(list, "Deployment", "web");
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0] ==
        "HorizontalPodAutoscaler cpu-hpa scales Deployment web on cpu: it and vscaler would fight "
        "over the same usage");
  CHECK(warnings[1].find("mem-hpa scales Deployment web on memory and cpu") != std::string::npos);
  for (const auto& warning : warnings) CHECK(warning.size() < 120);
  CHECK(hpa_warnings(json::object(), "Deployment", "web").empty());
}

TEST_CASE("the cache answers per namespace and workload, and reports the namespaces that changed") {
  auto hpa = [](const char* ns, const char* name, const char* kind, const char* target,
                const char* resource) {
    return std::make_shared<const json>(
        json{{"metadata", {{"namespace", ns}, {"name", name}}},
             {"spec",
              {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", kind}, {"name", target}}},
               {"metrics", {{{"type", "Resource"}, {"resource", {{"name", resource}}}}}}}}});
  };
  HpaCache cache;
  std::vector<std::string> changed;
  cache.rebuild({hpa("shop", "web-cpu", "Deployment", "web", "cpu"),
                 hpa("shop", "api-qps", "Deployment", "api", "qps"),
                 hpa("ops", "db", "StatefulSet", "db", "memory"), nullptr},
                &changed);
  CHECK(changed == std::vector<std::string>{"ops", "shop"});
  REQUIRE(cache.warnings("shop", "Deployment", "web").size() == 1);
  CHECK(cache.warnings("shop", "Deployment", "web")[0].starts_with(
      "HorizontalPodAutoscaler web-cpu scales Deployment web on cpu"));
  CHECK(cache.warnings("shop", "Deployment", "api").empty());       // not on cpu or memory
  CHECK(cache.warnings("shop", "StatefulSet", "web").empty());      // another kind
  CHECK(cache.warnings("elsewhere", "Deployment", "web").empty());  // another namespace
  CHECK(cache.warnings("ops", "StatefulSet", "db").size() == 1);
  changed.clear();
  cache.rebuild({hpa("shop", "web-cpu", "Deployment", "web", "cpu")}, &changed);
  CHECK(changed == std::vector<std::string>{"ops"});  // shop is as it was; ops lost its HPA
  CHECK(cache.warnings("ops", "StatefulSet", "db").empty());
}
