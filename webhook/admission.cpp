#include "webhook/admission.h"

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

namespace vscaler::webhook {
namespace {

using kube::fail;
using kube::Result;
using Element = simdjson::dom::element;
using ElementType = simdjson::dom::element_type;

constexpr std::string_view kApiVersion = "admission.k8s.io/v1";
constexpr std::string_view kKind = "AdmissionReview";

// Bodies up to this size reuse the worker thread's parser (its buffers grow to the largest body
// seen); larger ones, rare and up to 7 MiB, get a parser of their own that is freed afterwards so
// a single big review does not pin tens of megabytes per worker thread.
constexpr std::size_t kReusedParserMaxBytes = 512 * 1024;
constexpr std::size_t kInitialCapacity = 64 * 1024;

// A short identifier from the body, made safe to print in a message and a log line: printable
// ASCII only, at most 64 characters.
std::string quote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < 64; ++i) {
    char c = text[i];
    out += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? c : '?';
  }
  if (text.size() > 64) out += "...";
  out += '"';
  return out;
}

std::string_view type_name(ElementType type) {
  switch (type) {
    case ElementType::ARRAY:
      return "an array";
    case ElementType::OBJECT:
      return "an object";
    case ElementType::INT64:
    case ElementType::UINT64:
    case ElementType::DOUBLE:
      return "a number";
    case ElementType::STRING:
      return "a string";
    case ElementType::BOOL:
      return "a boolean";
    case ElementType::NULL_VALUE:
      return "null";
  }
  return "unknown";
}

std::string wrong_type(std::string_view field, std::string_view expected, Element value) {
  return std::string(field) + " must be " + std::string(expected) + ", not " +
         std::string(type_name(value.type()));
}

nlohmann::json to_json(Element element);

nlohmann::json scalar_to_json(Element element) {
  switch (element.type()) {
    case ElementType::INT64:
      return element.get_int64().value_unsafe();
    case ElementType::UINT64:
      return element.get_uint64().value_unsafe();
    case ElementType::DOUBLE:
      return element.get_double().value_unsafe();
    case ElementType::STRING:
      return element.get_string().value_unsafe();  // built in place, no temporary string
    case ElementType::BOOL:
      return element.get_bool().value_unsafe();
    case ElementType::NULL_VALUE:
      return nullptr;
    case ElementType::ARRAY:
    case ElementType::OBJECT:
      break;
  }
  return to_json(element);
}

// Whole-subtree conversion. Recursion depth is bounded by ParseOptions::max_depth, which the
// parser enforced before this runs.
nlohmann::json to_json(Element element) {
  switch (element.type()) {
    case ElementType::OBJECT: {
      nlohmann::json result = nlohmann::json::object();
      auto& members = result.get_ref<nlohmann::json::object_t&>();
      simdjson::dom::object element_members = element.get_object().value_unsafe();
      for (auto [key, value] : element_members) {
        // Last one wins on duplicate keys, like nlohmann_json and Go's encoding/json.
        members.insert_or_assign(std::string(key), to_json(value));
      }
      return result;
    }
    case ElementType::ARRAY: {
      nlohmann::json result = nlohmann::json::array();
      auto& items = result.get_ref<nlohmann::json::array_t&>();
      simdjson::dom::array array = element.get_array().value_unsafe();
      items.reserve(array.size());
      for (Element item : array) items.push_back(to_json(item));
      return result;
    }
    default:
      return scalar_to_json(element);
  }
}

const Projection::Node* child(const Projection::Node& node, std::string_view key) {
  for (const auto& [name, next] : node.children) {
    if (name == key) return next.get();
  }
  return node.any.get();
}

nlohmann::json project(Element element, const Projection::Node& node) {
  if (node.keep_all) return to_json(element);
  switch (element.type()) {
    case ElementType::OBJECT: {
      nlohmann::json result = nlohmann::json::object();
      auto& members = result.get_ref<nlohmann::json::object_t&>();
      simdjson::dom::object element_members = element.get_object().value_unsafe();
      for (auto [key, value] : element_members) {
        if (const auto* next = child(node, key)) {
          members.insert_or_assign(std::string(key), project(value, *next));
        }
      }
      return result;
    }
    case ElementType::ARRAY: {
      nlohmann::json result = nlohmann::json::array();
      if (node.any == nullptr) return result;
      auto& items = result.get_ref<nlohmann::json::array_t&>();
      simdjson::dom::array array = element.get_array().value_unsafe();
      items.reserve(array.size());
      for (Element item : array) items.push_back(project(item, *node.any));
      return result;
    }
    default:
      return scalar_to_json(element);
  }
}

