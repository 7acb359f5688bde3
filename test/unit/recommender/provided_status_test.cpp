// The recommender's status fields: an unchanged outcome is no update, the condition's
// lastTransitionTime moves only when its status flips, other conditions and fields are kept.
#include "recommender/provided_status.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace vscaler::recommender;
using nlohmann::json;

TEST_CASE("status_update sets RecommendationProvided and the recommendation, and nothing else") {
  json stored = {{"lastRecommendationUpdateTime", "2026-11-29T17:00:00Z"},
                 {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}};
  Publication p{ProvidedReason::kRecommended, "1 pod, 1 with metrics, 1 container samples",
                json{{"containerRecommendations", json::array()}}};
  auto update = status_update(stored, 3, p, "2026-11-29T18:00:00Z");
  REQUIRE(update);
  CHECK_FALSE(update->contains("lastRecommendationUpdateTime"));
  CHECK(update->at("recommendation") == *p.recommendation);
  REQUIRE(update->at("conditions").size() == 2);
  CHECK(update->at("conditions")[0]["type"] == "Ready");
  const json& c = update->at("conditions")[1];
  CHECK(c["type"] == "RecommendationProvided");
  CHECK(c["status"] == "True");
  CHECK(c["reason"] == "Recommended");
  CHECK(c["observedGeneration"] == 3);
  CHECK(c["lastTransitionTime"] == "2026-11-29T18:00:00Z");

  // Applied: the same outcome later is no update.
  json applied = stored;
  applied["recommendation"] = update->at("recommendation");
  applied["conditions"] = update->at("conditions");
  CHECK_FALSE(status_update(applied, 3, p, "2026-11-29T18:05:00Z"));

  // Another reason with the same status keeps the transition time; a flip moves it.
  Publication same_status = p;
  same_status.message = "2 pods, 2 with metrics, 2 container samples";
  auto moved = status_update(applied, 3, same_status, "2026-11-29T18:05:00Z");
  REQUIRE(moved);
  CHECK(moved->at("conditions")[1]["lastTransitionTime"] == "2026-11-29T18:00:00Z");
  Publication flipped{ProvidedReason::kNoMetrics, "1 pod, none with metrics", std::nullopt};
  auto down = status_update(applied, 3, flipped, "2026-11-29T18:06:00Z");
  REQUIRE(down);
  CHECK_FALSE(down->contains("recommendation"));  // the last one stays
  CHECK(down->at("conditions")[1]["status"] == "False");
  CHECK(down->at("conditions")[1]["lastTransitionTime"] == "2026-11-29T18:06:00Z");
  // A new generation alone is a change (observedGeneration).
  CHECK(status_update(applied, 4, p, "2026-11-29T18:05:00Z"));
}

namespace {

json one_container(const char* target, const char* lower, const char* upper) {
  return {{"containerRecommendations", json::array({{{"containerName", "app"},
                                                     {"target", {{"cpu", target}}},
                                                     {"lowerBound", {{"cpu", lower}}},
                                                     {"upperBound", {{"cpu", upper}}},
                                                     {"uncappedTarget", {{"cpu", target}}}}})}};
}

}  // namespace

TEST_CASE("bounds that moved less than kBoundWriteTolerance are no update; a target is exact") {
  Publication p{ProvidedReason::kRecommended, "1 pod, 1 with metrics, 1 container samples",
                one_container("100m", "50m", "1000m")};
  auto first = status_update(json::object(), 1, p, "2026-11-29T18:00:00Z");
  REQUIRE(first);
  json applied = *first;

  // A young history: the upper bound shrinks 3 %, the lower grows 4 %: nothing to write.
  p.recommendation = one_container("100m", "52m", "970m");
  CHECK_FALSE(status_update(applied, 1, p, "2026-11-29T18:01:00Z"));
  // Drift adds up against the stored bound, not the last published one: 6 % is a write.
  p.recommendation = one_container("100m", "52m", "940m");
  auto drifted = status_update(applied, 1, p, "2026-11-29T18:02:00Z");
  REQUIRE(drifted);
  CHECK(drifted->at("recommendation") == *p.recommendation);
  // Any change of the target is written, however small.
  p.recommendation = one_container("101m", "50m", "1000m");
  CHECK(status_update(applied, 1, p, "2026-11-29T18:03:00Z"));
  // A new resource in a bound, or another container, is a change.
  json more = one_container("100m", "50m", "1000m");
  more["containerRecommendations"][0]["upperBound"]["memory"] = "1Gi";
  p.recommendation = more;
  CHECK(status_update(applied, 1, p, "2026-11-29T18:04:00Z"));
  json renamed = one_container("100m", "50m", "1000m");
  renamed["containerRecommendations"][0]["containerName"] = "sidecar";
  CHECK_FALSE(same_recommendation(applied["recommendation"], renamed));
  // Unparsable stored values compare exactly.
  CHECK_FALSE(same_recommendation(json{{"containerRecommendations", "oops"}}, renamed));
}

