// Compact JSON text written straight from an nlohmann value, byte for byte what
// dump(-1, ' ', false, error_handler_t::replace) writes, without nlohmann's serializer for the
// common parts: its serializer checks every byte of every string against a UTF-8 state machine,
// about 60 instructions a byte, most of an admission answer's encoding (a JSONPatch of one
// container's resources: ~9k instructions of the ~13k). Strings of printable ASCII without a quote
// or backslash (names, quantities, paths), objects, arrays, integers, booleans and null are
// written here; other strings and floating-point numbers are written by nlohmann's serializer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vscaler::kube {

/// Appends `text` as a JSON string: as is between quotes when it is printable ASCII without
/// quotes or backslashes, else escaped by nlohmann (invalid UTF-8 replaced by U+FFFD).
void append_json_string(std::string& out, std::string_view text);

/// Appends `value` as compact JSON text, equal to
/// value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).
void append_json(std::string& out, const nlohmann::json& value);

/// `value` as compact JSON text (append_json to an empty string).
std::string compact_json(const nlohmann::json& value);

}  // namespace vscaler::kube