// ---- subtree digests (Projection::with_digest) ----

using Pattern = std::vector<std::string>;

std::uint64_t mix(std::uint64_t seed, std::uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// Eight bytes per step (a multiply and a fold each), the tail zero-padded, the length mixed in:
// the digest hashes most of both objects' templates, and FNV-1a's byte per step was 9 % of the
// server's CPU under webhook.sh. Digests are only compared within one process.
std::uint64_t hash_bytes(std::string_view bytes) {
  constexpr std::uint64_t kMultiplier = 0x9e3779b97f4a7c15ULL;
  std::uint64_t hash = 0xcbf29ce484222325ULL ^ (bytes.size() * kMultiplier);
  auto step = [&hash](std::uint64_t word) {
    __uint128_t product = static_cast<__uint128_t>(hash ^ word) * kMultiplier;
    hash = static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
  };
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, 8);
    step(word);
  }
  if (i < bytes.size()) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, bytes.size() - i);
    step(word);
  }
  return hash;
}

constexpr std::uint64_t kEmptyObject = 0x51ed270b27c3a1f3ULL;

bool is_any(const std::string& token) {
  return token.size() == 1 && token[0] == '*';
}

// A subtree no ignored pattern reaches: no pattern bookkeeping at all (most of a template).
// Recursion depth is bounded by ParseOptions::max_depth, enforced before this runs.
std::uint64_t digest_plain(Element element) {
  switch (element.type()) {
    case ElementType::OBJECT: {
      std::uint64_t sum = 0;  // a sum: member order does not matter
      bool any = false;
      // Named, not a temporary: its iterators point into it (GCC's -Wdangling-pointer).
      simdjson::dom::object members = element.get_object().value_unsafe();
      for (auto [key, value] : members) {
        sum += mix(hash_bytes(key), digest_plain(value));
        any = true;
      }
      return any ? mix(1, sum) : kEmptyObject;
    }
    case ElementType::ARRAY: {
      std::uint64_t hash = 2;
      simdjson::dom::array items = element.get_array().value_unsafe();
      for (Element item : items) hash = mix(hash, digest_plain(item));
      return hash;
    }
    case ElementType::STRING:
      return mix(3, hash_bytes(element.get_string().value_unsafe()));
    case ElementType::INT64:
      return mix(4, static_cast<std::uint64_t>(element.get_int64().value_unsafe()));
    case ElementType::UINT64:
      return mix(5, element.get_uint64().value_unsafe());
    case ElementType::DOUBLE: {
      double value = element.get_double().value_unsafe();
      std::uint64_t bits = 0;
      std::memcpy(&bits, &value, sizeof bits);
      return mix(6, bits);
    }
    case ElementType::BOOL:
      return mix(7, element.get_bool().value_unsafe() ? 1 : 0);
    case ElementType::NULL_VALUE:
      return 8;
  }
  return 9;
}

// The ignored patterns still alive at some depth of the walk: the range [begin, end) of one
// stack shared by the whole walk (a child's range is pushed above its parent's and popped after
// it), so the walk allocates nothing per object. Indices, not pointers: pushing may move it.
struct Alive {
  std::vector<const Pattern*>& stack;
  std::size_t begin;
  std::size_t end;
};

// Pushes the patterns of `alive` still matching below `key` (nullptr: an array element, matched
// only by "*") and returns their range; `ignored` says a pattern ends here (the member is left
// out).
Alive descend(const Alive& alive, std::size_t depth, const std::string_view* key, bool& ignored) {
  std::size_t begin = alive.stack.size();
  for (std::size_t i = alive.begin; i < alive.end; ++i) {
    const Pattern* pattern = alive.stack[i];
    const std::string& token = (*pattern)[depth];
    if (!is_any(token) && (key == nullptr || token != *key)) continue;
    if (pattern->size() == depth + 1) {
      ignored = true;
    } else {
      alive.stack.push_back(pattern);
    }
  }
  return Alive{alive.stack, begin, alive.stack.size()};
}

