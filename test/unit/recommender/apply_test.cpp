// Applying a recommendation to a container's resources (RequestsAndLimits, RequestsOnly,
// controlledResources, minAllowed/maxAllowed, LimitRange capping) and the rule deciding whether a
// recommendation-driven patch is due, deferred or not needed.
#include "recommender/apply.h"

#include <doctest/doctest.h>

#include "recommender/limit_range.h"
#include "recommender/update_rule.h"

using namespace vscaler::recommender;
using std::chrono::minutes;
using vscaler::kube::Quantity;

namespace {
const TimePoint kNow = from_millis(1'764'547'200'000);

Quantity q(const char* text) {
  auto parsed = Quantity::parse(text);
  REQUIRE_MESSAGE(parsed.ok(), text);
  return *parsed;
}
ResourceMap map(const char* cpu, const char* memory) {
  ResourceMap m;
  if (cpu) m[kCpu] = q(cpu);
  if (memory) m[kMemory] = q(memory);
  return m;
}
}  // namespace

TEST_CASE("RequestsAndLimits sets the request and scales each limit by new/old request") {
  ContainerResources current{map("100m", "256Mi"), map("200m", "1Gi")};
  auto out = apply_recommendation(current, map("250m", "384Mi"), ContainerPolicy{});
  CHECK(out.requests == map("250m", "384Mi"));
  CHECK(out.limits == map("500m", "1536Mi"));  // x2.5 and x1.5
}

TEST_CASE("RequestsAndLimits: a missing request counts as equal to its limit") {
  ContainerResources current{{}, map("1", "512Mi")};
  auto out = apply_recommendation(current, map("300m", "600Mi"), ContainerPolicy{});
  CHECK(out.requests == map("300m", "600Mi"));
  CHECK(out.limits == map("300m", "600Mi"));
}

TEST_CASE("RequestsAndLimits: a scaled limit rounds up and never falls below the request") {
  ContainerResources current{map("300m", nullptr), map("400m", nullptr)};
  auto out = apply_recommendation(current, map("100m", nullptr), ContainerPolicy{});
  CHECK(out.limits.at(kCpu) == q("134m"));  // 133.33m rounded up
  CHECK(out.requests.at(kCpu) == q("100m"));
}

TEST_CASE("RequestsOnly never touches limits and caps the request at an existing limit") {
  ContainerPolicy policy;
  policy.controlled_values = ControlledValues::kRequestsOnly;
  ContainerResources current{map("100m", "256Mi"), map("200m", nullptr)};
  auto out = apply_recommendation(current, map("350m", "384Mi"), policy);
  CHECK(out.requests == map("200m", "384Mi"));
  CHECK(out.limits == current.limits);
}

TEST_CASE("controlledResources chooses cpu and/or memory; other keys stay as they are") {
  ContainerPolicy policy;
  policy.control_cpu = false;
  ContainerResources current{map("100m", "256Mi"), map("200m", nullptr)};
  current.requests["ephemeral-storage"] = q("1Gi");
  auto out = apply_recommendation(current, map("350m", "384Mi"), policy);
  CHECK(out.requests.at(kCpu) == q("100m"));
  CHECK(out.limits.at(kCpu) == q("200m"));
  CHECK(out.requests.at(kMemory) == q("384Mi"));
  CHECK(out.requests.at("ephemeral-storage") == q("1Gi"));
}

TEST_CASE("minAllowed/maxAllowed bound the request") {
  ContainerPolicy policy;
  policy.range.min_allowed = map("50m", "512Mi");
  policy.range.max_allowed = map("200m", nullptr);
  auto out = apply_recommendation({map("100m", "256Mi"), {}}, map("350m", "300Mi"), policy);
  CHECK(out.requests == map("200m", "512Mi"));
  CHECK(out.limits.empty());
}

TEST_CASE("a LimitRange caps the request so the proportional limit stays within max") {
  LimitRangeItem lr{map("50m", nullptr), map("1", "1Gi"), {}};
  // request:limit = 1:4, max limit 1 -> request at most 250m; its limit becomes exactly 1.
  ContainerResources current{map("100m", "256Mi"), map("400m", "512Mi")};
  auto out = apply_recommendation(current, map("600m", "700Mi"), ContainerPolicy{}, &lr);
  CHECK(out.requests.at(kCpu) == q("250m"));
  CHECK(out.limits.at(kCpu) == q("1"));
  CHECK(out.requests.at(kMemory) == q("512Mi"));  // 1Gi * 256/512
  CHECK(out.limits.at(kMemory) == q("1Gi"));
  // min: a request below the LimitRange min is raised to it (and the limit with it).
  auto low = apply_recommendation(current, map("10m", nullptr), ContainerPolicy{}, &lr);
  CHECK(low.requests.at(kCpu) == q("50m"));
  CHECK(low.limits.at(kCpu) == q("200m"));
}

