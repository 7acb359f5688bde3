// parse_metadata_page: simdjson on-demand, error codes only (no exceptions cross this file).
#include "controller/workload_meta_list.h"

#include <simdjson.h>

#include <string_view>

namespace vscaler::controller {
namespace {

namespace od = simdjson::ondemand;

/// Reads name, uid and generation of one item's metadata; false when the item is unusable.
/// Fields other than those are skipped by the parser without being materialised.
bool read_item(od::value item, WorkloadMeta& meta) {
  od::object object;
  if (item.get_object().get(object) != simdjson::SUCCESS) return false;
  bool named = false;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    if (key != "metadata") continue;
    od::object metadata;
    if (field.value().get_object().get(metadata) != simdjson::SUCCESS) return false;
    for (auto entry : metadata) {
      std::string_view name;
      if (entry.unescaped_key().get(name) != simdjson::SUCCESS) return false;
      std::string_view text;
      if (name == "name") {
        if (entry.value().get_string().get(text) != simdjson::SUCCESS) return false;
        meta.name = std::string(text);
        named = !meta.name.empty();
      } else if (name == "uid") {
        if (entry.value().get_string().get(text) == simdjson::SUCCESS) meta.uid = std::string(text);
      } else if (name == "generation") {
        int64_t generation = 0;
        if (entry.value().get_int64().get(generation) == simdjson::SUCCESS) {
          meta.generation = generation;
        }
      }
    }
  }
  return named;
}

}  // namespace

base::Result<MetadataPage, std::string> parse_metadata_page(const std::string& body,
                                                            std::vector<WorkloadMeta>& out) {
  // The parser needs SIMDJSON_PADDING readable bytes past the end: one copy of the page.
  simdjson::padded_string padded(body);
  od::parser parser;
  od::document document;
  if (parser.iterate(padded).get(document) != simdjson::SUCCESS) {
    return base::fail(std::string("the answer is not valid JSON"));
  }
  od::object root;
  if (document.get_object().get(root) != simdjson::SUCCESS) {
    return base::fail(std::string("the answer is not a JSON object"));
  }
  MetadataPage page;
  bool has_items = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      return base::fail(std::string("the answer is not valid JSON"));
    }
    if (key == "metadata") {
      od::object metadata;
      if (field.value().get_object().get(metadata) != simdjson::SUCCESS) continue;
      for (auto entry : metadata) {
        std::string_view name;
        std::string_view text;
        if (entry.unescaped_key().get(name) != simdjson::SUCCESS) break;
        if (name == "continue" && entry.value().get_string().get(text) == simdjson::SUCCESS) {
          page.continue_token = std::string(text);
        } else if (name == "resourceVersion" &&
                   entry.value().get_string().get(text) == simdjson::SUCCESS) {
          page.resource_version = std::string(text);
        }
      }
    } else if (key == "items") {
      od::value items_value = field.value();
      if (items_value.is_null()) {
        has_items = true;
        continue;
      }
      od::array items;
      if (items_value.get_array().get(items) != simdjson::SUCCESS) {
        return base::fail(std::string("the answer's items is not an array"));
      }
      has_items = true;
      for (auto element : items) {
        od::value item;
        if (element.get(item) != simdjson::SUCCESS) {
          return base::fail(std::string("the answer is not valid JSON"));
        }
        WorkloadMeta meta;
        if (read_item(item, meta)) {
          out.push_back(std::move(meta));
        } else {
          ++page.malformed;
        }
      }
    }
  }
  if (!has_items) return base::fail(std::string("the answer has no items"));
  return page;
}

}  // namespace vscaler::controller
