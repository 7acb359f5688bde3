// dashboard_bench: the dashboard's server-side cost, what a /dashboard view does in the operator
// (snapshot of the scalers, history folded in, model built, page rendered), for 1,000 scalers in
// 20 namespaces, 2 containers each, with recommendations, conditions and a history of 60
// changes per container. Prints one row per line: id<TAB>label<TAB>value (bench/sections/
// dashboard.sh); exits 1 when the cold HTML page takes 200 ms or more (issue 19's bound).
//   dashboard_cold: ms per HTML page when every scaler changed since the last view (median of 21)
//   dashboard_warm: ms per HTML page when none did (views reused)
//   dashboard_json: ms per /dashboard.json (none changed)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "api/scaler.h"
#include "dashboard/dashboard.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Scalers = std::vector<std::shared_ptr<const vscaler::api::Scaler>>;

constexpr int kScalers = 1000;
constexpr int kNamespaces = 20;
constexpr int kRenders = 21;
constexpr double kBoundMs = 200;

// Scaler i with targets that depend on `round` (so the history sees changes).
std::shared_ptr<const vscaler::api::Scaler> make_scaler(int i, int round) {
  json containers = json::array();
  json recommendations = json::array();
  for (const char* name : {"app", "sidecar"}) {
    containers.push_back({{"name", name},
                          {"requests", {{"cpu", "500m"}, {"memory", "512Mi"}}},
                          {"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}});
    std::string cpu = std::to_string(100 + (i + round) % 400) + "m";
    std::string memory = std::to_string(128 + (i * 7 + round) % 512) + "Mi";
    recommendations.push_back({{"containerName", name},
                               {"target", {{"cpu", cpu}, {"memory", memory}}},
                               {"lowerBound", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                               {"upperBound", {{"cpu", "900m"}, {"memory", "900Mi"}}},
                               {"uncappedTarget", {{"cpu", cpu}, {"memory", memory}}}});
  }
  std::string name = "scaler-" + std::to_string(i);
  json object{{"apiVersion", "scaling.vscaler.dev/v1beta1"},
              {"kind", "VerticalScaler"},
              {"metadata",
               {{"name", name},
                {"namespace", "team-" + std::to_string(i % kNamespaces)},
                {"uid", "uid-" + std::to_string(i)},
                {"generation", 1},
                {"resourceVersion", std::to_string(round + 1)},
                {"creationTimestamp", "2026-11-29T18:00:00Z"}}},
              {"spec", {{"deploymentName", name}}},
              {"status",
               {{"target", {{"ref", "Deployment/" + name}}},
                {"containers", containers},
                {"recommendation", {{"containerRecommendations", recommendations}}},
                {"lastScaleTime", "2026-12-01T10:00:00Z"},
                {"lastRecommendationUpdateTime", "2026-12-01T10:00:00Z"},
                {"conditions",
                 json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "UpToDate"}},
                              {{"type", "Scaled"},
                               {"status", i % 10 == 0 ? "False" : "True"},
                               {"reason", i % 10 == 0 ? "Deferred" : "Applied"},
                               {"message", "next change allowed at 2026-12-01T10:10:00Z"}}})}}}};
  auto parsed = vscaler::api::parse_scaler(object);
  if (!parsed.ok()) {
    std::fprintf(stderr, "dashboard_bench: %s\n", parsed.error().c_str());
    std::exit(2);
  }
  return std::make_shared<const vscaler::api::Scaler>(std::move(*parsed));
}

Scalers make_scalers(int round) {
  Scalers scalers;
  scalers.reserve(kScalers);
  for (int i = 0; i < kScalers; ++i) scalers.push_back(make_scaler(i, round));
  return scalers;
}

// Median milliseconds of `render`, and the page's size.
template <typename Render>
double median_ms(Render render, std::size_t& bytes) {
  std::vector<double> ms;
  for (int i = 0; i < kRenders; ++i) {
    auto start = Clock::now();
    bytes = render().size();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  // The history first: 60 rounds of changed targets, as a sampler would have seen them.
  Scalers current;
  vscaler::dashboard::Dashboard board([&current] { return current; });
  int round = 0;
  for (; round < 60; ++round) {
    current = make_scalers(round);
    board.model();
  }
  // Cold: every scaler changed since the last view (nothing reused). Warm: none did (views
  // reused: the usual case, a page reloaded while few scalers change).
  std::vector<double> cold;
  std::size_t html_bytes = 0;
  for (int i = 0; i < kRenders; ++i) {
    current = make_scalers(round++);
    auto start = Clock::now();
    html_bytes = board.html().size();
    cold.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(cold.begin(), cold.end());
  double cold_ms = cold[cold.size() / 2];
  std::size_t json_bytes = 0;
  double warm_ms = median_ms([&] { return board.html(); }, html_bytes);
  double json_ms = median_ms([&] { return board.json(); }, json_bytes);
  std::printf("dashboard_cold\tdashboard page, 1,000 scalers all changed, server-side (ms)\t%.2f\n",
              cold_ms);
  std::printf("dashboard_warm\tdashboard page, 1,000 scalers unchanged, server-side (ms)\t%.2f\n",
              warm_ms);
  std::printf("dashboard_json\tdashboard.json, 1,000 scalers unchanged (ms)\t%.2f\n", json_ms);
  std::fprintf(stderr,
               "dashboard_bench: HTML %.1f ms cold, %.1f ms warm (%zu bytes), JSON %.1f ms (%zu "
               "bytes)\n",
               cold_ms, warm_ms, html_bytes, json_ms, json_bytes);
  if (cold_ms >= kBoundMs) {
    std::fprintf(stderr, "dashboard_bench: the page took %.1f ms, over the %.0f ms bound\n",
                 cold_ms, kBoundMs);
    return 1;
  }
  return 0;
}