// Recursion depth is bounded by ParseOptions::max_depth, enforced before this runs.
std::uint64_t digest_of(Element element, const Alive& alive, std::size_t depth) {
  if (alive.begin == alive.end) return digest_plain(element);
  switch (element.type()) {
    case ElementType::OBJECT: {
      std::uint64_t sum = 0;  // a sum: member order does not matter
      bool any = false;
      simdjson::dom::object members = element.get_object().value_unsafe();
      for (auto [key, value] : members) {
        bool ignored = false;
        Alive next = descend(alive, depth, &key, ignored);
        std::uint64_t child = ignored ? 0 : digest_of(value, next, depth + 1);
        alive.stack.resize(next.begin);
        if (ignored) continue;
        // An object emptied by ignoring its members counts as absent ({} after a reset).
        if (next.begin != next.end && child == kEmptyObject &&
            value.type() == ElementType::OBJECT) {
          continue;
        }
        sum += mix(hash_bytes(key), child);
        any = true;
      }
      return any ? mix(1, sum) : kEmptyObject;
    }
    case ElementType::ARRAY: {
      std::uint64_t hash = 2;
      simdjson::dom::array items = element.get_array().value_unsafe();
      for (Element item : items) {
        bool ignored = false;
        Alive next = descend(alive, depth, nullptr, ignored);
        if (!ignored) hash = mix(hash, digest_of(item, next, depth + 1));
        alive.stack.resize(next.begin);
      }
      return hash;
    }
    default:
      return digest_plain(element);
  }
}

// The digest of the subtree `spec` names in `element` (an absent subtree has one of its own).
std::optional<std::uint64_t> digest(Element element, const Projection::Digest* spec) {
  if (spec == nullptr || element.type() == ElementType::NULL_VALUE) return std::nullopt;
  for (const std::string& key : spec->path) {
    if (element.type() != ElementType::OBJECT) return 10;
    Element next;
    if (element.get_object().value_unsafe().at_key(key).get(next)) return 10;
    element = next;
  }
  // The walk's pattern stack, kept by the thread (it holds a few pointers per level).
  thread_local std::vector<const Pattern*> stack;
  stack.clear();
  for (const Pattern& pattern : spec->ignored) {
    if (!pattern.empty()) stack.push_back(&pattern);
  }
  return digest_of(element, Alive{stack, 0, stack.size()}, 0);
}

nlohmann::json convert(Element element, const ParseOptions& options) {
  if (options.projection == nullptr) return to_json(element);
  return project(element, options.projection->root());
}

// Reads an optional string field; null counts as absent.
Result<kube::Unit> read_string(Element value, std::string_view field, std::string& out) {
  if (value.type() == ElementType::NULL_VALUE) return kube::Unit{};
  if (value.type() != ElementType::STRING) return fail(wrong_type(field, "a string", value));
  out = std::string(value.get_string().value_unsafe());
  return kube::Unit{};
}

// Reads {group, version, <third>} objects (kind, resource); unknown members are ignored.
Result<kube::Unit> read_triple(Element value, std::string_view field, std::string_view third,
                               std::string& group, std::string& version, std::string& last) {
  if (value.type() == ElementType::NULL_VALUE) return kube::Unit{};
  if (value.type() != ElementType::OBJECT) return fail(wrong_type(field, "an object", value));
  simdjson::dom::object value_members = value.get_object().value_unsafe();
  for (auto [key, member] : value_members) {
    std::string* target = key == "group"     ? &group
                          : key == "version" ? &version
                          : key == third     ? &last
                                             : nullptr;
    if (target == nullptr) continue;
    auto read = read_string(member, std::string(field) + "." + std::string(key), *target);
    if (!read) return read;
  }
  return kube::Unit{};
}

Result<Operation> parse_operation(std::string_view text) {
  if (text == "CREATE") return Operation::kCreate;
  if (text == "UPDATE") return Operation::kUpdate;
  if (text == "DELETE") return Operation::kDelete;
  if (text == "CONNECT") return Operation::kConnect;
  return fail("request.operation " + quote(text) +
              " is not one of CREATE, UPDATE, DELETE, CONNECT");
}

