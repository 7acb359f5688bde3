// QuotaCache: per namespace, the least headroom (hard - used) of its ResourceQuotas for cpu and
// memory requests and limits; the hook's admissions reserved until the next list; unreadable
// quotas left out and counted; the namespaces whose headroom changed reported.
#include "controller/quota_cache.h"

#include <doctest/doctest.h>

using namespace vscaler::controller;
using nlohmann::json;

namespace {

std::shared_ptr<const json> quota(const char* ns, const char* hard, const char* used) {
  return std::make_shared<const json>(
      json{{"metadata", {{"namespace", ns}, {"name", "q"}}},
           {"status", {{"hard", json::parse(hard)}, {"used", json::parse(used)}}}});
}

std::string value(const vscaler::recommender::ResourceMap& map, const char* resource) {
  auto it = map.find(resource);
  return it == map.end() ? "absent" : it->second.to_string();
}

}  // namespace

TEST_CASE("QuotaCache: the least headroom of a namespace's quotas, cpu/memory only") {
  QuotaCache cache;
  CHECK_FALSE(cache.headroom("team-a").has_value());
  std::vector<std::string> changed;
  CHECK(cache.rebuild({quota("team-a", R"({"requests.cpu": "4", "memory": "8Gi", "pods": "10"})",
                             R"({"requests.cpu": "1500m", "memory": "3Gi", "pods": "4"})"),
                       quota("team-a", R"({"cpu": "3", "limits.memory": "16Gi"})",
                             R"({"cpu": "1500m", "limits.memory": "20Gi"})"),
                       quota("team-b", R"({"pods": "5"})", R"({"pods": "1"})")},
                      &changed) == 0);
  CHECK(changed == std::vector<std::string>{"team-a"});
  auto a = cache.headroom("team-a");
  REQUIRE(a.has_value());
  CHECK(value(a->requests, "cpu") == "1500m");   // min(4 - 1500m, 3 - 1500m): "cpu" = requests.cpu
  CHECK(value(a->requests, "memory") == "5Gi");  // 8Gi - 3Gi
  CHECK(value(a->limits, "memory") == "0");      // used over hard: nothing left, never negative
  CHECK(value(a->limits, "cpu") == "absent");    // unbounded
  CHECK_FALSE(cache.headroom("team-b").has_value());  // no cpu or memory in its quota

  // Admissions are spent until the next rebuild, which forgets them.
  cache.reserve("team-a", {{{"cpu", vscaler::kube::Quantity::parse("500m").value()}}, {}});
  CHECK(value(cache.headroom("team-a")->requests, "cpu") == "1");
  cache.reserve("team-a", {{{"cpu", vscaler::kube::Quantity::parse("2").value()}}, {}});
  CHECK(value(cache.headroom("team-a")->requests, "cpu") == "0");
  cache.reserve("team-b",
                {{{"cpu", vscaler::kube::Quantity::parse("1").value()}}, {}});  // no quota
  CHECK_FALSE(cache.headroom("team-b").has_value());

  changed.clear();
  CHECK(cache.rebuild({quota("team-a", R"({"requests.cpu": "4", "memory": "8Gi"})",
                             R"({"requests.cpu": "1500m", "memory": "3Gi"})"),
                       quota("team-a", R"({"cpu": "3", "limits.memory": "16Gi"})",
                             R"({"cpu": "1500m", "limits.memory": "20Gi"})")},
                      &changed) == 0);
  CHECK(changed.empty());  // the same headroom; the reservations are forgotten
  CHECK(value(cache.headroom("team-a")->requests, "cpu") == "1500m");
  CHECK(cache.rebuild({}, &changed) == 0);
  CHECK(changed == std::vector<std::string>{"team-a"});
  CHECK_FALSE(cache.headroom("team-a").has_value());
}

TEST_CASE("QuotaCache: a quota not yet counted bounds nothing; an unreadable one is left out") {
  QuotaCache cache;
  auto uncounted = std::make_shared<const json>(json::parse(
      R"({"metadata": {"namespace": "new", "name": "q"}, "spec": {"hard": {"cpu": "1"}}})"));
  CHECK(cache.rebuild({uncounted, quota("bad", R"({"cpu": "one core"})", "{}"),
                       quota("bad-used", R"({"cpu": "1"})", R"({"cpu": 5})")}) == 2);
  CHECK_FALSE(cache.headroom("new").has_value());
  CHECK_FALSE(cache.headroom("bad").has_value());
  CHECK_FALSE(cache.headroom("bad-used").has_value());
}

TEST_CASE("QuotaCache: resizes spend what they took of the headroom, growth only") {
  QuotaCache cache;
  REQUIRE(cache.rebuild({quota("ns", R"({"requests.cpu": "2", "limits.memory": "4Gi"})",
                               R"({"requests.cpu": "1", "limits.memory": "1Gi"})")}) == 0);
  auto before = cache.headroom("ns");
  REQUIRE(before.has_value());
  auto after = *before;
  after.requests.at("cpu") = vscaler::kube::Quantity::parse("600m").value();  // 400m spent
  cache.reserve_spent("ns", *before, after);
  CHECK(value(cache.headroom("ns")->requests, "cpu") == "600m");
  CHECK(value(cache.headroom("ns")->limits, "memory") == "3Gi");  // untouched
}

TEST_CASE("QuotaCache: a reservation counts only what a quota bounds, never past its headroom") {
  // A pod review any client may send can carry values near the quantities' limit: reserved twice,
  // they must neither overflow nor leave a negative headroom.
  QuotaCache cache;
  cache.rebuild({quota("team-a", R"({"requests.cpu": "4"})", R"({"requests.cpu": "1"})")});
  const auto huge = vscaler::kube::Quantity::parse("170141183460469231731687303715").value();
  cache.reserve("team-a", {{{"cpu", huge}, {"memory", huge}}, {{"cpu", huge}}});
  cache.reserve("team-a", {{{"cpu", huge}}, {}});
  auto a = cache.headroom("team-a");
  REQUIRE(a.has_value());
  CHECK(value(a->requests, "cpu") == "0");
  CHECK(value(a->requests, "memory") == "absent");  // unbounded: not counted
  CHECK(value(a->limits, "cpu") == "absent");
  cache.rebuild({quota("team-a", R"({"requests.cpu": "4"})", R"({"requests.cpu": "1"})")});
  cache.reserve("team-a", {{{"cpu", vscaler::kube::Quantity::parse("1").value()}}, {}});
  cache.reserve("team-a", {{{"cpu", vscaler::kube::Quantity::parse("1500m").value()}}, {}});
  CHECK(value(cache.headroom("team-a")->requests, "cpu") == "500m");
}
