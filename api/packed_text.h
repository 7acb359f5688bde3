// pack_status_text / unpack_status_text: a scaler's stored status kept deflated (raw deflate with
// a preset dictionary of a typical status), ~10x smaller than its compact JSON text (issue 17:
// ~1,100 bytes -> ~110 per scaler). In memory only: the format may change with any build.
#pragma once

#include <string>
#include <string_view>

namespace vscaler::api {

/// `text` deflated; "" for "". Never fails (text that does not deflate is kept as it is).
std::string pack_status_text(std::string_view text);

/// The text that pack_status_text packed; "" for "" or for bytes it did not produce.
std::string unpack_status_text(std::string_view packed);

}  // namespace vscaler::api