TEST_CASE("a LimitRange default limit bounds the request of a container without a limit") {
  LimitRangeItem lr{{}, {}, map("500m", nullptr)};
  auto out = apply_recommendation({map("100m", nullptr), {}}, map("800m", nullptr),
                                  ContainerPolicy{}, &lr);
  CHECK(out.requests.at(kCpu) == q("500m"));
  CHECK(out.limits.empty());  // vscaler adds no limit the template does not have
}

namespace {
ContainerRecommendation recommendation(const char* lower, const char* target, const char* upper) {
  ContainerRecommendation r;
  r.container_name = "app";
  r.lower_bound = map(lower, "100Mi");
  r.target = map(target, "200Mi");
  r.upper_bound = map(upper, "400Mi");
  r.uncapped_target = r.target;
  return r;
}
}  // namespace

TEST_CASE(
    "a recommendation is due when an applied request is out of bounds and the interval passed") {
  auto r = recommendation("200m", "300m", "600m");
  AppliedContainer c{"app", {map("100m", "200Mi"), {}}, &r, {}, nullptr};
  auto never = decide_update({&c, 1}, std::nullopt, minutes(10), kNow);
  CHECK(never.verdict == UpdateVerdict::kDue);
  CHECK(never.reason == "container app: cpu request 100m is below lowerBound 200m");
  auto long_ago = decide_update({&c, 1}, kNow - minutes(10), minutes(10), kNow);
  CHECK(long_ago.verdict == UpdateVerdict::kDue);
  auto recent = decide_update({&c, 1}, kNow - minutes(3), minutes(10), kNow);
  CHECK(recent.verdict == UpdateVerdict::kDeferred);
  CHECK(recent.not_before == kNow + minutes(7));
  // Above the upper bound too.
  c.current.requests = map("700m", "200Mi");
  auto high = decide_update({&c, 1}, std::nullopt, minutes(10), kNow);
  CHECK(high.verdict == UpdateVerdict::kDue);
  CHECK(high.reason == "container app: cpu request 700m is above upperBound 600m");
}

TEST_CASE("within bounds, uncontrolled, or a no-op application: no update") {
  auto r = recommendation("200m", "300m", "600m");
  AppliedContainer inside{"app", {map("250m", "150Mi"), {}}, &r, {}, nullptr};
  CHECK(decide_update({&inside, 1}, std::nullopt, minutes(10), kNow).verdict ==
        UpdateVerdict::kInBounds);
  AppliedContainer uncontrolled{"app", {map("100m", "150Mi"), {}}, &r, {}, nullptr};
  uncontrolled.policy.control_cpu = false;
  CHECK(decide_update({&uncontrolled, 1}, std::nullopt, minutes(10), kNow).verdict ==
        UpdateVerdict::kInBounds);
  // RequestsOnly with the request already at its limit: applying changes nothing, so never due.
  AppliedContainer capped{"app", {map("100m", "200Mi"), map("100m", nullptr)}, &r, {}, nullptr};
  capped.policy.controlled_values = ControlledValues::kRequestsOnly;
  CHECK(decide_update({&capped, 1}, std::nullopt, minutes(10), kNow).verdict ==
        UpdateVerdict::kInBounds);
  // A missing request is out of bounds.
  AppliedContainer unset{"app", {map(nullptr, "200Mi"), {}}, &r, {}, nullptr};
  auto d = decide_update({&unset, 1}, std::nullopt, minutes(10), kNow);
  CHECK(d.verdict == UpdateVerdict::kDue);
  CHECK(d.reason == "container app: cpu request is not set");
}

TEST_CASE("several LimitRanges merge into the tightest Container item") {
  auto list = nlohmann::json::parse(R"({"kind": "LimitRangeList", "apiVersion": "v1", "items": [
    {"metadata": {"name": "defaults", "namespace": "shop"}, "spec": {"limits": [
      {"type": "Pod", "max": {"cpu": "8"}},
      {"type": "Container", "max": {"cpu": "2", "memory": "4Gi"}, "min": {"cpu": "10m"},
       "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}}]}},
    {"metadata": {"name": "tight", "namespace": "shop"}, "spec": {"limits": [
      {"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "20m", "memory": "64Mi"},
       "default": {"cpu": "750m", "memory": "256Mi"}}]}}]})");
  auto merged = container_limit_range(list);
  REQUIRE(merged.ok());
  REQUIRE(merged->has_value());
  const LimitRangeItem& lr = **merged;
  CHECK(lr.max == map("1", "4Gi"));
  CHECK(lr.min == map("20m", "64Mi"));
  CHECK(lr.default_limit == map("500m", "256Mi"));  // the first default of each resource
}

TEST_CASE("no Container item: no LimitRange; a malformed one is an error naming it") {
  auto none = container_limit_range(nlohmann::json::parse(
      R"({"items": [{"spec": {"limits": [{"type": "Pod", "max": {"cpu": "8"}}]}}]})"));
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto bad = container_limit_range(nlohmann::json::parse(
      R"({"items": [{"spec": {"limits": [{"type": "Container", "max": {"cpu": "2 cores"}}]}}]})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("items[0].spec.limits[0].max.cpu") == 0);
  CHECK_FALSE(container_limit_range(nlohmann::json::object()).ok());
}
