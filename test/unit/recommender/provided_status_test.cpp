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
