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

/// A ResourceList ({cpu: "250m", memory: 1Gi-as-string-or-number}) at `path` followed by `field`
/// ("...containers[0]", ".resources.requests"); absent or null is empty. Only cpu and memory are
/// kept; a malformed quantity is an error naming `<path><field>.<key>`. The two parts are joined
/// only for an error: the recommender reads every listed pod's and the admission hooks every
/// recommendation's lists through here.
kube::Result<ResourceMap> resource_list(const nlohmann::json* list, std::string_view path,
                                        std::string_view field = {});

}  // namespace vscaler::recommender
