// JsonProjection and ProjectingParser: kept paths only, whole trees equal to nlohmann's parse
// (a property over random documents), items of a page parsed in place, bad text refused.
#include "kube/json_projection.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kube/list_page.h"
#include "test/unit/kube/random_json.h"

using nlohmann::json;
using vscaler::kube::JsonProjection;
using vscaler::kube::keep_everything;
using vscaler::kube::ProjectingParser;

namespace {

json parse(ProjectingParser& parser, const std::string& text, const JsonProjection& projection) {
  auto parsed = parser.parse(text, 0, projection);
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error()));
  return std::move(parsed).value();
}

// Text of every kind nlohmann can dump: escapes and non-ASCII, names repeated across members.
std::string random_text(std::mt19937_64& random) {
  static const std::vector<std::string> texts = {"",      "a",   "q\"uote", "back\\slash",
                                                 "tab\t", "é€😀", "/~0~1",   "line\nbreak"};
  return texts[random() % texts.size()];
}

// Equal values of the same kinds all the way down: json's == holds 1 (signed) and 1 (unsigned)
// equal, but a reader asking is_number_unsigned() tells them apart.
bool identical(const json& a, const json& b) {
  if (a.type() != b.type() || a != b) return false;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!identical(it.value(), b.at(it.key()))) return false;
    }
  } else if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!identical(a[i], b[i])) return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("a projection keeps only its paths; array elements keep their positions") {
  auto projection = JsonProjection::parse({"/metadata/name", "/spec/containers/*/resources"});
  REQUIRE(projection.ok());
  ProjectingParser parser;
  json slim = parse(parser, R"({"metadata": {"name": "web", "managedFields": [{"a": 1}]},
    "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}},
                            {"name": "b"}], "volumes": []},
    "status": {"phase": "Running"}})",
                    *projection);
  CHECK(slim == json::parse(R"({"metadata": {"name": "web"},
    "spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}, {}]}})"));
}

TEST_CASE("a member named by a path also keeps the paths of its \"*\" sibling") {
  const std::string text = R"({"a": {"b": {"x": 1, "y": 2, "z": 3}, "c": {"x": 4, "y": 5},
    "d": [{"x": 6, "y": 7}]}})";
  // In either order of the paths (d, an array where x names a member, is kept empty); and a named
  // path deeper under "*" than the wildcard's own.
  for (std::vector<std::string> paths : {std::vector<std::string>{"/a/*/x", "/a/b/y"},
                                         std::vector<std::string>{"/a/b/y", "/a/*/x"}}) {
    CAPTURE(paths.front());
    auto projection = JsonProjection::parse(paths);
    REQUIRE(projection.ok());
    ProjectingParser parser;
    CHECK(parse(parser, text, *projection) ==
          json::parse(R"({"a": {"b": {"x": 1, "y": 2}, "c": {"x": 4}, "d": []}})"));
  }
  auto nested = JsonProjection::parse({"/*/m/*", "/k/m/n/p", "/k/q"});
  REQUIRE(nested.ok());
  ProjectingParser parser;
  CHECK(parse(parser, R"({"k": {"m": {"n": {"p": 1, "o": 2}}, "q": 3, "r": 4},
                          "j": {"m": {"n": {"p": 5}}, "q": 6}})",
              *nested) == json::parse(R"({"k": {"m": {"n": {"p": 1, "o": 2}}, "q": 3},
                                          "j": {"m": {"n": {"p": 5}}}})"));
}

TEST_CASE("an integer beyond 64 bits is read as nlohmann reads it, projected the same way") {
  // Valid JSON that simdjson refuses: Go writes a float64 of 1e20 in plain digits.
  const std::string text =
      R"({"metadata": {"name": "a", "uid": "u"}, "spec": {"x": 100000000000000000000, "y": 1,
          "items": [{"v": 1, "w": 2}]}, "status": {}})";
  ProjectingParser parser;
  CHECK(identical(parse(parser, text, keep_everything()), json::parse(text)));
  auto projection = JsonProjection::parse({"/metadata/name", "/spec/x", "/spec/items/*/w"});
  REQUIRE(projection.ok());
  json slim = parse(parser, text, *projection);
  CHECK(slim == json::parse(R"({"metadata": {"name": "a"},
                                "spec": {"x": 1e20, "items": [{"w": 2}]}})"));
  CHECK(slim["spec"]["x"].is_number_float());
  // Still refused: a number that is not one, and a big one nested past simdjson's depth limit.
  CHECK_FALSE(parser.parse(R"({"x": 01})", 0, keep_everything()).ok());
  CHECK_FALSE(parser.parse(R"({"x": -})", 0, keep_everything()).ok());
  std::string deep =
      "[100000000000000000000," + std::string(2000, '[') + std::string(2000, ']') + "]";
  auto refused = parser.parse(deep, 0, keep_everything());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error() == "JSON nesting is deeper than 1024 levels");
  CHECK(parse(parser, R"({"a": [1]})", keep_everything()) == json{{"a", {1}}});
}

