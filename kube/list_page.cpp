// for_each_list_item: simdjson on-demand over a list page, error codes only (no exceptions).
#include "kube/list_page.h"

#include <simdjson.h>

namespace vscaler::kube {
namespace {

namespace od = simdjson::ondemand;

/// Reads metadata.resourceVersion and metadata.continue into `out`.
bool read_metadata(od::value value, ListPageText& out) {
  od::object metadata;
  if (value.get_object().get(metadata) != simdjson::SUCCESS) return false;
  for (auto field : metadata) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    std::string_view text;
    if (key == "resourceVersion") {
      if (field.value().get_string().get(text) == simdjson::SUCCESS) out.resource_version = text;
    } else if (key == "continue") {
      if (field.value().get_string().get(text) == simdjson::SUCCESS) out.continue_token = text;
    }
  }
  return true;
}

}  // namespace

base::Result<ListPageText, std::string> for_each_list_item(
    std::string& body, const std::function<bool(std::string_view item)>& each) {
  // The parser reads SIMDJSON_PADDING bytes past the end: room in the string itself, not a copy.
  const std::size_t size = body.size();
  body.reserve(size + simdjson::SIMDJSON_PADDING);
  simdjson::padded_string_view padded(body.data(), size, body.capacity());
  od::parser parser;
  od::document document;
  od::object root;
  if (parser.iterate(padded).get(document) != simdjson::SUCCESS ||
      document.get_object().get(root) != simdjson::SUCCESS) {
    return base::fail(std::string("the answer is not a JSON object"));
  }
  ListPageText out;
  bool has_items = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      return base::fail(std::string("the answer is not valid JSON"));
    }
    if (key == "metadata") {
      if (!read_metadata(field.value(), out)) {
        return base::fail(std::string("the answer's metadata is not valid"));
      }
    } else if (key == "items") {
      od::value value;
      if (field.value().get(value) != simdjson::SUCCESS) {
        return base::fail(std::string("the answer is not valid JSON"));
      }
      od::json_type type;
      if (value.type().get(type) != simdjson::SUCCESS) {
        return base::fail(std::string("the answer is not valid JSON"));
      }
      if (type == od::json_type::null) {
        has_items = true;
        continue;
      }
      od::array items;
      if (value.get_array().get(items) != simdjson::SUCCESS) break;
      for (auto element : items) {
        od::object item;
        std::string_view text;
        if (element.get_object().get(item) != simdjson::SUCCESS ||
            item.raw_json().get(text) != simdjson::SUCCESS) {
          return base::fail(std::string("an item is not a JSON object"));
        }
        if (!each(text)) return base::fail(std::string("an item was refused"));
        ++out.count;
      }
      has_items = true;
    }
  }
  if (!has_items) return base::fail(std::string("the answer has no items"));
  return out;
}

}  // namespace vscaler::kube
