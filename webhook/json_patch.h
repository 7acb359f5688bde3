// RFC 6901 / RFC 6902 helpers for the patches admission handlers return: a structural check of
// a JSON Patch before the API server sees it (a patch it cannot apply fails the user's write
// whatever the failurePolicy), and JSON-pointer token escaping for building patch paths.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vscaler::webhook {

/// Checks that `patch` is an RFC 6902 document the API server can apply in principle: an array
/// of objects, each with a known "op", a "path" that is a JSON pointer, "value" where the op
/// needs one and "from" for move/copy. The error names the first bad operation by index.
kube::Result<kube::Unit> validate_json_patch(const nlohmann::json& patch);

/// Escapes one JSON pointer token ("~" -> "~0", "/" -> "~1"), for building patch paths from
/// names such as annotation keys (nlohmann's json_pointer does the escaping).
std::string json_pointer_escape(std::string_view token);

}  // namespace vscaler::webhook
