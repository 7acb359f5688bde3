// Compact JSON text without nlohmann's serializer for the common parts; see the header.
#include "kube/json_text.h"

#include <algorithm>
#include <charconv>

namespace vscaler::kube {
namespace {

/// Written as is between quotes: no byte JSON must escape, and no byte of a multi-byte UTF-8
/// sequence (nlohmann checks those, replacing what is invalid).
bool plain(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x80 &&
           c != '"' && c != '\\';
  });
}

/// Appends an integer as nlohmann writes it (decimal digits, a minus sign when negative).
template <typename Integer>
void append_integer(std::string& out, Integer value) {
  char digits[24];
  auto [end, error] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, end);
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  if (!plain(text)) {
    out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

void append_json(std::string& out, const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const nlohmann::json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json_string(out, key);
        out += ':';
        append_json(out, member);
      }
      out += '}';
      return;
    }
    case nlohmann::json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value.get_ref<const nlohmann::json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        append_json(out, element);
      }
      out += ']';
      return;
    }
    case nlohmann::json::value_t::string:
      append_json_string(out, value.get_ref<const std::string&>());
      return;
    case nlohmann::json::value_t::number_integer:
      append_integer(out, value.get<nlohmann::json::number_integer_t>());
      return;
    case nlohmann::json::value_t::number_unsigned:
      append_integer(out, value.get<nlohmann::json::number_unsigned_t>());
      return;
    case nlohmann::json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case nlohmann::json::value_t::null:
      out += "null";
      return;
    default:  // floating point (nlohmann's shortest round trip), binary, discarded
      out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
  }
}

std::string compact_json(const nlohmann::json& value) {
  std::string out;
  append_json(out, value);
  return out;
}

}  // namespace vscaler::kube
