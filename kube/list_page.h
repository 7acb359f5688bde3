// for_each_list_item: one page of a list answer ({"metadata": {...}, "items": [...]}) read with
// simdjson on demand, each item handed over as its own JSON text, so that a page of 500 objects
// is never one DOM (issue 17: at 500 VerticalScalers with their status, ~10 MB per page).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vscaler::kube {

/// What a list page says beside its items.
struct ListPageText {
  std::string resource_version;  ///< metadata.resourceVersion
  std::string continue_token;    ///< metadata.continue ("" on the last page)
  std::size_t count = 0;         ///< items handed to the callback
};

/// Reads `body` (a list answer; its capacity may grow by simdjson's padding) and calls `each`
/// with every item's JSON text, in order; `each` returns false to stop with an error. Fails
/// (with a reason) on invalid JSON, a missing "items" (null is an empty page), or an item that is
/// not an object.
base::Result<ListPageText, std::string> for_each_list_item(
    std::string& body, const std::function<bool(std::string_view item)>& each);

}  // namespace vscaler::kube