Result<AdmissionRequest> read_request(Element request, const ParseOptions& options) {
  if (request.type() != ElementType::OBJECT) {
    return fail(wrong_type("request", "an object", request));
  }
  AdmissionRequest out;
  // Each field we interpret may appear once: a duplicate in a review is either a bug or an
  // attempt to make two parsers disagree.
  enum Seen : unsigned {
    kUid = 1,
    kKindField = 2,
    kResource = 4,
    kSubResource = 8,
    kName = 16,
    kNamespace = 32,
    kOperation = 64,
    kDryRun = 128,
    kObject = 256,
    kOldObject = 512,
    kOptions = 1024
  };
  unsigned seen = 0;
  auto once = [&seen](Seen bit, std::string_view key) -> Result<kube::Unit> {
    if (seen & bit) return fail("request." + std::string(key) + " appears more than once");
    seen |= bit;
    return kube::Unit{};
  };
  bool has_operation = false;
  simdjson::dom::object request_members = request.get_object().value_unsafe();
  for (auto [key, value] : request_members) {
    Result<kube::Unit> step = kube::Unit{};
    if (key == "uid") {
      if (!(step = once(kUid, key))) return fail(std::move(step).error());
      step = read_string(value, "request.uid", out.uid);
    } else if (key == "kind") {
      if (!(step = once(kKindField, key))) return fail(std::move(step).error());
      step = read_triple(value, "request.kind", "kind", out.kind.group, out.kind.version,
                         out.kind.kind);
    } else if (key == "resource") {
      if (!(step = once(kResource, key))) return fail(std::move(step).error());
      step = read_triple(value, "request.resource", "resource", out.resource.group,
                         out.resource.version, out.resource.resource);
    } else if (key == "subResource") {
      if (!(step = once(kSubResource, key))) return fail(std::move(step).error());
      step = read_string(value, "request.subResource", out.sub_resource);
    } else if (key == "name") {
      if (!(step = once(kName, key))) return fail(std::move(step).error());
      step = read_string(value, "request.name", out.name);
    } else if (key == "namespace") {
      if (!(step = once(kNamespace, key))) return fail(std::move(step).error());
      step = read_string(value, "request.namespace", out.namespace_name);
    } else if (key == "operation") {
      if (!(step = once(kOperation, key))) return fail(std::move(step).error());
      if (value.type() != ElementType::STRING) {
        return fail(wrong_type("request.operation", "a string", value));
      }
      auto operation = parse_operation(value.get_string().value_unsafe());
      if (!operation) return fail(std::move(operation).error());
      out.operation = *operation;
      has_operation = true;
    } else if (key == "dryRun") {
      if (!(step = once(kDryRun, key))) return fail(std::move(step).error());
      if (value.type() == ElementType::BOOL) {
        out.dry_run = value.get_bool().value_unsafe();
      } else if (value.type() != ElementType::NULL_VALUE) {
        return fail(wrong_type("request.dryRun", "a boolean", value));
      }
    } else if (key == "options") {
      if (!(step = once(kOptions, key))) return fail(std::move(step).error());
      // CreateOptions / UpdateOptions / DeleteOptions; only fieldManager is read, and a value of
      // an unexpected type is ignored (it decides nothing but skipping vscaler's own writes).
      if (value.type() == ElementType::OBJECT) {
        simdjson::dom::element manager;
        if (!value.get_object().value_unsafe().at_key("fieldManager").get(manager) &&
            manager.type() == ElementType::STRING) {
          out.field_manager = std::string(manager.get_string().value_unsafe());
        }
      }
    } else if (key == "object") {
      if (!(step = once(kObject, key))) return fail(std::move(step).error());
      out.object = convert(value, options);
      if (options.projection) out.object_digest = digest(value, options.projection->digest());
    } else if (key == "oldObject") {
      if (!(step = once(kOldObject, key))) return fail(std::move(step).error());
      out.old_object = convert(value, options);
      if (options.projection) {
        out.old_object_digest = digest(value, options.projection->digest());
      }
    }
    if (!step) return fail(std::move(step).error());
  }
  if (out.uid.empty()) return fail("request.uid is missing or empty");
  if (!has_operation) return fail("request.operation is missing");
  return out;
}

