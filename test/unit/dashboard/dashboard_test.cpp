// Dashboard: pages from the snapshot function (called per view, no other source), the sampler
// thread started and stopped without waiting out its period, history kept across views.
#include "dashboard/dashboard.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "test/unit/dashboard/fixtures.h"

using nlohmann::json;
using vscaler::dashboard::Dashboard;
using vscaler::dashboard::DashboardOptions;
using vscaler::dashboard::testing::scaler;
using vscaler::dashboard::testing::status_with;

TEST_CASE("dashboard: pages from the snapshot; the sampler stops at once") {
  std::mutex mutex;
  std::vector<std::shared_ptr<const vscaler::api::Scaler>> scalers{
      scaler("shop", "web", {{"deploymentName", "web"}},
             status_with("app", {{"cpu", "500m"}}, {{"cpu", "200m"}}), "1")};
  std::atomic<int> calls{0};
  DashboardOptions options;
  options.sample_every = std::chrono::hours(1);  // stop() must not wait for it
  Dashboard board(
      [&] {
        ++calls;
        std::lock_guard lock(mutex);
        return scalers;
      },
      options);
  board.start();
  board.start();  // idempotent
  std::string page = board.html();
  CHECK(page.find("Namespace shop") != std::string::npos);
  CHECK(page.find("500m") != std::string::npos);
  CHECK(board.html("other").find("No VerticalScaler in namespace other") != std::string::npos);

  {
    std::lock_guard lock(mutex);
    scalers = {scaler("shop", "web", {{"deploymentName", "web"}},
                      status_with("app", {{"cpu", "500m"}}, {{"cpu", "300m"}}), "2")};
  }
  json out = json::parse(board.json());
  const json& app = out["namespaces"][0]["scalers"][0]["containers"][0];
  CHECK(app["target"]["cpu"] == "300m");
  CHECK(app["history"].size() == 2);  // 200m, then 300m
  CHECK(app["history"][1][1] == 300);

  auto start = std::chrono::steady_clock::now();
  board.stop();
  board.stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(calls.load() >= 3);  // one per view (and the sampler's, if it ran before stop)
}