TEST_CASE("property: keeping everything gives nlohmann's own parse of the text") {
  std::mt19937_64 random(20261205);
  ProjectingParser parser;  // one parser for every document: its buffers are reused
  const JsonProjection everything;
  for (int i = 0; i < 500; ++i) {
    const json document = vscaler::test::random_json(random, 5, random_text);
    const std::string text = document.dump();
    CAPTURE(text);
    CHECK(identical(parse(parser, text, everything), json::parse(text)));
  }
}

TEST_CASE(
    "numbers take nlohmann's kinds: no sign is unsigned, a sign is signed, a dot is a double") {
  ProjectingParser parser;
  const std::string text = R"([0, 7, -7, 18446744073709551615, -9223372036854775808, 1.0, 2e3])";
  json parsed = parse(parser, text, keep_everything());
  CHECK(identical(parsed, json::parse(text)));
  CHECK(parsed[0].is_number_unsigned());
  CHECK(parsed[1].is_number_unsigned());
  CHECK(parsed[2].type() == json::value_t::number_integer);
  CHECK(parsed[3].is_number_unsigned());
  CHECK(parsed[4].type() == json::value_t::number_integer);
  CHECK(parsed[5].is_number_float());
  CHECK(parsed[6].is_number_float());
}

TEST_CASE("items of a page parse in place, reading past an item into the rest of the page") {
  std::mt19937_64 random(7);
  json page = {{"metadata", {{"resourceVersion", "9"}}}, {"items", json::array()}};
  for (int i = 0; i < 50; ++i) {
    page["items"].push_back({{"metadata", {{"name", "p" + std::to_string(i)}}},
                             {"spec", vscaler::test::random_json(random, 4, random_text)}});
  }
  std::string body = page.dump();
  ProjectingParser parser;
  const JsonProjection everything;
  std::size_t index = 0;
  auto read = vscaler::kube::for_each_list_item(body, [&](std::string_view text) {
    const char* readable_end = body.data() + body.capacity();
    auto parsed = parser.parse(
        text, static_cast<std::size_t>(readable_end - (text.data() + text.size())), everything);
    REQUIRE(parsed.ok());
    CHECK(identical(*parsed, json::parse(text)));
    CHECK(*parsed == page["items"][index++]);
    return true;
  });
  REQUIRE(read.ok());
  CHECK(index == 50);
}

TEST_CASE("text that is not JSON is refused, and the parser goes on") {
  ProjectingParser parser;
  const JsonProjection everything;
  for (std::string bad : {"{", "{\"a\": }", "[1, 2", "nul", "\"\xff\xfe\"", ""}) {
    CAPTURE(bad);
    auto parsed = parser.parse(bad, 0, everything);
    REQUIRE_FALSE(parsed.ok());
    CHECK_FALSE(parsed.error().empty());
  }
  CHECK(parse(parser, R"({"a": [1]})", everything) == json{{"a", {1}}});
}

TEST_CASE("a text above the retained size is parsed, then its buffers are freed") {
  ProjectingParser parser(64 * 1024);
  const JsonProjection everything;
  CHECK(parse(parser, json{{"small", std::string(10000, 'a')}}.dump(), everything).size() == 1);
  const std::size_t small = parser.retained_capacity();
  CHECK(small >= 10000);
  const json big = {{"big", std::string(300000, 'b')}};
  CHECK(parse(parser, big.dump(), everything) == big);
  CHECK(parser.retained_capacity() == 0);
  CHECK_FALSE(parser.parse("[" + std::string(100000, ' '), 0, everything).ok());
  CHECK(parser.retained_capacity() == 0);  // freed after a failed parse too
  CHECK(parse(parser, R"({"a": 1})", everything) == json{{"a", 1}});
  CHECK(parser.retained_capacity() > 0);
}

TEST_CASE("a projection path must start with /") {
  auto bad = JsonProjection::parse({"/metadata", "spec"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == "projection path \"spec\" must start with /");
}
