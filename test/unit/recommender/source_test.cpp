// The metrics source's pure parts: the workload parse (uid, selector, template requests), the
// supported kinds, and which API answers count as "no metrics API" (NoMetrics) rather than a
// failure.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "kube/errors.h"
#include "recommender/metrics_source.h"
#include "recommender/workload.h"

using namespace vscaler::recommender;
using nlohmann::json;

namespace {

json deployment() {
  return json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
    "spec": {"selector": {"matchLabels": {"app": "web"},
                          "matchExpressions": [{"key": "track", "operator": "NotIn",
                                                "values": ["canary"]}]},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [
                            {"name": "app", "resources": {"requests": {"cpu": "100m",
                                                                       "memory": "128Mi"},
                                                          "limits": {"memory": "1Gi"}}},
                            {"name": "sidecar"}]}}}})");
}

}  // namespace

TEST_CASE("parse_workload reads uid, the selector query and the template's resources") {
  auto info = parse_workload(deployment(), "Deployment");
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error()));
  CHECK(info->ref.kind == "Deployment");
  CHECK(info->ref.name == "web");
  CHECK(info->ref.uid == "u-1");
  CHECK(info->selector == "app=web,track notin (canary)");
  REQUIRE(info->template_containers.size() == 2);
  CHECK(info->template_containers[0].name == "app");
  CHECK(info->template_containers[0].requests.at("cpu").to_double() == doctest::Approx(0.1));
  CHECK(info->template_containers[0].limits.at("memory").to_double() == 1024.0 * 1024 * 1024);
  CHECK(info->template_containers[1].requests.empty());
}

TEST_CASE("parse_workload names the field that is wrong") {
  auto no_uid = deployment();
  no_uid["metadata"].erase("uid");
  auto a = parse_workload(no_uid, "Deployment");
  REQUIRE_FALSE(a.ok());
  CHECK(a.error() == "metadata.uid: is required");

  auto empty_selector = deployment();
  empty_selector["spec"]["selector"] = json::object();
  auto b = parse_workload(empty_selector, "Deployment");
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().rfind("spec.selector: ", 0) == 0);

  auto bad_quantity = deployment();
  bad_quantity["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "x";
  auto c = parse_workload(bad_quantity, "Deployment");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().rfind("spec.template.spec.containers[0].resources.requests.cpu: ", 0) == 0);
}

TEST_CASE("workload_resource knows the apps/v1 workload kinds only") {
  REQUIRE(workload_resource("Deployment") != nullptr);
  CHECK(workload_resource("Deployment")->path("ns", "w") ==
        "/apis/apps/v1/namespaces/ns/deployments/w");
  CHECK(workload_resource("StatefulSet")->path("ns", "w") ==
        "/apis/apps/v1/namespaces/ns/statefulsets/w");
  CHECK(workload_resource("DaemonSet")->path("ns", "w") ==
        "/apis/apps/v1/namespaces/ns/daemonsets/w");
  CHECK(workload_resource("ReplicaSet") == nullptr);
  CHECK(workload_resource("deployment") == nullptr);
}

TEST_CASE("404 and 503 from the metrics API mean NoMetrics; other answers are failures") {
  using vscaler::kube::error_from_response;
  CHECK(is_metrics_unavailable(error_from_response(404, "404 page not found")));
  CHECK(is_metrics_unavailable(error_from_response(
      503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable",)"
           R"("message":"the server is currently unable to handle the request"})")));
  CHECK_FALSE(is_metrics_unavailable(error_from_response(403, "forbidden")));
  CHECK_FALSE(is_metrics_unavailable(error_from_response(500, "boom")));
  CHECK_FALSE(is_metrics_unavailable(
      vscaler::kube::make_error(vscaler::kube::ErrorKind::kTransport, "connection refused")));
  CHECK(kPodMetrics.path("shop") == "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods");
  SourceError error{SourceErrorKind::kMetricsUnavailable, "list pods.metrics.k8s.io in shop: x",
                    std::nullopt};
  CHECK(error.to_string() == "MetricsUnavailable: list pods.metrics.k8s.io in shop: x");
}
