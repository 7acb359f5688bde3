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

TEST_CASE("RequestsAndLimits: a scaled limit is written in the limit's own format") {
  // What the patch and the status carry: "600Mi" as the template wrote "512Mi", not the bytes.
  ContainerResources current{map("100m", "256Mi"), map("250m", "512Mi")};
  auto out = apply_recommendation(current, map("150m", "300Mi"), ContainerPolicy{});
  CHECK(out.limits.at(kMemory).to_string() == "600Mi");
  CHECK(out.limits.at(kCpu).to_string() == "375m");
  // Not a whole number of Mi: the largest binary unit that holds it exactly.
  out = apply_recommendation(current, map("150m", "300.5Mi"), ContainerPolicy{});
  CHECK(out.limits.at(kMemory).to_string() == "601Mi");
  current = ContainerResources{map(nullptr, "2Gi"), map(nullptr, "3Gi")};
  out = apply_recommendation(current, map(nullptr, "489Mi"), ContainerPolicy{});
  CHECK(out.limits.at(kMemory).to_string() == "751104Ki");  // 489Mi x 1.5
  // A limit written in bytes stays in bytes (decimal), as VPA keeps it.
  current = ContainerResources{map(nullptr, "256Mi"), map(nullptr, "536870912")};
  out = apply_recommendation(current, map(nullptr, "300Mi"), ContainerPolicy{});
  CHECK(out.limits.at(kMemory).to_string() == "629145600");
}

TEST_CASE("RequestsAndLimits: a missing request counts as equal to its limit") {
  ContainerResources current{{}, map("1", "512Mi")};
  auto out = apply_recommendation(current, map("300m", "600Mi"), ContainerPolicy{});
  CHECK(out.requests == map("300m", "600Mi"));
  CHECK(out.limits == map("300m", "600Mi"));
}

TEST_CASE("effective_request: the request, else the limit the API server defaults it to") {
  ResourceMap requests = map("100m", nullptr);
  ResourceMap limits = map("200m", "1Gi");
  REQUIRE(effective_request(requests, limits, kCpu) != nullptr);
  CHECK(*effective_request(requests, limits, kCpu) == q("100m"));  // the request wins
  REQUIRE(effective_request(requests, limits, kMemory) != nullptr);
  CHECK(*effective_request(requests, limits, kMemory) == q("1Gi"));  // no request: the limit
  CHECK(effective_request(requests, {}, kMemory) == nullptr);        // neither
  CHECK(effective_request({}, {}, kCpu) == nullptr);
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
  CHECK(lr.pod_max == map("8", nullptr));
  CHECK(lr.max_limit_request_ratio.empty());
}

