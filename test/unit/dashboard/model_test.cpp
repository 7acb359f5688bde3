// build_model: per namespace and scaler the template beside the recommendation, the last change
// and its cause, deferrals, unhealthy conditions and the signed totals.
#include "dashboard/model.h"

#include <doctest/doctest.h>

#include "test/unit/dashboard/fixtures.h"

using nlohmann::json;
using vscaler::dashboard::build_model;
using vscaler::dashboard::find_time;
using vscaler::dashboard::History;
using vscaler::dashboard::ViewCache;
using vscaler::dashboard::testing::scaler;
using vscaler::dashboard::testing::status_with;

namespace {
// `n` MiB in nano-units.
vscaler::kube::Int128 mib(long long n) {
  return vscaler::kube::Int128(n) * 1024 * 1024 * 1'000'000'000;
}
}  // namespace

TEST_CASE("dashboard model: namespaces and scalers sorted, values beside the recommendation") {
  auto over = scaler("shop", "web", {{"deploymentName", "web"}},
                     status_with("app", {{"cpu", "500m"}, {"memory", "512Mi"}},
                                 {{"cpu", "200m"}, {"memory", "256Mi"}}));
  auto under = scaler("shop", "api", {{"deploymentName", "api"}, {"updateMode", "Off"}},
                      status_with("app", {{"cpu", "300m"}, {"memory", "128Mi"}},
                                  {{"cpu", "300m"}, {"memory", "128Mi"}}));
  auto other = scaler("blog", "www", {{"deploymentName", "www"}},
                      status_with("nginx", {{"cpu", "1"}}, {{"cpu", "1"}}));
  // In Off the status shows what would be applied (300m); the template (100m) comes from its
  // listing.
  vscaler::dashboard::OffTemplates templates;
  templates.resources["shop/Deployment/api"]["app"] = {
      {"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}};
  History history;
  auto model =
      build_model({over, under, other}, history, "2026-12-01T12:00:00Z", nullptr, &templates);
  CHECK(model.scaler_count == 3);
  CHECK(model.generated_at == "2026-12-01T12:00:00Z");
  REQUIRE(model.namespaces.size() == 2);
  CHECK(model.namespaces[0].name == "blog");
  const auto& shop = model.namespaces[1];
  REQUIRE(shop.scalers.size() == 2);
  CHECK(shop.scalers[0]->name == "api");
  CHECK(shop.scalers[0]->mode == "Off");
  const auto& web = *shop.scalers[1];
  CHECK(web.target == "Deployment/web");
  CHECK(web.mode == "Auto");
  REQUIRE(web.containers.size() == 1);
  const auto& app = web.containers[0];
  CHECK(app.name == "app");
  CHECK(app.policy == "recommended");
  CHECK(app.requests.cpu->to_string() == "500m");
  CHECK(app.target.memory->to_string() == "256Mi");
  CHECK(app.lower_bound.cpu->to_string() == "200m");

  // Savings are signed: web asks 300m/256Mi too much, api 200m too little.
  CHECK(web.totals.savings_cpu() == 300'000'000);
  CHECK(web.totals.savings_memory() == mib(256));
  CHECK(shop.scalers[0]->totals.savings_cpu() == -200'000'000);
  CHECK(shop.totals.savings_cpu() == 100'000'000);
  CHECK(shop.totals.requested_cpu == 600'000'000);
  CHECK(shop.totals.recommended_cpu == 500'000'000);
  CHECK(model.totals.requested_cpu == 1'600'000'000);
  CHECK(model.totals.savings_cpu() == 100'000'000);
}

TEST_CASE("dashboard model: a scaler in Off is shown against its template, never its status") {
  // Off: the status carries what would be applied (the recommendation, 300m); the template asks
  // 1 CPU. Before, the page read the status as the template and showed no saving at all.
  auto off = scaler("shop", "api", {{"deploymentName", "api"}, {"updateMode", "Off"}},
                    status_with("app", {{"cpu", "300m"}}, {{"cpu", "300m"}}));
  auto unlisted = build_model({off}, History(), "now");
  const auto& unknown = unlisted.namespaces[0].scalers[0]->containers[0];
  CHECK_FALSE(unknown.template_known);
  CHECK(unknown.requests.empty());
  CHECK(unlisted.totals.requested_cpu == 0);
  CHECK(unlisted.totals.recommended_cpu == 0);  // nothing to compare with: left out

  vscaler::dashboard::OffTemplates templates;
  templates.resources["shop/Deployment/api"]["app"] = {{"requests", {{"cpu", "1"}}},
                                                       {"limits", {{"cpu", "2"}}}};
  templates.version = 1;
  ViewCache cache;
  build_model({off}, History(), "now", &cache);  // cached before the listing
  auto listed = build_model({off}, History(), "now", &cache, &templates);
  const auto& app = listed.namespaces[0].scalers[0]->containers[0];
  CHECK(app.template_known);
  CHECK(app.requests.cpu->to_string() == "1");
  CHECK(app.limits.cpu->to_string() == "2");
  CHECK(listed.totals.savings_cpu() == 700'000'000);

  // A limit without a request is the request the API server gives the container, as the report
  // counts it: 2 CPUs asked, 300m recommended.
  templates.resources["shop/Deployment/api"]["app"] = {{"limits", {{"cpu", "2"}}}};
  templates.version = 2;
  auto limit_only = build_model({off}, History(), "now", &cache, &templates);
  CHECK(limit_only.totals.requested_cpu == 2'000'000'000);
  CHECK(limit_only.totals.savings_cpu() == 1'700'000'000);
}

TEST_CASE("dashboard model: fixed values count as neither saving nor missing") {
  json spec{{"deploymentName", "web"},
            {"containers", json::array({{{"name", "app"}, {"requests", {{"cpu", "250m"}}}}})}};
  auto fixed = scaler("shop", "web", spec, status_with("app", {{"cpu", "250m"}}, {{"cpu", "50m"}}));
  auto model = build_model({fixed}, History(), "now");
  const auto& app = model.namespaces[0].scalers[0]->containers[0];
  CHECK(app.policy == "fixed");
  CHECK(model.totals.requested_cpu == 250'000'000);
  CHECK(model.totals.recommended_cpu == 250'000'000);
  CHECK(model.totals.savings_cpu() == 0);
}

TEST_CASE("dashboard model: last change from status, deferral with its time, problems") {
  json status = status_with("app", {{"cpu", "500m"}}, {{"cpu", "200m"}});
  status["lastScaleTime"] = "2026-12-01T10:00:00Z";
  status["lastRecommendationUpdateTime"] = "2026-12-01T10:00:00Z";
  status["conditions"] = json::array(
      {{{"type", "Ready"}, {"status", "True"}, {"reason", "UpToDate"}, {"message", ""}},
       {{"type", "Scaled"},
        {"status", "False"},
        {"reason", "Deferred"},
        {"message", "app cpu out of bounds; next change allowed at 2026-12-01T10:10:00Z"}},
       {{"type", "TargetFound"},
        {"status", "False"},
        {"reason", "NotFound"},
        {"message", "Deployment web not found"}}});
  auto model =
      build_model({scaler("shop", "web", {{"deploymentName", "web"}}, status)}, History(), "now");
  const auto& web = *model.namespaces[0].scalers[0];
  REQUIRE(web.last_change);
  CHECK(web.last_change->time == "2026-12-01T10:00:00Z");
  CHECK(web.last_change->cause == "bounds");
  REQUIRE(web.deferral);
  CHECK(web.deferral->until == "2026-12-01T10:10:00Z");
  REQUIRE(web.problems.size() == 1);  // Ready=True is healthy, the deferral is shown apart
  CHECK(web.problems[0].type == "TargetFound");
  CHECK(web.problems[0].reason == "NotFound");

  // A scale that is not the recommendation's, with fixed values: "fixed value".
  json fixed_spec{{"deploymentName", "web"},
                  {"containers", json::array({{{"name", "app"}, {"requests", {{"cpu", "1"}}}}})}};
  status["lastRecommendationUpdateTime"] = "2026-11-30T10:00:00Z";
  auto fixed = build_model({scaler("shop", "web", fixed_spec, status)}, History(), "now");
  CHECK(fixed.namespaces[0].scalers[0]->last_change->cause == "fixed value");
}

TEST_CASE("dashboard model: a scaler without status shows its target from the spec") {
  auto fresh = scaler("shop", "web", {{"deploymentName", "web"}}, json::object());
  auto model = build_model({fresh}, History(), "now");
  const auto& web = *model.namespaces[0].scalers[0];
  CHECK(web.target == "Deployment/web");
  CHECK(web.containers.empty());
  CHECK_FALSE(web.last_change);
  CHECK(web.totals.requested_cpu == 0);
}

TEST_CASE("dashboard model: find_time picks the RFC 3339 time out of a message") {
  CHECK(find_time("applies at 2026-12-01T10:10:00Z.") == "2026-12-01T10:10:00Z");
  CHECK(find_time("not before 2026-12-01T10:10:00.5+01:00, then") == "2026-12-01T10:10:00.5+01:00");
  CHECK(find_time("applies at the next template change") == "");
  CHECK(find_time("2026-12-01T10:10:0") == "");
}

TEST_CASE("dashboard model: the view cache reuses a view until the scaler or its history moves") {
  json status = status_with("app", {{"cpu", "500m"}}, {{"cpu", "200m"}});
  auto v1 = scaler("shop", "web", {{"deploymentName", "web"}}, status, "1");
  History history;
  ViewCache cache;
  history.observe({v1}, 100);
  auto first = build_model({v1}, history, "now", &cache);
  auto again = build_model({v1}, history, "now", &cache);
  CHECK(first.namespaces[0].scalers[0] == again.namespaces[0].scalers[0]);  // the same view

  status["containers"][0]["requests"]["cpu"] = "300m";
  auto v2 = scaler("shop", "web", {{"deploymentName", "web"}}, status, "2");
  history.observe({v2}, 200);
  auto changed = build_model({v2}, history, "now", &cache);
  CHECK(changed.namespaces[0].scalers[0] != first.namespaces[0].scalers[0]);
  CHECK(changed.namespaces[0].scalers[0]->containers[0].requests.cpu->to_string() == "300m");
  CHECK(cache.size() == 1);
  build_model({}, history, "now", &cache);  // the scaler is gone
  CHECK(cache.size() == 0);
}

TEST_CASE("dashboard model: the Guaranteed and Burstable YAML a person copies") {
  json status = status_with("app", {{"cpu", "500m"}, {"memory", "512Mi"}},
                            {{"cpu", "250m"}, {"memory", "489Mi"}});
  auto& rec = status["recommendation"]["containerRecommendations"][0];
  rec["lowerBound"] = {{"cpu", "180m"}, {"memory", "400Mi"}};
  rec["upperBound"] = {{"cpu", "1200m"}, {"memory", "1Gi"}};
  auto model =
      build_model({scaler("shop", "web", {{"deploymentName", "web"}}, status)}, History(), "t");
  const auto& app = model.namespaces[0].scalers[0]->containers[0];
  const auto copy = vscaler::dashboard::copy_suggestions(app);
  CHECK(copy.guaranteed ==
        "resources:\n  requests:\n    cpu: 250m\n    memory: 489Mi\n"
        "  limits:\n    cpu: 250m\n    memory: 489Mi\n");
  CHECK(copy.burstable ==
        "resources:\n  requests:\n    cpu: 180m\n    memory: 400Mi\n"
        "  limits:\n    cpu: 1200m\n    memory: 1Gi\n");

  // Only cpu recommended: no memory key; no recommendation: nothing to copy.
  vscaler::dashboard::ContainerView cpu_only;
  cpu_only.target.cpu = vscaler::kube::Quantity::parse("100m").value();
  CHECK(vscaler::dashboard::copy_suggestions(cpu_only).guaranteed ==
        "resources:\n  requests:\n    cpu: 100m\n  limits:\n    cpu: 100m\n");
  CHECK(vscaler::dashboard::copy_suggestions({}).guaranteed.empty());
}
