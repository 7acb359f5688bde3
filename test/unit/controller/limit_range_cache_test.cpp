// LimitRangeCache: per namespace, every LimitRange's Container and Pod items merged (the tightest
// wins), rebuilt whole; unknown namespaces and unreadable LimitRanges give no item.
#include "controller/limit_range_cache.h"

#include <doctest/doctest.h>

using namespace vscaler::controller;
using nlohmann::json;

namespace {

std::shared_ptr<const json> limit_range(const char* ns, const char* name, json limits) {
  return std::make_shared<const json>(
      json{{"metadata", {{"namespace", ns}, {"name", name}}}, {"spec", {{"limits", limits}}}});
}

json container_max(const char* cpu) {
  return json::array({{{"type", "Container"}, {"max", {{"cpu", cpu}}}}});
}

}  // namespace

TEST_CASE("LimitRangeCache merges each namespace's LimitRanges and forgets what was removed") {
  LimitRangeCache cache;
  CHECK(cache.of("team-a") == nullptr);

  CHECK(cache.rebuild({limit_range("team-a", "wide", container_max("2")),
                       limit_range("team-a", "tight", container_max("500m")),
                       limit_range("team-b", "pods-only",
                                   json::array({{{"type", "Pod"}, {"max", {{"cpu", "1"}}}}}))}) ==
        0);
  auto a = cache.of("team-a");
  REQUIRE(a != nullptr);
  REQUIRE(a->max.count("cpu") == 1);
  CHECK(a->max.at("cpu").to_string() == "500m");  // the smallest max of the two
  auto b = cache.of("team-b");  // a Pod max only: it bounds the pod's containers together
  REQUIRE(b != nullptr);
  CHECK(b->max.empty());
  CHECK(b->pod_max.at("cpu").to_string() == "1");
  CHECK(cache.of("team-c") == nullptr);

  // A snapshot taken before a rebuild stays valid and unchanged.
  CHECK(cache.rebuild({limit_range("team-a", "wide", container_max("2"))}) == 0);
  CHECK(a->max.at("cpu").to_string() == "500m");
  CHECK(cache.of("team-a")->max.at("cpu").to_string() == "2");

  CHECK(cache.rebuild({}) == 0);
  CHECK(cache.of("team-a") == nullptr);
}

TEST_CASE("LimitRangeCache leaves out a namespace whose LimitRange does not parse") {
  LimitRangeCache cache;
  CHECK(cache.rebuild({limit_range("bad", "oops", container_max("lots")),
                       limit_range("good", "ok", container_max("1"))}) == 1);
  CHECK(cache.of("bad") == nullptr);
  CHECK(cache.of("good") != nullptr);
  // Objects without a namespace are skipped, not stored under "".
  CHECK(cache.rebuild({std::make_shared<const json>(json{{"metadata", {{"name", "x"}}}})}) == 0);
  CHECK(cache.of("") == nullptr);
}

TEST_CASE("LimitRangeCache::rebuild names the namespaces whose limits appeared, changed or went") {
  LimitRangeCache cache;
  std::vector<std::string> changed;
  CHECK(cache.rebuild(
            {limit_range("a", "x", container_max("1")), limit_range("b", "x", container_max("2"))},
            &changed) == 0);
  CHECK(changed == std::vector<std::string>{"a", "b"});

  // The same limits again: nothing changed, whatever the objects' names.
  changed.clear();
  CHECK(cache.rebuild({limit_range("b", "renamed", container_max("2")),
                       limit_range("a", "x", container_max("1"))},
                      &changed) == 0);
  CHECK(changed.empty());

  // a tightened, b removed, c added.
  changed.clear();
  CHECK(cache.rebuild({limit_range("a", "x", container_max("500m")),
                       limit_range("c", "x", container_max("1"))},
                      &changed) == 0);
  CHECK(changed == std::vector<std::string>{"a", "b", "c"});
}
