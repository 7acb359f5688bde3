// Dashboard: pages from the snapshot function (called per view, no other source), the sampler
// thread started and stopped without waiting out its period, history kept across views, and the
// templates of scalers in mode Off listed by the sampler alone.
#include "dashboard/dashboard.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

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

TEST_CASE("dashboard: the sampler lists the templates of scalers in Off; page views never do") {
  auto off = scaler("shop", "api", {{"deploymentName", "api"}, {"updateMode", "Off"}},
                    status_with("app", {{"cpu", "300m"}}, {{"cpu", "300m"}}));
  auto automatic = scaler("blog", "www", {{"deploymentName", "www"}},
                          status_with("app", {{"cpu", "1"}}, {{"cpu", "1"}}));
  std::atomic<int> reads{0};
  std::atomic<bool> fail{true};  // the first list fails: nothing is lost, it is asked again
  std::mutex mutex;
  std::vector<std::string> asked;
  std::atomic<std::thread::id> reader_thread{};
  DashboardOptions options;
  options.sample_every = std::chrono::milliseconds(20);
  Dashboard board(
      [&] {
        return std::vector{off, automatic};
      },
      options,
      [&](const std::string& ns, const std::string& kind, vscaler::api::TemplateResources& out) {
        {
          std::lock_guard lock(mutex);
          asked.push_back(ns + "/" + kind);
        }
        reader_thread = std::this_thread::get_id();
        ++reads;
        if (fail.exchange(false)) return false;
        out["shop/Deployment/api"]["app"] = {{"requests", {{"cpu", "1"}}}};
        return true;
      });
  board.start();
  // Nobody looked yet: nothing is listed, however often the sampler runs.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(reads.load() == 0);
  // A view: the template is unknown (not the status's would-be 300m), and the sampler is woken.
  json before = json::parse(board.json());
  const json& unknown = before["namespaces"][1]["scalers"][0]["containers"][0];
  CHECK(unknown["templateKnown"] == false);
  CHECK(unknown["requests"].is_null());
  json after;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    after = json::parse(board.json());
    if (after["namespaces"][1]["scalers"][0]["containers"][0]["templateKnown"] == true) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const json& app = after["namespaces"][1]["scalers"][0]["containers"][0];
  CHECK(app["templateKnown"] == true);
  CHECK(app["requests"]["cpu"] == "1");
  // The Auto scaler keeps its status's values.
  CHECK(after["namespaces"][0]["scalers"][0]["containers"][0]["requests"]["cpu"] == "1");
  CHECK(reads.load() == 2);  // the failed list, then the one that listed it
  CHECK(reader_thread.load() != std::this_thread::get_id());
  {
    std::lock_guard lock(mutex);
    CHECK(asked == std::vector<std::string>{"shop/Deployment", "shop/Deployment"});
  }
  // Listed within templates_every: views and samples list nothing more.
  for (int i = 0; i < 3; ++i) board.json();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(reads.load() == 2);
  board.stop();
}
