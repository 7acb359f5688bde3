// Cluster caps: the largest node's allocatable, the global flags, and a scaler's maxAllowed,
// which wins over both; a bound of 0 is none.
#include "recommender/cluster_caps.h"

#include <doctest/doctest.h>

#include "recommender/limit_range.h"

using namespace vscaler::recommender;
using nlohmann::json;
using vscaler::kube::Quantity;

namespace {
Quantity q(const char* text) {
  auto parsed = Quantity::parse(text);
  REQUIRE(parsed.ok());
  return *parsed;
}

json node(const char* cpu, const char* memory) {
  return {{"metadata", {{"name", "n"}}},
          {"status", {{"allocatable", {{"cpu", cpu}, {"memory", memory}, {"pods", "110"}}}}}};
}
}  // namespace

TEST_CASE("the largest node: each resource's maximum over the nodes, malformed ones skipped") {
  LargestNode largest;
  CHECK(largest.allocatable().empty());
  largest.add(node("3800m", "15Gi"));
  largest.add(node("16", "7Gi"));  // more CPU, less memory: each resource on its own
  largest.add(node("many", "32Gi"));
  largest.add(json{{"metadata", {{"name", "no-status"}}}});
  largest.add(json("not an object"));
  largest.add(json{{"status", {{"allocatable", {{"cpu", 4}}}}}});  // a number: not a quantity
  CHECK(largest.allocatable().at(kCpu) == q("16"));
  CHECK(largest.allocatable().at(kMemory) == q("32Gi"));
}

TEST_CASE("caps: the smaller of the largest node and the flags; maxAllowed wins over both") {
  const ResourceMap largest = {{kCpu, q("4")}, {kMemory, q("8Gi")}};
  SUBCASE("no flags: the node caps") {
    CHECK(cluster_caps(largest, {}) == largest);
  }
  SUBCASE("a flag below the node's: the flag") {
    auto caps = cluster_caps(largest, {{kMemory, q("2Gi")}});
    CHECK(caps.at(kCpu) == q("4"));
    CHECK(caps.at(kMemory) == q("2Gi"));
  }
  SUBCASE("a flag above the node's: the node") {
    CHECK(cluster_caps(largest, {{kCpu, q("64")}}).at(kCpu) == q("4"));
  }
  SUBCASE("no node known: the flags alone") {
    CHECK(cluster_caps({}, {{kCpu, q("2")}}) == ResourceMap{{kCpu, q("2")}});
  }
  SUBCASE("a scaler's maxAllowed is kept, even above the node; the other resource is capped") {
    AllowedRange range;
    range.max_allowed[kCpu] = q("6");
    range.min_allowed[kMemory] = q("1Gi");
    auto capped = within_cluster_caps(range, cluster_caps(largest, {}));
    CHECK(capped.max_allowed.at(kCpu) == q("6"));
    CHECK(capped.max_allowed.at(kMemory) == q("8Gi"));
    CHECK(capped.min_allowed == range.min_allowed);
  }
}

TEST_CASE("a young history's upper bound is held at the largest node, not 1,000 cores") {
  Estimate young{{0.35, 489.0 * 1024 * 1024}, {0.025, 250.0 * 1024 * 1024}, {1000.0, 1e12}};
  auto r = recommend(
      "app", young,
      within_cluster_caps({}, cluster_caps({{kCpu, q("3800m")}, {kMemory, q("16263128Ki")}}, {})));
  CHECK(r.upper_bound.at(kCpu).to_string() == "3800m");
  CHECK(r.upper_bound.at(kMemory).to_string() == "16263128Ki");
  CHECK(r.target.at(kCpu).to_string() == "350m");
  CHECK(r.uncapped_target == r.target);
}

TEST_CASE("a bound of 0 bounds nothing, as in VPA's capping") {
  // VPA (utils/vpa/capping.go) skips a zero minAllowed/maxAllowed quantity and a zero global
  // cap; a maxAllowed cpu "0" must not publish a target of 0.
  const Estimate steady{{0.35, 489.0 * 1024 * 1024}, {0.3, 400.0 * 1024 * 1024}, {0.4, 6e8}};
  SUBCASE("a scaler's maxAllowed and minAllowed of 0") {
    AllowedRange range;
    range.max_allowed = {{kCpu, q("0")}, {kMemory, q("0")}};
    range.min_allowed = {{kCpu, q("0")}};
    auto r = recommend("app", steady, range);
    CHECK(r.target.at(kCpu).to_string() == "350m");
    CHECK(r.target == r.uncapped_target);
    CHECK(r.upper_bound.at(kCpu).to_string() == "400m");
  }
  SUBCASE("a maxAllowed of 0 leaves the caps to cap, as a missing one does") {
    AllowedRange range;
    range.max_allowed[kCpu] = q("0");
    auto capped = within_cluster_caps(range, cluster_caps({{kCpu, q("300m")}}, {}));
    CHECK(capped.max_allowed.at(kCpu) == q("300m"));
    CHECK(recommend("app", steady, capped).target.at(kCpu).to_string() == "300m");
  }
  SUBCASE("a maxAllowed of 0 leaves the LimitRange's max to cap") {
    AllowedRange range;
    range.max_allowed[kCpu] = q("0");
    LimitRangeItem limits;
    limits.max[kCpu] = q("200m");
    CHECK(within_limit_range(range, limits).max_allowed.at(kCpu) == q("200m"));
  }
  SUBCASE("a global cap of 0 caps nothing; the node still does") {
    CHECK(cluster_caps({{kCpu, q("4")}}, {{kCpu, q("0")}}).at(kCpu) == q("4"));
    auto caps = cluster_caps({}, {{kCpu, q("0")}, {kMemory, q("0")}});
    auto r = recommend("app", steady, within_cluster_caps({}, caps));
    CHECK(r.target.at(kCpu).to_string() == "350m");
    CHECK(r.target == r.uncapped_target);
  }
}
