// JsonProjection: the path trie, simdjson elements to nlohmann values, and the reusable parser.
#include "kube/json_projection.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/log.h"

namespace vscaler::kube {
namespace {

using Element = simdjson::dom::element;
using ElementType = simdjson::dom::element_type;

// Numbers take the kinds nlohmann's own parser gives them: an integer of no sign is unsigned
// (a reader asking is_number_unsigned() must see the same tree either way).
nlohmann::json scalar_to_json(Element element) {
  switch (element.type()) {
    case ElementType::INT64: {
      const std::int64_t value = element.get_int64().value_unsafe();
      if (value >= 0) return static_cast<std::uint64_t>(value);
      return value;
    }
    case ElementType::UINT64:
      return element.get_uint64().value_unsafe();
    case ElementType::DOUBLE:
      return element.get_double().value_unsafe();
    case ElementType::STRING:
      return element.get_string().value_unsafe();  // built in place, no temporary string
    case ElementType::BOOL:
      return element.get_bool().value_unsafe();
    case ElementType::NULL_VALUE:
    case ElementType::ARRAY:
    case ElementType::OBJECT:
      break;
  }
  return nullptr;
}

// The node a member named `key` continues in: its named child, else the "*" child. A named child
// also holds the "*" child's paths (fold_wildcards), so taking it loses none of them.
const JsonProjection::Node* child(const JsonProjection::Node& node, std::string_view key) {
  for (const auto& [name, next] : node.children) {
    if (name == key) return next.get();
  }
  return node.any.get();
}

// Adds every path `source` keeps to `target`.
void merge_into(JsonProjection::Node& target, const JsonProjection::Node& source) {
  if (target.keep_all) return;
  if (source.keep_all) {
    target.keep_all = true;
    target.children.clear();
    target.any.reset();
    return;
  }
  for (const auto& [name, next] : source.children) {
    JsonProjection::Node* existing = nullptr;
    for (auto& [target_name, target_next] : target.children) {
      if (target_name == name) existing = target_next.get();
    }
    if (existing == nullptr) {
      existing =
          target.children.emplace_back(name, std::make_unique<JsonProjection::Node>()).second.get();
    }
    merge_into(*existing, *next);
  }
  if (source.any) {
    if (!target.any) target.any = std::make_unique<JsonProjection::Node>();
    merge_into(*target.any, *source.any);
  }
}

// {"/a/*/x", "/a/b/y"}: member b of a keeps y and x. The walk takes one child per member (the
// named one when there is one), so each named child is given its "*" sibling's paths here, once,
// when the trie is built.
void fold_wildcards(JsonProjection::Node& node) {
  if (node.any) {
    for (auto& [name, next] : node.children) merge_into(*next, *node.any);
    fold_wildcards(*node.any);
  }
  for (auto& [name, next] : node.children) fold_wildcards(*next);
}

// The parts of a tree nlohmann parsed that `node` keeps, pruned in place: the same rule as
// walk's, for the texts simdjson refuses (ProjectingParser::parse).
void prune(nlohmann::json& value, const JsonProjection::Node& node) {
  if (node.keep_all) return;
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      if (const JsonProjection::Node* next = child(node, it.key())) {
        prune(*it, *next);
        ++it;
      } else {
        it = value.erase(it);
      }
    }
  } else if (value.is_array()) {
    if (!node.any) {
      value = nlohmann::json::array();
      return;
    }
    for (auto& item : value) prune(item, *node.any);
  }
}

// The deepest nesting of arrays and objects in `text` (strings skipped): bounds the recursion of
// the fallback below before nlohmann builds anything.
std::size_t nesting_depth(std::string_view text) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The one walk: `node` null (or keep_all) keeps the whole subtree. Duplicate keys: the last wins,
// as in nlohmann_json and Go's encoding/json. Recursion follows the element's depth, which the
// parser bounded.
nlohmann::json walk(const Element& element, const JsonProjection::Node* node) {
  if (node != nullptr && node->keep_all) node = nullptr;
  switch (element.type()) {
    case ElementType::OBJECT: {
      nlohmann::json result = nlohmann::json::object();
      auto& members = result.get_ref<nlohmann::json::object_t&>();
      simdjson::dom::object element_members = element.get_object().value_unsafe();
      for (auto [key, value] : element_members) {
        const JsonProjection::Node* next = nullptr;
        if (node != nullptr && (next = child(*node, key)) == nullptr) continue;
        members.insert_or_assign(std::string(key), walk(value, next));
      }
      return result;
    }
    case ElementType::ARRAY: {
      nlohmann::json result = nlohmann::json::array();
      if (node != nullptr && node->any == nullptr) return result;
      const JsonProjection::Node* next = node != nullptr ? node->any.get() : nullptr;
      auto& items = result.get_ref<nlohmann::json::array_t&>();
      simdjson::dom::array array = element.get_array().value_unsafe();
      items.reserve(array.size());
      for (Element item : array) items.push_back(walk(item, next));
      return result;
    }
    default:
      return scalar_to_json(element);
  }
}

}  // namespace

