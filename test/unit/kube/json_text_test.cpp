// kube::append_json / compact_json: byte for byte nlohmann's compact dump with invalid UTF-8
// replaced (a property over random values whose strings hold any byte), and the kinds it hands
// back to nlohmann (escapes, non-ASCII text, floating point) written as nlohmann writes them.
#include "kube/json_text.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "test/unit/kube/random_json.h"

using nlohmann::json;
using vscaler::kube::append_json;
using vscaler::kube::append_json_string;
using vscaler::kube::compact_json;

namespace {

std::string nlohmann_dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A string of `length` bytes: mostly printable ASCII, with any byte now and then (quotes,
// backslashes, control characters, DEL, UTF-8 sequences whole or cut, bytes no UTF-8 holds).
std::string random_text(std::mt19937_64& random) {
  std::string text;
  const int length = static_cast<int>(random() % 12);
  for (int i = 0; i < length; ++i) {
    switch (random() % 8) {
      case 0:
        text += static_cast<char>(random() % 256);
        break;
      case 1:
        text += "é€😀"[random() % 9];  // a byte of a multi-byte sequence, maybe not the first
        break;
      default:
        text += static_cast<char>(0x20 + random() % 0x5f);
    }
  }
  return text;
}

}  // namespace

TEST_CASE("property: compact_json writes what nlohmann's compact dump writes, byte for byte") {
  std::mt19937_64 random(20261207);
  for (int round = 0; round < 20000; ++round) {
    const json value = vscaler::test::random_json(random, 4, random_text);
    const std::string expected = nlohmann_dump(value);
    REQUIRE_MESSAGE(compact_json(value) == expected, "value: ", expected);
  }
}

TEST_CASE("each kind of value, and the bytes nlohmann escapes or replaces") {
  const json values[] = {
      json::object(),
      json::array(),
      nullptr,
      true,
      false,
      0,
      -1,
      std::numeric_limits<std::int64_t>::min(),
      std::numeric_limits<std::uint64_t>::max(),
      0.1,
      -0.0,
      1e300,
      std::nan(""),
      std::numeric_limits<double>::infinity(),
      "",
      "250m",
      "q\"uote",
      "back\\slash",
      "tab\t and \x01 and \x1f",
      "del \x7f",
      "é€😀",
      std::string("cut \xe2\x82", 6),
      std::string("nul \0 inside", 12),
      "\xff\xfe",
      json::parse(R"({"b":[1,{"c":null}],"a":"x","é":{"\u0000":[]}})"),
      json::binary({1, 2, 3}),
  };
  for (const json& value : values) {
    const std::string expected = nlohmann_dump(value);
    CHECK_MESSAGE(compact_json(value) == expected, "value: ", expected);
  }
}

TEST_CASE("append_json and append_json_string add to what the text holds") {
  std::string out = "[";
  append_json(out, json{{"limits", {{"cpu", "1"}}}});
  out += ',';
  append_json_string(out, "a\"b");
  out += ']';
  CHECK(out == R"([{"limits":{"cpu":"1"}},"a\"b"])");
}