TEST_CASE("Pod max and maxLimitRequestRatio: the smallest of every LimitRange") {
  auto merged = container_limit_range(nlohmann::json::parse(R"({"items": [
    {"spec": {"limits": [{"type": "Pod", "max": {"cpu": "4", "memory": "8Gi"}},
                         {"type": "Container", "maxLimitRequestRatio": {"cpu": "4"}}]}},
    {"spec": {"limits": [{"type": "Pod", "max": {"cpu": "2"}},
                         {"type": "Container", "maxLimitRequestRatio": {"cpu": "10", "memory": "2"}}]}}]})"));
  REQUIRE(merged.ok());
  REQUIRE(merged->has_value());
  CHECK((*merged)->pod_max == map("2", "8Gi"));
  CHECK((*merged)->max_limit_request_ratio == map("4", "2"));
  auto bad = container_limit_range(nlohmann::json::parse(
      R"({"items": [{"spec": {"limits": [{"type": "Container", "maxLimitRequestRatio": {"cpu": "x"}}]}}]})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("items[0].spec.limits[0].maxLimitRequestRatio.cpu") == 0);
}

TEST_CASE("maxLimitRequestRatio holds the request up where the limit stays as it is") {
  LimitRangeItem lr;
  lr.max_limit_request_ratio = map("2", "4");
  SUBCASE("RequestsOnly: limit 1 core, ratio 2 -> request at least 500m") {
    ContainerPolicy only;
    only.controlled_values = ControlledValues::kRequestsOnly;
    auto out = apply_recommendation({map("800m", nullptr), map("1", nullptr)}, map("100m", nullptr),
                                    only, &lr);
    CHECK(out.requests.at(kCpu) == q("500m"));
    CHECK(out.limits.at(kCpu) == q("1"));
  }
  SUBCASE("no limit of its own, the LimitRange default 1Gi, ratio 4 -> request at least 256Mi") {
    lr.default_limit = map(nullptr, "1Gi");
    auto out = apply_recommendation({map(nullptr, "512Mi"), {}}, map(nullptr, "100Mi"),
                                    ContainerPolicy{}, &lr);
    CHECK(out.requests.at(kMemory) == q("256Mi"));
  }
  SUBCASE("limits scaled with the request keep the template's proportion: no floor") {
    auto out = apply_recommendation({map("100m", nullptr), map("200m", nullptr)},
                                    map("50m", nullptr), ContainerPolicy{}, &lr);
    CHECK(out.requests.at(kCpu) == q("50m"));
    CHECK(out.limits.at(kCpu) == q("100m"));
  }
}

TEST_CASE("a Pod max scales the recommended containers down together; fixed ones stay") {
  ContainerResources app{map("1", "1Gi"), map("2", "2Gi")};
  ContainerResources side{map("500m", "256Mi"), map("500m", "256Mi")};
  const ContainerPolicy recommended;
  std::vector<PodMaxMember> pod{{&app, &recommended}, {&side, nullptr}};
  fit_pod_max(pod, map("1500m", "4Gi"));
  // cpu limits: 500m fixed + 2 adjustable > 1500m: x (1000m / 2000m) -> app limit 1; the
  // requests (500m + 1 = 1500m) fit. Memory fits (2Gi + 256Mi <= 4Gi): unchanged.
  CHECK(app.limits.at(kCpu) == q("1"));
  CHECK(app.requests.at(kCpu) == q("1"));
  CHECK(app.limits.at(kMemory) == q("2Gi"));
  CHECK(side.limits.at(kCpu) == q("500m"));
  // Fixed containers already over the max: nothing to gain, the adjustable one is left alone.
  ContainerResources big{map("2", nullptr), map("2", nullptr)};
  ContainerResources small{map("100m", nullptr), map("100m", nullptr)};
  std::vector<PodMaxMember> over{{&small, &recommended}, {&big, nullptr}};
  fit_pod_max(over, map("1", nullptr));
  CHECK(small.limits.at(kCpu) == q("100m"));
  // RequestsOnly: its limit is not vscaler's to scale; it counts as fixed, the request adjusts.
  ContainerPolicy only;
  only.controlled_values = ControlledValues::kRequestsOnly;
  ContainerResources ro{map("800m", nullptr), map("1", nullptr)};
  ContainerResources other{map("400m", nullptr), map("400m", nullptr)};
  std::vector<PodMaxMember> mixed{{&ro, &only}, {&other, nullptr}};
  fit_pod_max(mixed, map("1", nullptr));
  CHECK(ro.limits.at(kCpu) == q("1"));       // 1 + 400m > 1 core, but fixed values alone reach it
  CHECK(ro.requests.at(kCpu) == q("600m"));  // requests: 800m x (600m / 800m)
}

TEST_CASE("pod totals bound requests and limits apart (a ResourceQuota's headroom)") {
  ContainerResources app{map("600m", "1Gi"), map("1200m", "2Gi")};
  ContainerResources side{map("200m", nullptr), map("200m", nullptr)};
  const ContainerPolicy recommended;
  std::vector<PodMaxMember> pod{{&app, &recommended}, {&side, nullptr}};
  CHECK(pod_totals({app, side}).requests.at(kCpu) == q("800m"));
  CHECK(pod_totals({app, side}).limits.at(kMemory) == q("2Gi"));
  // requests.cpu at most 500m: 200m fixed, app's 600m x (300m / 600m) = 300m; limits.cpu at most
  // 2: 1200m + 200m fit, unchanged; memory unbounded.
  CHECK(fit_pod_totals(pod, PodTotals{map("500m", nullptr), map("2", nullptr)}));
  CHECK(app.requests.at(kCpu) == q("300m"));
  CHECK(app.limits.at(kCpu) == q("1200m"));
  CHECK(app.requests.at(kMemory) == q("1Gi"));
  // Within every bound: nothing scaled, false.
  CHECK_FALSE(fit_pod_totals(pod, PodTotals{map("1", "4Gi"), map("2", "4Gi")}));
  // A limits bound below the request it leaves: the request follows the limit down.
  ContainerResources tight{map("500m", nullptr), map("600m", nullptr)};
  std::vector<PodMaxMember> one{{&tight, &recommended}};
  CHECK(fit_pod_totals(one, PodTotals{{}, map("400m", nullptr)}));
  CHECK(tight.limits.at(kCpu) == q("400m"));
  CHECK(tight.requests.at(kCpu) == q("400m"));
  // A container asking its limit (Guaranteed) keeps asking it under a requests bound: its limit
  // comes down with its request, the pod's QoS class stays. Not so under RequestsOnly.
  ContainerResources guaranteed{map("2", "1Gi"), map("2", "1Gi")};
  std::vector<PodMaxMember> alone{{&guaranteed, &recommended}};
  CHECK(fit_pod_totals(alone, PodTotals{map("1200m", nullptr), {}}));
  CHECK(guaranteed.requests.at(kCpu) == q("1200m"));
  CHECK(guaranteed.limits.at(kCpu) == q("1200m"));
  CHECK(guaranteed.limits.at(kMemory) == q("1Gi"));
  ContainerPolicy only;
  only.controlled_values = ControlledValues::kRequestsOnly;
  ContainerResources kept{map("2", nullptr), map("2", nullptr)};
  std::vector<PodMaxMember> requests_only{{&kept, &only}};
  CHECK(fit_pod_totals(requests_only, PodTotals{map("1200m", nullptr), {}}));
  CHECK(kept.requests.at(kCpu) == q("1200m"));
  CHECK(kept.limits.at(kCpu) == q("2"));
}

TEST_CASE("no item that bounds cpu or memory: no LimitRange; a malformed one is an error") {
  auto none = container_limit_range(nlohmann::json::parse(
      R"({"items": [{"spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "8Gi"}},
                                         {"type": "Pod", "max": {"pods": "3"}}]}}]})"));
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto bad = container_limit_range(nlohmann::json::parse(
      R"({"items": [{"spec": {"limits": [{"type": "Container", "max": {"cpu": "2 cores"}}]}}]})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("items[0].spec.limits[0].max.cpu") == 0);
  CHECK_FALSE(container_limit_range(nlohmann::json::object()).ok());
}

TEST_CASE("limit_range_violation: what LimitRanger would refuse in a container's values") {
  LimitRangeItem range;
  range.min[kCpu] = q("50m");
  range.max[kCpu] = q("1");
  range.max_limit_request_ratio[kCpu] = q("4");
  auto container = [](const char* request, const char* limit) {
    ContainerResources out;
    if (request != nullptr) out.requests[kCpu] = q(request);
    if (limit != nullptr) out.limits[kCpu] = q(limit);
    return out;
  };
  CHECK(limit_range_violation(container("100m", "400m"), range).empty());
  CHECK(limit_range_violation(container(nullptr, "1"), range).empty());
  CHECK(limit_range_violation(container("20m", nullptr), range) ==
        "requests.cpu 20m is below the LimitRange's min 50m");
  CHECK(limit_range_violation(container("100m", "2"), range) ==
        "limits.cpu 2 is above the LimitRange's max 1");
  CHECK(limit_range_violation(container("100m", "500m"), range) ==
        "limits.cpu 500m is more than 4 times requests.cpu 100m (the LimitRange's "
        "maxLimitRequestRatio)");
  CHECK(limit_range_violation(container("100m", "500m"), LimitRangeItem{}).empty());
}