base::Result<JsonProjection, std::string> JsonProjection::parse(
    const std::vector<std::string>& paths) {
  auto root = std::make_shared<Node>();
  if (paths.empty()) root->keep_all = true;
  for (const auto& path : paths) {
    if (!path.empty() && path.front() != '/') {
      return base::fail("projection path " + log::quote_untrusted(path) + " must start with /");
    }
    Node* node = root.get();
    std::size_t start = 0;
    while (!node->keep_all && start < path.size()) {
      std::size_t end = path.find('/', start + 1);
      if (end == std::string::npos) end = path.size();
      std::string token;
      for (std::size_t i = start + 1; i < end; ++i) {
        if (path[i] == '~' && i + 1 < end && (path[i + 1] == '0' || path[i + 1] == '1')) {
          token += path[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          token += path[i];
        }
      }
      if (token == "*" && end - start == 2) {
        if (!node->any) node->any = std::make_unique<Node>();
        node = node->any.get();
      } else {
        Node* next = nullptr;
        for (auto& [name, existing] : node->children) {
          if (name == token) next = existing.get();
        }
        if (next == nullptr) {
          next = node->children.emplace_back(token, std::make_unique<Node>()).second.get();
        }
        node = next;
      }
      start = end;
    }
    // A path ends where its whole subtree is kept; a shorter path subsumes longer ones.
    node->keep_all = true;
    node->children.clear();
    node->any.reset();
  }
  fold_wildcards(*root);
  JsonProjection projection;
  projection.root_ = std::move(root);
  return projection;
}

nlohmann::json json_of(const Element& element) {
  return walk(element, nullptr);
}

nlohmann::json project_element(const Element& element, const JsonProjection::Node& node) {
  return walk(element, &node);
}

const JsonProjection& keep_everything() {
  static const JsonProjection everything;
  return everything;
}

ProjectingParser::ProjectingParser(std::size_t max_retained_bytes)
    : parser_(std::make_unique<simdjson::dom::parser>()), max_retained_bytes_(max_retained_bytes) {}

ProjectingParser::~ProjectingParser() = default;

std::size_t ProjectingParser::retained_capacity() const {
  return parser_->capacity();
}

base::Result<nlohmann::json, std::string> ProjectingParser::parse(
    std::string_view text, std::size_t readable_padding, const JsonProjection& projection) {
  // A text above the retained size: its buffers go when this parse ends, whatever its outcome.
  struct Release {
    ProjectingParser& self;
    bool release;
    ~Release() {
      if (release) self.parser_ = std::make_unique<simdjson::dom::parser>();
    }
  } release{*this, text.size() > max_retained_bytes_};
  Element element;
  const bool in_place = readable_padding >= simdjson::SIMDJSON_PADDING;
  auto error =
      parser_->parse(text.data(), text.size(), /*realloc_if_needed=*/!in_place).get(element);
  if (!error) return project_element(element, projection.root());
  if (error != simdjson::NUMBER_ERROR)
    return base::fail(std::string(simdjson::error_message(error)));
  // simdjson refuses an integer beyond 64 bits, which is valid JSON: Go's encoding/json writes a
  // float64 from 1e19 to 1e21 in plain digits, and a field that keeps unknown members (a
  // checkpoint's spec) may hold one. nlohmann reads it as a double, as it did before simdjson
  // parsed these texts; one such object must not fail a whole list. Its depth is bounded first,
  // as simdjson's would have been.
  if (nesting_depth(text) > simdjson::DEFAULT_MAX_DEPTH) {
    return base::fail("JSON nesting is deeper than " + std::to_string(simdjson::DEFAULT_MAX_DEPTH) +
                      " levels");
  }
  nlohmann::json whole = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (whole.is_discarded()) return base::fail(std::string(simdjson::error_message(error)));
  prune(whole, projection.root());
  return whole;
}

}  // namespace vscaler::kube