simdjson::dom::parser& thread_parser(std::size_t max_depth, simdjson::error_code& error) {
  thread_local simdjson::dom::parser parser;
  thread_local std::size_t depth = 0;
  error = simdjson::SUCCESS;
  if (depth != max_depth) {
    error = parser.allocate(kInitialCapacity, max_depth);
    depth = error ? 0 : max_depth;
  }
  return parser;
}

Result<AdmissionRequest> parse_with(simdjson::dom::parser& parser, std::string_view body,
                                    const ParseOptions& options) {
  Element root;
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: in place when the caller says they
  // are readable, else the body is copied into the parser's padded buffer.
  static_assert(kParsePadding >= simdjson::SIMDJSON_PADDING);
  bool copy = options.readable_padding < kParsePadding;
  auto error = parser.parse(body.data(), body.size(), copy).get(root);
  if (error == simdjson::DEPTH_ERROR) {
    return fail("JSON nesting is deeper than " + std::to_string(options.max_depth) + " levels");
  }
  if (error == simdjson::EMPTY) return fail("the request body is empty");
  if (error) return fail(std::string("malformed JSON: ") + simdjson::error_message(error));
  if (root.type() != ElementType::OBJECT) {
    return fail(wrong_type("an AdmissionReview", "a JSON object", root));
  }
  std::string api_version;
  std::string kind;
  std::optional<Element> request;
  simdjson::dom::object root_members = root.get_object().value_unsafe();
  for (auto [key, value] : root_members) {
    if (key == "apiVersion" || key == "kind") {
      std::string& target = key == "kind" ? kind : api_version;
      if (!target.empty()) return fail(std::string(key) + " appears more than once");
      if (value.type() != ElementType::STRING) return fail(wrong_type(key, "a string", value));
      target = std::string(value.get_string().value_unsafe());
      if (target.empty()) target = " ";  // present but empty: reported as wrong below
    } else if (key == "request") {
      if (request) return fail("request appears more than once");
      request = value;
    }
  }
  if (api_version.empty()) return fail("apiVersion is missing; expected admission.k8s.io/v1");
  if (api_version != kApiVersion) {
    return fail("apiVersion " + quote(api_version) +
                " is not supported; expected admission.k8s.io/v1");
  }
  if (kind != kKind) {
    return fail(kind.empty() ? std::string("kind is missing; expected AdmissionReview")
                             : "kind " + quote(kind) + " is not AdmissionReview");
  }
  if (!request || request->type() == ElementType::NULL_VALUE) {
    return fail("the AdmissionReview has no request");
  }
  return read_request(*request, options);
}

}  // namespace

std::string_view to_string(Operation operation) {
  switch (operation) {
    case Operation::kCreate:
      return "CREATE";
    case Operation::kUpdate:
      return "UPDATE";
    case Operation::kDelete:
      return "DELETE";
    case Operation::kConnect:
      return "CONNECT";
  }
  return "UNKNOWN";
}

Projection& Projection::with_digest(std::vector<std::string> path,
                                    std::vector<std::vector<std::string>> ignored) {
  digest_ = std::make_shared<const Digest>(Digest{std::move(path), std::move(ignored)});
  return *this;
}

kube::Result<Projection> Projection::parse(const std::vector<std::string>& paths) {
  Projection projection;
  auto root = std::make_shared<Node>();
  if (paths.empty()) root->keep_all = true;
  for (const auto& path : paths) {
    if (!path.empty() && path.front() != '/') {
      return fail("projection path " + quote(path) + " must start with /");
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
  projection.root_ = std::move(root);
  return projection;
}

kube::Result<AdmissionRequest> parse_review(std::string_view body, const ParseOptions& options) {
  if (body.empty()) return fail("the request body is empty");
  if (body.size() <= kReusedParserMaxBytes) {
    simdjson::error_code error;
    auto& parser = thread_parser(options.max_depth, error);
    if (error) return fail(std::string("JSON parser: ") + simdjson::error_message(error));
    return parse_with(parser, body, options);
  }
  simdjson::dom::parser parser;
  if (auto error = parser.allocate(body.size(), options.max_depth)) {
    return fail(std::string("JSON parser: ") + simdjson::error_message(error));
  }
  return parse_with(parser, body, options);
}

}  // namespace vscaler::webhook
