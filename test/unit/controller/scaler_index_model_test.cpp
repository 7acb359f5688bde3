// ScalerIndex against a plain model: thousands of upserts, moves and removes, growing and
// shrinking every table (its own executable: scaler_index_test replaces operator new).
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "controller/scaler_index.h"

using vscaler::controller::ScalerIndex;
using vscaler::controller::ScalerTarget;

TEST_CASE("many upserts, moves and removes keep the index equal to a model") {
  ScalerIndex index;
  std::map<std::string, ScalerTarget> model;
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<unsigned>(state >> 33);
  };
  const char* kinds[] = {"Deployment", "StatefulSet", "DaemonSet"};
  for (int step = 0; step < 20000; ++step) {
    std::string key = "ns" + std::to_string(next() % 7) + "/s" + std::to_string(next() % 3000);
    if (next() % 4 == 0) {
      auto old = index.remove(key);
      auto it = model.find(key);
      REQUIRE(old.has_value() == (it != model.end()));
      if (it != model.end()) {
        CHECK(*old == it->second);
        model.erase(it);
      }
      continue;
    }
    ScalerTarget target{key.substr(0, key.find('/')), kinds[next() % 3],
                        "d" + std::to_string(next() % 500)};
    auto old = index.upsert(key, target.ns, target.kind, target.name);
    auto it = model.find(key);
    if (it == model.end() || it->second == target) {
      CHECK_FALSE(old.has_value());
    } else {
      REQUIRE(old.has_value());
      CHECK(*old == it->second);
    }
    model[key] = target;
  }
  CHECK(index.size() == model.size());
  std::map<std::string, std::vector<std::string>> by_target;  // "ns/kind/name" -> sorted keys
  for (const auto& [key, target] : model) {
    CHECK(index.target_of(key) == target);
    by_target[target.ns + "/" + target.kind + "/" + target.name].push_back(key);
  }
  for (const auto& [key, target] : model) {
    CHECK(index.lookup(target.ns, target.kind, target.name) ==
          by_target[target.ns + "/" + target.kind + "/" + target.name]);
  }
  for (const auto& [key, target] : model) index.remove(key);
  CHECK(index.size() == 0);
  CHECK(index.lookup("ns0", "Deployment", "d1").empty());
}