namespace {

vscaler::kube::Quantity quantity(const char* text) {
  return vscaler::kube::Quantity::parse(text).value();
}

// app's memory request in each of `requests` (one pod each).
RequestSpans spans_of(std::initializer_list<const char*> requests) {
  RequestSpans spans;
  for (const char* request : requests) {
    widen_request_spans(spans, {PodContainer{"app", {{"memory", quantity(request)}}, {}}});
  }
  return spans;
}

json memory_bounds(const char* lower, const char* upper) {
  return json{
      {"containerRecommendations", json::array({{{"containerName", "app"},
                                                 {"target", {{"memory", "489Mi"}}},
                                                 {"lowerBound", {{"memory", lower}}},
                                                 {"upperBound", {{"memory", upper}}},
                                                 {"uncappedTarget", {{"memory", "489Mi"}}}}})}};
}

}  // namespace

TEST_CASE("widen_request_spans keeps each container's lowest and highest request") {
  RequestSpans spans = spans_of({"400Mi", "1Gi", "300Mi"});
  CHECK(spans["app"].lowest["memory"] == quantity("300Mi"));
  CHECK(spans["app"].highest["memory"] == quantity("1Gi"));
  // A limit without a request counts as the request (the API server defaults it so).
  widen_request_spans(
      spans, {PodContainer{"app", {}, {{"memory", quantity("2Gi")}, {"cpu", quantity("1")}}},
              PodContainer{"sidecar", {{"cpu", quantity("10m")}}, {{"cpu", quantity("1")}}}});
  CHECK(spans["app"].highest["memory"] == quantity("2Gi"));
  CHECK(spans["app"].lowest["cpu"] == quantity("1"));
  CHECK(spans["sidecar"].highest["cpu"] == quantity("10m"));  // the request, not the limit
}

TEST_CASE("an upperBound above every request is rewritten only when it moved by a quarter") {
  // A young history: target 489Mi, upperBound tens of times that, falling ~1/n a pass.
  const RequestSpans spans = spans_of({"400Mi", "450Mi"});
  const json stored = memory_bounds("351Mi", "88340Mi");
  // -11 %: past the 5 % tolerance, but both values lie above the 450Mi request: no decision
  // can tell them apart, so no write.
  CHECK(same_recommendation(stored, memory_bounds("351Mi", "78579Mi"), spans));
  CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", "78579Mi")));  // plain tolerance
  // A move by more than a quarter, down or up, is a write: the shown bound stays within 25 % of
  // the truth.
  CHECK(same_recommendation(stored, memory_bounds("351Mi", "70672Mi"), spans));  // 88340 / 1.25
  CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", "70000Mi"), spans));
  CHECK(same_recommendation(stored, memory_bounds("351Mi", "110425Mi"), spans));  // x 1.25
  CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", "111000Mi"), spans));
  // A pod requesting more than the new bound: the bound now decides that pod, so it is written.
  CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", "78579Mi"),
                                  spans_of({"400Mi", "80000Mi"})));
  // Another container's requests do not relax this one's bounds.
  RequestSpans other;
  widen_request_spans(other, {PodContainer{"sidecar", {{"memory", quantity("1Mi")}}, {}}});
  CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", "78579Mi"), other));
  // Nobody requests memory: no decision rests on its bounds.
  RequestSpans no_memory;
  widen_request_spans(no_memory, {PodContainer{"app", {{"cpu", quantity("100m")}}, {}}});
  CHECK(same_recommendation(stored, memory_bounds("351Mi", "78579Mi"), no_memory));

  // Through status_update: the publication carries the spans.
  Publication p{ProvidedReason::kRecommended, "1 pod, 1 with metrics, 1 container samples", stored,
                spans};
  auto first = status_update(json::object(), 1, p, "2026-11-29T18:00:00Z");
  REQUIRE(first);
  p.recommendation = memory_bounds("351Mi", "78579Mi");
  CHECK_FALSE(status_update(*first, 1, p, "2026-11-29T18:01:00Z"));
  p.request_spans = spans_of({"80000Mi"});
  CHECK(status_update(*first, 1, p, "2026-11-29T18:01:00Z"));
}

