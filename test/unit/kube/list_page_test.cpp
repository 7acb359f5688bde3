// for_each_list_item: items as their own JSON text, metadata read, malformed pages refused.
#include "kube/list_page.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using vscaler::kube::for_each_list_item;

namespace {
std::vector<std::string> items_of(std::string body) {
  std::vector<std::string> out;
  auto read = for_each_list_item(body, [&](std::string_view item) {
    out.emplace_back(item);
    return true;
  });
  REQUIRE(read.ok());
  CHECK(read->count == out.size());
  return out;
}
}  // namespace

TEST_CASE("each item is handed over as its own JSON text, with the page's metadata") {
  std::string body =
      R"({"kind":"List","metadata":{"resourceVersion":"42","continue":"abc"},)"
      R"("items":[{"metadata":{"name":"a"},"status":{"x":[1,2]}}, {"metadata":{"name":"b"}}]})";
  std::vector<std::string> seen;
  auto read = for_each_list_item(body, [&](std::string_view item) {
    seen.emplace_back(item);
    return true;
  });
  REQUIRE(read.ok());
  CHECK(read->resource_version == "42");
  CHECK(read->continue_token == "abc");
  CHECK(read->count == 2);
  REQUIRE(seen.size() == 2);
  CHECK(nlohmann::json::parse(seen[0]) ==
        nlohmann::json::parse(R"({"metadata":{"name":"a"},"status":{"x":[1,2]}})"));
  CHECK(nlohmann::json::parse(seen[1])["metadata"]["name"] == "b");
}

TEST_CASE("items before metadata, null items and an empty page") {
  std::string body = R"({"items":[{"a":1}],"metadata":{"resourceVersion":"7"}})";
  auto read = for_each_list_item(body, [](std::string_view) { return true; });
  REQUIRE(read.ok());
  CHECK(read->resource_version == "7");
  CHECK(read->continue_token.empty());
  CHECK(items_of(R"({"metadata":{},"items":null})").empty());
  CHECK(items_of(R"({"metadata":{},"items":[]})").empty());
}

TEST_CASE("malformed pages fail with a reason") {
  for (std::string body : {std::string(R"({"metadata":{}})"), std::string(R"({"items":{}})"),
                           std::string(R"({"items":[1]})"), std::string("not json"),
                           std::string(R"({"items":[{"a":)")}) {
    auto read = for_each_list_item(body, [](std::string_view) { return true; });
    CHECK_MESSAGE(!read.ok(), body);
  }
  std::string body = R"({"items":[{"a":1},{"b":2}]})";
  int calls = 0;
  auto read = for_each_list_item(body, [&](std::string_view) { return ++calls < 1; });
  CHECK(!read.ok());
  CHECK(calls == 1);
}
