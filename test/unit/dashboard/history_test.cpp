// History: a point when a recommended target changes, a bounded ring within the window, the
// last change of the template's resources with its cause, and scalers that go are forgotten.
#include "dashboard/history.h"

#include <doctest/doctest.h>

#include "test/unit/dashboard/fixtures.h"

using nlohmann::json;
using vscaler::dashboard::History;
using vscaler::dashboard::HistoryOptions;
using vscaler::dashboard::testing::scaler;
using vscaler::dashboard::testing::status_with;

TEST_CASE("history: a point per changed target, bounded, within the window") {
  HistoryOptions options;
  options.points_per_container = 3;
  options.window = std::chrono::seconds(1000);
  History history(options);
  int version = 0;  // each write of the status is a new resourceVersion
  auto at = [&version](const char* cpu) {
    return scaler("shop", "web", {{"deploymentName", "web"}},
                  status_with("app", {{"cpu", "1"}}, {{"cpu", cpu}, {"memory", "1Gi"}}),
                  std::to_string(++version));
  };
  history.observe({at("100m")}, 100);
  history.observe({at("100m")}, 200);  // unchanged: no new point
  auto points = history.points("shop/web", "app");
  REQUIRE(points.size() == 1);
  CHECK(points[0].time == 100);
  CHECK(*points[0].cpu == 100'000'000);
  CHECK(*points[0].memory == vscaler::kube::Int128(1073741824) * 1'000'000'000);

  history.observe({at("200m")}, 300);
  history.observe({at("300m")}, 400);
  history.observe({at("400m")}, 500);  // the ring holds 3
  points = history.points("shop/web", "app");
  REQUIRE(points.size() == 3);
  CHECK(points[0].time == 300);
  CHECK(points[2].time == 500);

  // Older than the window: dropped, but the newest of those stays (the line's start).
  history.observe({at("400m")}, 1450);
  points = history.points("shop/web", "app");
  REQUIRE(points.size() == 2);
  CHECK(points[0].time == 400);

  CHECK(history.points("shop/web", "sidecar").empty());
  CHECK(history.points("shop/other", "app").empty());
  history.observe({}, 1500);  // the scaler is gone
  CHECK(history.size() == 0);
  CHECK(history.points("shop/web", "app").empty());
}

TEST_CASE("history: the cause of a change of the template's resources") {
  History history;
  json status = status_with("app", {{"cpu", "100m"}}, {{"cpu", "200m"}});
  status["lastScaleTime"] = "2026-12-01T09:00:00Z";
  status["lastRecommendationUpdateTime"] = "2026-12-01T09:00:00Z";
  json spec{{"deploymentName", "web"}};
  int version = 0;
  auto next = [&version] { return std::to_string(++version); };
  history.observe({scaler("shop", "web", spec, status, next())}, 100);
  CHECK(history.last_change("shop/web") == nullptr);  // nothing seen changing yet

  // vscaler patched the template to follow the recommendation.
  status["containers"][0]["requests"]["cpu"] = "200m";
  status["lastScaleTime"] = "2026-12-01T10:00:00Z";
  status["lastRecommendationUpdateTime"] = "2026-12-01T10:00:00Z";
  history.observe({scaler("shop", "web", spec, status, next())}, 200);
  REQUIRE(history.last_change("shop/web") != nullptr);
  CHECK(history.last_change("shop/web")->cause == "bounds");
  CHECK(history.last_change("shop/web")->time == "2026-12-01T10:00:00Z");

  // The template changed without a write of vscaler's: the admission hook set it.
  status["containers"][0]["requests"]["cpu"] = "250m";
  history.observe({scaler("shop", "web", spec, status, next())}, 1'764'590'400);
  CHECK(history.last_change("shop/web")->cause == "admission");
  CHECK(history.last_change("shop/web")->time == "2025-12-01T12:00:00Z");

  // A scale by fixed values.
  json fixed{{"deploymentName", "web"},
             {"containers", json::array({{{"name", "app"}, {"requests", {{"cpu", "1"}}}}})}};
  status["containers"][0]["requests"]["cpu"] = "1";
  status["lastScaleTime"] = "2026-12-01T11:00:00Z";
  history.observe({scaler("shop", "web", fixed, status, next())}, 400);
  CHECK(history.last_change("shop/web")->cause == "fixed value");
  CHECK(history.last_change("shop/web")->time == "2026-12-01T11:00:00Z");
}

TEST_CASE("history: an unchanged object (same resourceVersion) is not folded in again") {
  History history;
  json spec{{"deploymentName", "web"}};
  auto first = scaler("shop", "web", spec, status_with("app", {{"cpu", "1"}}, {{"cpu", "1"}}), "7");
  history.observe({first}, 100);
  auto version = history.version("shop/web");
  CHECK(version != 0);
  history.observe({first}, 200);
  CHECK(history.version("shop/web") == version);
  CHECK(history.points("shop/web", "app").size() == 1);
  auto second =
      scaler("shop", "web", spec, status_with("app", {{"cpu", "1"}}, {{"cpu", "2"}}), "8");
  history.observe({second}, 300);
  CHECK(history.version("shop/web") != version);
  CHECK(history.points("shop/web", "app").size() == 2);
}

TEST_CASE("history: a scaler deleted and created again (a new uid) starts afresh") {
  History history;
  json spec{{"deploymentName", "web"}};
  json status = status_with("app", {{"cpu", "100m"}}, {{"cpu", "100m"}});
  history.observe({scaler("shop", "web", spec, status, "1", "uid-a")}, 100);
  status["containers"][0]["requests"]["cpu"] = "200m";
  status["recommendation"]["containerRecommendations"][0]["target"]["cpu"] = "200m";
  history.observe({scaler("shop", "web", spec, status, "2", "uid-a")}, 200);
  CHECK(history.points("shop/web", "app").size() == 2);
  REQUIRE(history.last_change("shop/web") != nullptr);

  // The same name, another object: its history is its own, from its first observation on.
  json other = status_with("worker", {{"cpu", "300m"}}, {{"cpu", "300m"}});
  history.observe({scaler("shop", "web", spec, other, "3", "uid-b")}, 300);
  CHECK(history.points("shop/web", "app").empty());
  auto points = history.points("shop/web", "worker");
  REQUIRE(points.size() == 1);
  CHECK(points[0].time == 300);
  CHECK(*points[0].cpu == 300'000'000);
  CHECK(history.last_change("shop/web") == nullptr);
  CHECK(history.size() == 1);
}

TEST_CASE("history: targets come back exactly, to the nanounit, however large or small") {
  HistoryOptions options;
  options.points_per_container = 2;
  History history(options);
  json spec{{"deploymentName", "web"}};
  int version = 0;
  auto at = [&](const char* cpu, const char* memory) {
    return scaler("shop", "web", spec,
                  status_with("app", {{"cpu", "1"}}, {{"cpu", cpu}, {"memory", memory}}),
                  std::to_string(++version));
  };
  using vscaler::kube::Int128;
  const Int128 giga = 1'000'000'000;
  history.observe({at("1n", "1.5")}, 100);     // a nanocore; a byte and a half
  history.observe({at("1e12", "1e29")}, 200);  // beyond 64 bits of nanocores and of bytes
  auto points = history.points("shop/web", "app");
  REQUIRE(points.size() == 2);
  CHECK(*points[0].cpu == 1);
  CHECK(*points[0].memory == 1'500'000'000);
  CHECK(*points[1].cpu == Int128(1'000'000'000'000) * giga);
  CHECK(*points[1].memory == Int128(100'000'000'000'000) * 1'000'000'000'000'000 * giga);
  history.observe({at("352m", "511772988")}, 300);
  history.observe({at("352m", "410Mi")}, 400);  // the ring holds 2: packed again
  points = history.points("shop/web", "app");
  REQUIRE(points.size() == 2);
  CHECK(*points[0].memory == Int128(511772988) * giga);
  CHECK(*points[1].cpu == 352'000'000);
  CHECK(*points[1].memory == Int128(410) * 1024 * 1024 * giga);
}