TEST_CASE("a lowerBound under every request is rewritten only when it moved by a quarter") {
  // Applied requests at the target (489Mi); the lowerBound's percentile flips a bucket (5 %).
  const RequestSpans spans = spans_of({"489Mi", "489Mi"});
  const json stored = memory_bounds("382Mi", "600Mi");
  CHECK(same_recommendation(stored, memory_bounds("402Mi", "600Mi"), spans));  // +5.2 %
  CHECK_FALSE(same_recommendation(stored, memory_bounds("402Mi", "600Mi")));
  CHECK_FALSE(same_recommendation(stored, memory_bounds("478Mi", "600Mi"), spans));  // +25.1 %
  // A request under the new lowerBound: that pod is now due, so the bound is written.
  CHECK_FALSE(
      same_recommendation(stored, memory_bounds("402Mi", "600Mi"), spans_of({"489Mi", "390Mi"})));
  // A request exactly at the bound is not under it: still nothing to decide.
  CHECK(same_recommendation(stored, memory_bounds("402Mi", "600Mi"), spans_of({"402Mi"})));
}

TEST_CASE("a bound beyond every request is kept whatever its move outside its refresh pass") {
  const RequestSpans spans = spans_of({"400Mi", "450Mi"});
  const json stored = memory_bounds("351Mi", "88340Mi");
  // Halved, then doubled: past the quarter, but above every request.
  for (const char* upper : {"44170Mi", "176680Mi"}) {
    CAPTURE(upper);
    CHECK(same_recommendation(stored, memory_bounds("351Mi", upper), spans, false));
    CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", upper), spans, true));
  }
  // A request between the stored and the new bound decides a pod: written in any pass.
  CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", "44170Mi"),
                                  spans_of({"400Mi", "50000Mi"}), false));
  // So is a lowerBound that rose over a request, and a bound of a container with no span.
  CHECK_FALSE(same_recommendation(stored, memory_bounds("420Mi", "88340Mi"), spans, false));
  CHECK_FALSE(same_recommendation(stored, memory_bounds("351Mi", "44170Mi"), {}, false));
  // A target is exact in every pass.
  json moved_target = memory_bounds("351Mi", "88340Mi");
  moved_target["containerRecommendations"][0]["target"]["memory"] = "500Mi";
  CHECK_FALSE(same_recommendation(stored, moved_target, spans, false));

  // Through status_update: the publication says which pass this is.
  Publication p{ProvidedReason::kRecommended, "1 pod, 1 with metrics, 1 container samples", stored,
                spans};
  auto first = status_update(json::object(), 1, p, "2026-11-29T18:00:00Z");
  REQUIRE(first);
  p.recommendation = memory_bounds("351Mi", "44170Mi");
  p.refresh_far_bounds = false;
  CHECK_FALSE(status_update(*first, 1, p, "2026-11-29T18:01:00Z"));
  p.refresh_far_bounds = true;
  CHECK(status_update(*first, 1, p, "2026-11-29T18:01:00Z"));
}

TEST_CASE("far_bound_refresh_pass picks one pass of every kFarBoundRefreshPasses per scaler") {
  std::vector<unsigned> scalers_per_slot(kFarBoundRefreshPasses, 0);
  for (int i = 0; i < 400; ++i) {
    const std::string uid = "3f0c9a51-7d2e-4b8a-9c11-" + std::to_string(100000000000 + i);
    CAPTURE(uid);
    int refreshes = 0;
    std::uint64_t first = 0;
    for (std::uint64_t pass = 1; pass <= 4 * kFarBoundRefreshPasses; ++pass) {
      if (!far_bound_refresh_pass(uid, pass)) continue;
      if (refreshes == 0) first = pass;
      CHECK((pass - first) % kFarBoundRefreshPasses == 0);
      ++refreshes;
    }
    CHECK(refreshes == 4);
    ++scalers_per_slot[first % kFarBoundRefreshPasses];
  }
  // Spread: each pass refreshes about a quarter of the scalers, not all of them at once.
  for (unsigned count : scalers_per_slot) {
    CHECK(count > 60);
    CHECK(count < 140);
  }
}
