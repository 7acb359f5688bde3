// FlatMap: a sorted-vector map with std::map's lookups, inserts and iteration order.
#include "base/flat_map.h"

#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using vscaler::base::FlatMap;

namespace {
using Map = FlatMap<std::string, int, std::less<>>;

std::vector<std::pair<std::string, int>> items(const Map& map) {
  return {map.begin(), map.end()};
}
}  // namespace

TEST_CASE("entries iterate in key order whatever the insertion order") {
  Map map;
  CHECK(map.empty());
  CHECK(map.emplace("memory", 2).second);
  CHECK(map.emplace("cpu", 1).second);
  CHECK(map.emplace("gpu", 3).second);
  CHECK(map.size() == 3);
  CHECK(items(map) ==
        std::vector<std::pair<std::string, int>>{{"cpu", 1}, {"gpu", 3}, {"memory", 2}});
}

TEST_CASE("emplace and insert keep the first value of a key, insert_or_assign replaces it") {
  Map map;
  map.emplace("cpu", 1);
  auto [it, added] = map.emplace("cpu", 9);
  CHECK_FALSE(added);
  CHECK(it->second == 1);
  CHECK_FALSE(map.insert({"cpu", 8}).second);
  CHECK(map.at("cpu") == 1);
  CHECK_FALSE(map.insert_or_assign("cpu", 7).second);
  CHECK(map.at("cpu") == 7);
  CHECK(map.insert_or_assign("memory", 5).second);
  CHECK(map.size() == 2);
}

TEST_CASE("lookups take string views and C strings without building a key") {
  Map map{{"memory", 2}, {"cpu", 1}};
  std::string_view cpu = "cpu";
  CHECK(map.find(cpu) != map.end());
  CHECK(map.find(cpu)->second == 1);
  CHECK(map.contains("memory"));
  CHECK_FALSE(map.contains("gpu"));
  CHECK(map.count("cpu") == 1);
  CHECK(map.count("cp") == 0);
  CHECK(map.find("cpuu") == map.end());
  CHECK(map.find("") == map.end());
  CHECK_THROWS_AS(map.at("gpu"), std::out_of_range);
  const Map& constant = map;
  CHECK(constant.find("memory")->second == 2);
  CHECK(constant.lower_bound("d")->first == "memory");
}

TEST_CASE("operator[] adds a value-initialised entry in order, or returns the existing one") {
  Map map;
  map["memory"] = 2;
  map["cpu"] += 1;
  map["cpu"] += 1;
  CHECK(items(map) == std::vector<std::pair<std::string, int>>{{"cpu", 2}, {"memory", 2}});
}

TEST_CASE("erase by key or iterator keeps the rest in order") {
  Map map{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}};
  CHECK(map.erase("b") == 1);
  CHECK(map.erase("b") == 0);
  auto after = map.erase(map.find("a"));
  CHECK(after->first == "c");
  CHECK(items(map) == std::vector<std::pair<std::string, int>>{{"c", 3}, {"d", 4}});
  map.clear();
  CHECK(map.empty());
}

TEST_CASE("a range of any order builds the same map as std::map's range constructor") {
  std::vector<std::pair<std::string, int>> input{{"z", 1}, {"a", 2}, {"m", 3}, {"a", 4}};
  Map flat(input.begin(), input.end());
  std::map<std::string, int> tree(input.begin(), input.end());
  CHECK(items(flat) == std::vector<std::pair<std::string, int>>(tree.begin(), tree.end()));
  Map back(tree.begin(), tree.end());  // from std::map's pair<const K, V>
  CHECK(back == flat);
  std::map<std::string, int, std::less<>> again(flat.begin(), flat.end());
  CHECK(again == std::map<std::string, int, std::less<>>(tree.begin(), tree.end()));
}

TEST_CASE("the storage holds exactly the entries of a small map") {
  Map map;
  map.emplace("memory", 2);
  CHECK(map.capacity() == 1);
  map.emplace("cpu", 1);
  CHECK(map.capacity() == 2);
  map.emplace("gpu", 3);  // a std::vector's doubling would leave room for four
  CHECK(map.capacity() == 3);
  map.emplace("cpu", 9);  // present: no growth
  CHECK(map.capacity() == 3);
  Map equal{{"cpu", 1}, {"gpu", 3}, {"memory", 2}};
  CHECK(map == equal);
  equal["cpu"] = 5;
  CHECK_FALSE(map == equal);
}

TEST_CASE("a large map stays sorted and finds every key") {
  Map map;
  std::map<std::string, int> model;
  for (int i = 0; i < 2000; ++i) {
    std::string key = std::to_string((i * 7919) % 2003);
    map.emplace(key, i);
    model.emplace(key, i);
  }
  CHECK(map.size() == model.size());
  CHECK(items(map) == std::vector<std::pair<std::string, int>>(model.begin(), model.end()));
  for (const auto& [key, value] : model) CHECK(map.at(key) == value);
}
