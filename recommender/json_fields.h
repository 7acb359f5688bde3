// Checked reads of JSON documents from the API (nlohmann), shared by the recommender's parsers:
// each returns nullptr / "" / an error naming the field instead of throwing on a wrong type.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"
#include "kube/quantity.h"
#include "recommender/resources.h"

namespace vscaler::recommender {

/// The member `key` of `object` when `object` is an object holding it, else nullptr.
const nlohmann::json* child(const nlohmann::json& object, const char* key);

/// The string member `key`, or "" when absent or not a string.
std::string_view string_field(const nlohmann::json& object, const char* key);

/// A ResourceList ({cpu: "250m", memory: 1Gi-as-string-or-number}) at `path`; absent or null is
/// empty. Only cpu and memory are kept; a malformed quantity is an error naming `path.<key>`.
kube::Result<ResourceMap> resource_list(const nlohmann::json* list, const std::string& path);

}  // namespace vscaler::recommender
