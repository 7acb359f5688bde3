// render_html / render_json / render_chart and the formatting helpers: the values and totals
// shown, every name and message escaped, no external asset, the namespace filter.
#include "dashboard/render.h"

#include <doctest/doctest.h>

#include "dashboard/format.h"
#include "test/unit/dashboard/fixtures.h"

using nlohmann::json;
using vscaler::dashboard::build_model;
using vscaler::dashboard::format_cpu;
using vscaler::dashboard::format_memory;
using vscaler::dashboard::format_signed_cpu;
using vscaler::dashboard::format_signed_memory;
using vscaler::dashboard::History;
using vscaler::dashboard::html_escape;
using vscaler::dashboard::render_chart;
using vscaler::dashboard::render_html;
using vscaler::dashboard::render_json;
using vscaler::dashboard::testing::scaler;
using vscaler::dashboard::testing::status_with;

TEST_CASE("dashboard format: escaping and amounts") {
  CHECK(html_escape("<b>a&b</b> \"q\" 'x'") ==
        "&lt;b&gt;a&amp;b&lt;/b&gt; &quot;q&quot; &#39;x&#39;");
  CHECK(format_cpu(250'000'000) == "250m");
  CHECK(format_cpu(1'000'000'000) == "1");
  CHECK(format_cpu(1'500'000'000) == "1.5");
  CHECK(format_cpu(1) == "1m");  // rounded up to a millicore
  CHECK(format_cpu(0) == "0");
  CHECK(format_signed_cpu(-300'000'000) == "-300m");
  CHECK(format_signed_cpu(2'250'000'000) == "+2.25");
  vscaler::kube::Int128 mi = vscaler::kube::Int128(1024 * 1024) * 1'000'000'000;
  CHECK(format_memory(512 * mi) == "512Mi");
  CHECK(format_memory(1280 * mi) == "1.25Gi");
  CHECK(format_signed_memory(-64 * mi) == "-64Mi");
  CHECK(format_signed_memory(0) == "0");
}

TEST_CASE("dashboard html: scalers, values, totals; names and messages escaped") {
  json status = status_with("app", {{"cpu", "500m"}, {"memory", "512Mi"}},
                            {{"cpu", "200m"}, {"memory", "256Mi"}});
  status["containers"][0]["limits"] = {{"cpu", "1"}};
  status["conditions"] = json::array({{{"type", "Ready"},
                                       {"status", "False"},
                                       {"reason", "Conflict"},
                                       {"message", "<b>bold</b> & <script>x</script>"}}});
  // A container name with HTML in it (status is written by hand here; the API takes any string).
  status["recommendation"]["containerRecommendations"].push_back(
      {{"containerName", "<b>side</b>"}, {"target", {{"cpu", "10m"}}}});
  auto model = build_model({scaler("shop", "web", {{"deploymentName", "web"}}, status),
                            scaler("blog", "www", {{"deploymentName", "www"}}, json::object())},
                           History(), "2026-12-01T12:00:00Z");
  std::string page = render_html(model, "", 1'000'000, 3600);
  CHECK(page.starts_with("<!DOCTYPE html>"));
  CHECK(page.find("Namespace shop") != std::string::npos);
  CHECK(page.find("Namespace blog") != std::string::npos);
  CHECK(page.find("Deployment/web") != std::string::npos);
  CHECK(page.find("500m / 512Mi") != std::string::npos);  // requests now
  CHECK(page.find("200m / 256Mi") != std::string::npos);  // target
  CHECK(page.find("+290m") != std::string::npos);         // the savings, signed (side asks 10m)
  CHECK(page.find("+256Mi") != std::string::npos);
  CHECK(page.find("Conflict") != std::string::npos);
  // Escaped, never raw.
  CHECK(page.find("<b>bold</b>") == std::string::npos);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;x&lt;/script&gt;") !=
        std::string::npos);
  CHECK(page.find("<b>side</b>") == std::string::npos);
  CHECK(page.find("&lt;b&gt;side&lt;/b&gt;") != std::string::npos);
  // Self-contained: nothing fetched from elsewhere.
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("<link") == std::string::npos);

  std::string shop_only = render_html(model, "shop", 1'000'000, 3600);
  CHECK(shop_only.find("Namespace shop") != std::string::npos);
  CHECK(shop_only.find("Namespace blog") == std::string::npos);
  std::string none = render_html(model, "<x>", 1'000'000, 3600);
  CHECK(none.find("No VerticalScaler in namespace &lt;x&gt;") != std::string::npos);
}

TEST_CASE("dashboard json: the same content, totals signed and in base units") {
  json status = status_with("app", {{"cpu", "100m"}, {"memory", "128Mi"}},
                            {{"cpu", "300m"}, {"memory", "128Mi"}});
  status["conditions"] = json::array({{{"type", "Scaled"},
                                       {"status", "False"},
                                       {"reason", "Deferred"},
                                       {"message", "next change at 2026-12-01T12:10:00Z"}}});
  auto model = build_model({scaler("shop", "api", {{"deploymentName", "api"}}, status)}, History(),
                           "2026-12-01T12:00:00Z");
  json out = render_json(model, "");
  CHECK(out["scalerCount"] == 1);
  CHECK(out["totals"]["savings"]["cpu"] == "-200m");
  CHECK(out["totals"]["savings"]["cpuMillicores"] == -200);
  CHECK(out["totals"]["requested"]["memoryBytes"] == 128 * 1024 * 1024);
  const json& api = out["namespaces"][0]["scalers"][0];
  CHECK(api["target"] == "Deployment/web");
  CHECK(api["containers"][0]["target"]["cpu"] == "300m");
  CHECK(api["containers"][0]["requests"]["memory"] == "128Mi");
  CHECK(api["deferral"]["until"] == "2026-12-01T12:10:00Z");
  CHECK(api["conditions"].empty());
  CHECK(api["containers"][0]["copy"]["guaranteed"] ==
        "resources:\n  requests:\n    cpu: 300m\n    memory: 128Mi\n"
        "  limits:\n    cpu: 300m\n    memory: 128Mi\n");
  CHECK(render_json(model, "other")["namespaces"].empty());
  // The page shows both snippets under the table.
  const std::string html = render_html(model, "", 0, 3600);
  CHECK(html.find("<b>Guaranteed</b>") != std::string::npos);
  CHECK(html.find("<b>Burstable</b>") != std::string::npos);
  CHECK(html.find("<pre>resources:\n  requests:\n    cpu: 300m") != std::string::npos);
}

TEST_CASE("dashboard chart: a step line per resource up to now, nothing without points") {
  CHECK(render_chart({}, 1000, 100).empty());
  std::vector<vscaler::dashboard::HistoryPoint> points{{900, 100, 10}, {950, 200, std::nullopt}};
  std::string svg = render_chart(points, 1000, 100);
  CHECK(svg.starts_with("<svg"));
  CHECK(svg.find("class=\"cpu\"") != std::string::npos);
  // cpu 100 then 200 (the top, at 80 % of the plot) at x 2 and 80, held until now (x 158).
  CHECK(svg.find("<path class=\"cpu\" d=\"M2,22H80V9H158\"/>") != std::string::npos);
  CHECK(svg.find("class=\"mem\"") != std::string::npos);
  CHECK(svg.find("<script") == std::string::npos);
}

TEST_CASE("dashboard: a scaler with boosted pods is marked, its stuck boosts too, in both forms") {
  json status = status_with("app", {{"cpu", "500m"}}, {{"cpu", "200m"}});
  status["startupBoost"] = {{"boosted", 2},
                            {"ended", 7},
                            {"stuck", 1},
                            {"message", "web-1: the resize back to its base is <Infeasible>"}};
  json quiet = status_with("app", {{"cpu", "500m"}}, {{"cpu", "200m"}});
  quiet["startupBoost"] = {{"boosted", 0}, {"ended", 3}, {"stuck", 0}};
  auto model = build_model({scaler("shop", "web", {{"deploymentName", "web"}}, status),
                            scaler("shop", "api", {{"deploymentName", "api"}}, quiet)},
                           History(), "2026-12-01T12:00:00Z");
  std::string page = render_html(model, "", 1'000'000, 3600);
  CHECK(page.find("2 pods boosted, 1 stuck</span>") != std::string::npos);
  CHECK(page.find("title=\"web-1: the resize back to its base is &lt;Infeasible&gt;\"") !=
        std::string::npos);
  CHECK(page.find("0 pods boosted") == std::string::npos);  // nothing boosted: no mark
  json page_json = render_json(model, "");
  const json& scalers = page_json["namespaces"][0]["scalers"];
  REQUIRE(scalers.size() == 2);
  CHECK(scalers[0]["name"] == "api");
  CHECK(scalers[0]["startupBoost"]["ended"] == 3);
  CHECK(scalers[1]["startupBoost"]["boosted"] == 2);
  CHECK(scalers[1]["startupBoost"]["stuck"] == 1);
}
