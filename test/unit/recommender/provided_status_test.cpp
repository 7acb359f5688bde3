// The recommender's status fields: an unchanged outcome is no update, the condition's
// lastTransitionTime moves only when its status flips, other conditions and fields are kept.
#include "recommender/provided_status.h"

#include <doctest/doctest.h>

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

TEST_CASE("an upperBound above every request is rewritten only when it moved by a quarter") {
  // A young history: target 489Mi, upperBound tens of times that, falling ~1/n a pass.
  auto memory = [](const char* upper) {
    return json{
        {"containerRecommendations", json::array({{{"containerName", "app"},
                                                   {"target", {{"memory", "489Mi"}}},
                                                   {"lowerBound", {{"memory", "351Mi"}}},
                                                   {"upperBound", {{"memory", upper}}},
                                                   {"uncappedTarget", {{"memory", "489Mi"}}}}})}};
  };
  RequestCeilings ceilings;
  raise_request_ceilings(
      ceilings,
      {PodContainer{"app", {{"memory", vscaler::kube::Quantity::parse("400Mi").value()}}, {}}});
  const json stored = memory("88340Mi");
  // -11 %: past the 5 % tolerance, but both values lie above the 400Mi request: no decision
  // can tell them apart, so no write.
  CHECK(same_recommendation(stored, memory("78579Mi"), ceilings));
  CHECK_FALSE(same_recommendation(stored, memory("78579Mi")));  // no ceilings: plain tolerance
  // A move by more than a quarter, down or up, is a write: the shown bound stays within 25 % of
  // the truth.
  CHECK(same_recommendation(stored, memory("70672Mi"), ceilings));  // 88340 / 1.25
  CHECK_FALSE(same_recommendation(stored, memory("70000Mi"), ceilings));
  CHECK(same_recommendation(stored, memory("110425Mi"), ceilings));  // 88340 x 1.25
  CHECK_FALSE(same_recommendation(stored, memory("111000Mi"), ceilings));

  // A pod requesting more than the new bound: the bound now decides that pod, so it is written.
  RequestCeilings big = ceilings;
  raise_request_ceilings(
      big,
      {PodContainer{"app", {{"memory", vscaler::kube::Quantity::parse("80000Mi").value()}}, {}}});
  CHECK(big["app"]["memory"] == vscaler::kube::Quantity::parse("80000Mi").value());
  CHECK_FALSE(same_recommendation(stored, memory("78579Mi"), big));
  // Another container's ceiling does not relax this one's.
  RequestCeilings other;
  raise_request_ceilings(
      other,
      {PodContainer{"sidecar", {{"memory", vscaler::kube::Quantity::parse("1Mi").value()}}, {}}});
  CHECK_FALSE(same_recommendation(stored, memory("78579Mi"), other));
  // A limit without a request counts as the request (the API server defaults it so).
  RequestCeilings limited;
  raise_request_ceilings(
      limited,
      {PodContainer{"app", {}, {{"memory", vscaler::kube::Quantity::parse("80000Mi").value()}}}});
  CHECK_FALSE(same_recommendation(stored, memory("78579Mi"), limited));

  // Through status_update: the publication carries the ceilings.
  Publication p{ProvidedReason::kRecommended, "1 pod, 1 with metrics, 1 container samples", stored,
                ceilings};
  auto first = status_update(json::object(), 1, p, "2026-11-29T18:00:00Z");
  REQUIRE(first);
  p.recommendation = memory("78579Mi");
  CHECK_FALSE(status_update(*first, 1, p, "2026-11-29T18:01:00Z"));
  p.request_ceilings = big;
  CHECK(status_update(*first, 1, p, "2026-11-29T18:01:00Z"));
}
