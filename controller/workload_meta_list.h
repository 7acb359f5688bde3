// Parsing of one page of a metadata-only list (PartialObjectMetadataList) straight into
// WorkloadMeta with simdjson's on-demand parser: no document of the page is built, and each
// item's managedFields, labels and annotations are skipped over rather than parsed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"
#include "controller/resync.h"

namespace vscaler::controller {

/// What one page held besides its items.
struct MetadataPage {
  std::string continue_token;    ///< metadata.continue; "" on the last page
  std::string resource_version;  ///< metadata.resourceVersion of the list
  std::size_t malformed = 0;     ///< items skipped: not an object, or no string metadata.name
};

/// Appends the page's items (name, uid, generation) to `out`. A malformed item is counted in
/// MetadataPage::malformed and skipped; an answer that is not a list (invalid JSON, no items
/// array) is an error naming what is wrong, and then `out` may hold part of the page.
base::Result<MetadataPage, std::string> parse_metadata_page(const std::string& body,
                                                            std::vector<WorkloadMeta>& out);

}  // namespace vscaler::controller
