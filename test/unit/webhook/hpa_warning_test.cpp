// hpa_warnings: an HPA on cpu or memory of the same target warns; on other metrics or another
// target it does not.
#include "webhook/hpa_warning.h"

#include <doctest/doctest.h>

using nlohmann::json;
using vscaler::webhook::hpa_warnings;

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
