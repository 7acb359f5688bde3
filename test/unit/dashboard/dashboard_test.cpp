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

namespace {

std::shared_ptr<const vscaler::api::Scaler> off_scaler() {
  return scaler("shop", "api", {{"deploymentName", "api"}, {"updateMode", "Off"}},
                status_with("app", {{"cpu", "300m"}}, {{"cpu", "300m"}}));
}

// The Off scaler's container as /dashboard.json shows it.
json off_container(Dashboard& board) {
  json page = json::parse(board.json());
  for (const json& ns : page["namespaces"]) {
    if (ns["name"] == "shop") return ns["scalers"][0]["containers"][0];
  }
  return json();
}

// Views until `done` holds for the Off container (5 s at most); the last one seen.
template <typename Done>
json view_until(Dashboard& board, Done done) {
  json container;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    container = off_container(board);
    if (done(container)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  return container;
}

}  // namespace

TEST_CASE("dashboard: the sampler lists the templates of scalers in Off, woken by a view") {
  auto automatic = scaler("blog", "www", {{"deploymentName", "www"}},
                          status_with("app", {{"cpu", "1"}}, {{"cpu", "1"}}));
  std::atomic<int> reads{0};
  std::mutex mutex;
  std::vector<std::string> asked;
  std::atomic<std::thread::id> reader_thread{};
  DashboardOptions options;
  options.sample_every = std::chrono::hours(1);  // only a view can make it list soon
  Dashboard board(
      [&] {
        return std::vector{off_scaler(), automatic};
      },
      options,
      [&](const std::string& ns, const std::string& kind, vscaler::api::TemplateResources& out) {
        {
          std::lock_guard lock(mutex);
          asked.push_back(ns + "/" + kind);
        }
        reader_thread = std::this_thread::get_id();
        ++reads;
        out["shop/Deployment/api"]["app"] = {{"requests", {{"cpu", "1"}}}};
        return true;
      });
  board.start();
  // Nobody looked yet: nothing is listed.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(reads.load() == 0);
  // A view: the template is unknown (not the status's would-be 300m); the view wakes the sampler.
  json unknown = off_container(board);
  CHECK(unknown["templateKnown"] == false);
  CHECK(unknown["requests"].is_null());
  json app = view_until(board, [](const json& c) { return c["templateKnown"] == true; });
  CHECK(app["templateKnown"] == true);
  CHECK(app["requests"]["cpu"] == "1");
  json page = json::parse(board.json());
  CHECK(page["namespaces"][0]["scalers"][0]["containers"][0]["requests"]["cpu"] == "1");  // Auto
  CHECK(reads.load() == 1);
  CHECK(reader_thread.load() != std::this_thread::get_id());
  {
    std::lock_guard lock(mutex);
    CHECK(asked == std::vector<std::string>{"shop/Deployment"});
  }
  // Listed within templates_every: further views list nothing more.
  for (int i = 0; i < 3; ++i) board.json();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(reads.load() == 1);
  board.stop();
}

TEST_CASE("dashboard: a failed list keeps the templates listed before and is asked again") {
  std::atomic<int> reads{0};
  std::atomic<bool> release{false};
  DashboardOptions options;
  options.sample_every = std::chrono::milliseconds(20);
  options.templates_every = std::chrono::seconds(1);
  options.failed_templates_retry = std::chrono::milliseconds(10);
  Dashboard board(
      [&] { return std::vector{off_scaler()}; }, options,
      [&](const std::string&, const std::string&, vscaler::api::TemplateResources& out) {
        int call = ++reads;
        if (call == 2) return false;  // the second list fails
        if (call == 3) {
          while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        out["shop/Deployment/api"]["app"] = {{"requests", {{"cpu", call == 1 ? "1" : "2"}}}};
        return true;
      });
  board.start();
  json first = view_until(board, [](const json& c) { return c["templateKnown"] == true; });
  CHECK(first["requests"]["cpu"] == "1");
  // A second later the list is due again and fails; the third waits for `release`.
  json kept = view_until(board, [&](const json&) { return reads.load() >= 3; });
  CHECK(reads.load() == 3);
  CHECK(kept["templateKnown"] == true);
  CHECK(kept["requests"]["cpu"] == "1");
  release = true;
  json second = view_until(board, [](const json& c) { return c["requests"]["cpu"] == "2"; });
  CHECK(second["requests"]["cpu"] == "2");
  board.stop();
}
