#include "webhook/admission.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "base/log.h"
#include "kube/object_meta.h"

namespace vscaler::webhook {
namespace {

using kube::fail;
using kube::Result;
using Element = simdjson::dom::element;
using ElementType = simdjson::dom::element_type;

// Bodies up to this size reuse the worker thread's parser (its buffers grow to the largest body
// seen); larger ones, rare and up to 7 MiB, get a parser of their own that is freed afterwards so
// a single big review does not pin tens of megabytes per worker thread.
constexpr std::size_t kReusedParserMaxBytes = 512 * 1024;
constexpr std::size_t kInitialCapacity = 64 * 1024;

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

// ---- subtree comparison (Projection::compare_subtree) ----

// Objects whose members are out of order are compared by name up to this many members.
constexpr std::size_t kMaxMembersByName = 64;

using Pattern = std::vector<std::string>;

bool is_any(const std::string& token) {
  return token.size() == 1 && token[0] == '*';
}

// The ignored patterns still alive at some depth of the walk: the range [begin, end) of one
// stack shared by the whole walk (a child's range is pushed above its parent's and popped after
// it), so the walk allocates nothing per object. Indices, not pointers: pushing may move it.
struct Alive {
  std::vector<const Pattern*>* stack;
  std::size_t begin;
  std::size_t end;

  bool empty() const { return begin == end; }
  void pop() const { stack->resize(begin); }
};

// Pushes the patterns of `alive` still matching below `key` (nullptr: an array element, matched
// only by "*") and returns their range (the caller pops it); `ignored` says a pattern ends here
// (the member is left out).
Alive descend(const Alive& alive, std::size_t depth, const std::string_view* key, bool& ignored) {
  std::size_t begin = alive.stack->size();
  for (std::size_t i = alive.begin; i < alive.end; ++i) {
    const Pattern* pattern = (*alive.stack)[i];
    const std::string& token = (*pattern)[depth];
    if (!is_any(token) && (key == nullptr || token != *key)) continue;
    if (pattern->size() == depth + 1) {
      ignored = true;
    } else {
      alive.stack->push_back(pattern);
    }
  }
  return Alive{alive.stack, begin, alive.stack->size()};
}

bool emptied(Element object, const Alive& alive, std::size_t depth);

// Whether member `key: value` of an object at `depth` takes part in the comparison. It does not
// when a pattern ends at it, or when it is an object every member of which is left out (so
// `resources: {}` after a reset counts as absent). When it does, `below` holds the patterns alive
// under it, pushed on the stack for the caller to pop.
bool kept(const Alive& alive, std::size_t depth, std::string_view key, Element value,
          Alive& below) {
  bool ignored = false;
  below = descend(alive, depth, &key, ignored);
  bool left_out = ignored || (!below.empty() && value.type() == ElementType::OBJECT &&
                              emptied(value, below, depth + 1));
  if (left_out) below.pop();
  return !left_out;
}

// True when no member of `object` (at `depth`) is kept. Stops at the first kept one, so on most
// objects it looks at a single member. Recursion depth is bounded by ParseOptions::max_depth.
bool emptied(Element object, const Alive& alive, std::size_t depth) {
  simdjson::dom::object members = object.get_object().value_unsafe();
  Alive below = alive;
  for (auto [key, value] : members) {
    if (kept(alive, depth, key, value, below)) {
      below.pop();
      return false;
    }
  }
  return true;
}

bool equal(Element a, Element b, const Alive& alive, std::size_t depth);

// Every kept member of `a` is kept in `b` with an equal value (members found by name).
bool kept_members_found(simdjson::dom::object a, simdjson::dom::object b, const Alive& alive,
                        std::size_t depth) {
  Alive below = alive;
  for (auto [key, value] : a) {
    if (!kept(alive, depth, key, value, below)) continue;
    Element other;
    bool same = !b.at_key(key).get(other) && equal(value, other, below, depth + 1);
    below.pop();
    if (!same) return false;
  }
  return true;
}

std::size_t count_kept(simdjson::dom::object object, const Alive& alive, std::size_t depth) {
  std::size_t count = 0;
  Alive below = alive;
  for (auto [key, value] : object) {
    if (kept(alive, depth, key, value, below)) {
      ++count;
      below.pop();
    }
  }
  return count;
}

// Objects out of order: equal when they keep as many members and each kept member of `a` is in
// `b` with an equal value. Each lookup is a scan of `b`: quadratic, so only for objects of the
// size Kubernetes writes (a container has a few dozen members). Larger ones out of order count as
// different, which only costs an UPDATE the handling of a template change; a forged review of
// 40,000 members in reverse order would otherwise hold a thread for seconds.
bool objects_equal_by_name(simdjson::dom::object a, simdjson::dom::object b, const Alive& alive,
                           std::size_t depth) {
  if (a.size() > kMaxMembersByName || b.size() > kMaxMembersByName) return false;
  return count_kept(a, alive, depth) == count_kept(b, alive, depth) &&
         kept_members_found(a, b, alive, depth);
}

// Objects are equal when their kept members are, in any order. Serializers keep the order, so
// the members are first walked side by side; a name out of place falls back to lookups by name
// (objects here have a few dozen members at most).
bool objects_equal(simdjson::dom::object a, simdjson::dom::object b, const Alive& alive,
                   std::size_t depth) {
  if (alive.empty()) {
    // No pattern reaches this deep (most of a template: labels, env, volumes): every member is
    // kept, so the walk needs no kept() per member.
    auto at = a.begin();
    auto bt = b.begin();
    for (; at != a.end() && bt != b.end(); ++at, ++bt) {
      if (at.key() != bt.key()) return objects_equal_by_name(a, b, alive, depth);
      if (!equal(at.value(), bt.value(), alive, depth + 1)) return false;
    }
    return at == a.end() && bt == b.end();
  }
  auto at = a.begin();
  auto bt = b.begin();
  Alive below = alive;
  Alive below_b = alive;
  for (;;) {
    // The next kept member of each; a's patterns stay pushed for the comparison of its value.
    while (at != a.end() && !kept(alive, depth, at.key(), at.value(), below)) ++at;
    while (bt != b.end() && !kept(alive, depth, bt.key(), bt.value(), below_b)) ++bt;
    if (bt != b.end()) below_b.pop();  // the same as a's when the names are
    bool a_done = at == a.end();
    if (a_done || bt == b.end()) {
      if (!a_done) below.pop();
      return a_done && bt == b.end();
    }
    if (at.key() != bt.key()) {
      below.pop();
      break;
    }
    bool same = equal(at.value(), bt.value(), below, depth + 1);
    below.pop();
    if (!same) return false;
    ++at;
    ++bt;
  }
  return objects_equal_by_name(a, b, alive, depth);
}

// Whether `a` and `b` are equal but for the members the alive patterns leave out. Numbers are
// equal when their JSON type and value are (1 and 1.0 differ, as they would in a patch).
// Recursion depth is bounded by ParseOptions::max_depth, enforced before this runs.
bool equal(Element a, Element b, const Alive& alive, std::size_t depth) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case ElementType::OBJECT:
      return objects_equal(a.get_object().value_unsafe(), b.get_object().value_unsafe(), alive,
                           depth);
    case ElementType::ARRAY: {
      simdjson::dom::array items_a = a.get_array().value_unsafe();
      simdjson::dom::array items_b = b.get_array().value_unsafe();
      bool ignored = false;  // the same for every element: patterns name no index
      Alive below = descend(alive, depth, nullptr, ignored);
      bool same = ignored || items_a.size() == items_b.size();
      for (auto it = items_a.begin(), jt = items_b.begin(); same && !ignored && it != items_a.end();
           ++it, ++jt) {
        same = equal(*it, *jt, below, depth + 1);
      }
      below.pop();
      return same;
    }
    case ElementType::STRING:
      return a.get_string().value_unsafe() == b.get_string().value_unsafe();
    case ElementType::INT64:
      return a.get_int64().value_unsafe() == b.get_int64().value_unsafe();
    case ElementType::UINT64:
      return a.get_uint64().value_unsafe() == b.get_uint64().value_unsafe();
    case ElementType::DOUBLE: {
      double x = a.get_double().value_unsafe();
      double y = b.get_double().value_unsafe();
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case ElementType::BOOL:
      return a.get_bool().value_unsafe() == b.get_bool().value_unsafe();
    case ElementType::NULL_VALUE:
      return true;
  }
  return false;
}

// The subtree `path` names in `element`, or nullopt when some member on the way is missing.
std::optional<Element> subtree(Element element, const std::vector<std::string>& path) {
  for (const std::string& key : path) {
    Element next;
    if (element.type() != ElementType::OBJECT ||
        element.get_object().value_unsafe().at_key(key).get(next)) {
      return std::nullopt;
    }
    element = next;
  }
  return element;
}

// Whether object's and oldObject's subtrees `spec` names are equal (both absent counts as equal).
std::optional<bool> subtrees_equal(std::optional<Element> object, std::optional<Element> old,
                                   const Projection::Comparison* spec) {
  if (spec == nullptr || !object || !old || object->type() == ElementType::NULL_VALUE ||
      old->type() == ElementType::NULL_VALUE) {
    return std::nullopt;
  }
  std::optional<Element> a = subtree(*object, spec->path);
  std::optional<Element> b = subtree(*old, spec->path);
  if (!a || !b) return !a && !b;
  // The walk's pattern stack, kept by the thread (it holds a few pointers per level).
  thread_local std::vector<const Pattern*> stack;
  stack.clear();
  for (const Pattern& pattern : spec->ignored) {
    if (!pattern.empty()) stack.push_back(&pattern);
  }
  return equal(*a, *b, Alive{&stack, 0, stack.size()}, 0);
}

nlohmann::json convert(Element element, const ParseOptions& options) {
  if (options.projection == nullptr) return kube::json_of(element);
  return kube::project_element(element, options.projection->paths().root());
}

// ---- oldObject as a StoredOldObject (Projection::old_object_stored) ----

// Member `key` of `object` when it is an object (a key given twice: the last, as the trees
// convert keeps it); nullopt when absent.
std::optional<Element> last_member(Element object, std::string_view key) {
  std::optional<Element> found;
  if (object.type() != ElementType::OBJECT) return found;
  simdjson::dom::object members = object.get_object().value_unsafe();
  for (auto [name, value] : members) {
    if (name == key) found = value;
  }
  return found;
}

// A stored value as api::stored_containers_of gives it: a string as it is, anything else as
// nlohmann dumps it (a number as simdjson writes it is the same text; an object's members are
// sorted and a duplicate key's last value kept, as in the tree, which simdjson's text would not).
std::string stored_text(Element value) {
  switch (value.type()) {
    case ElementType::STRING:
      return std::string(value.get_string().value_unsafe());
    case ElementType::OBJECT:
    case ElementType::ARRAY:
      return kube::json_of(value).dump();  // never a quantity: only compared as text
    default:
      return simdjson::to_string(value);
  }
}

// The requests or limits of a container's resources. Sorted before they go into the map, whose
// inserts out of order are linear each: a forged review's 30,000 keys in reverse order took
// seconds.
void read_stored_section(Element resources, std::string_view section,
                         base::FlatMap<std::string, std::string, std::less<>>& into) {
  std::optional<Element> values = last_member(resources, section);
  if (!values || values->type() != ElementType::OBJECT) return;
  std::vector<std::pair<std::string_view, Element>> members;
  simdjson::dom::object object = values->get_object().value_unsafe();
  for (auto [resource, value] : object) members.emplace_back(resource, value);
  std::stable_sort(members.begin(), members.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < members.size(); ++i) {
    // A key given twice: the last of them, as the tree keeps it.
    if (i + 1 < members.size() && members[i + 1].first == members[i].first) continue;
    into.emplace(std::string(members[i].first), stored_text(members[i].second));
  }
}

// api::pod_spec_of and api::stored_containers_of, on the parsed element.
std::vector<api::StoredContainer> stored_containers(Element object) {
  std::vector<api::StoredContainer> out;
  std::optional<Element> spec = last_member(object, "spec");
  if (!spec || spec->type() != ElementType::OBJECT) return out;
  if (std::optional<Element> pod_template = last_member(*spec, "template")) {
    spec = last_member(*pod_template, "spec");  // a workload's; else a Pod's own spec
    if (!spec || spec->type() != ElementType::OBJECT) return out;
  }
  std::optional<Element> containers = last_member(*spec, "containers");
  if (!containers || containers->type() != ElementType::ARRAY) return out;
  simdjson::dom::array items = containers->get_array().value_unsafe();
  for (Element container : items) {
    std::optional<Element> name = last_member(container, "name");
    if (!name || name->type() != ElementType::STRING) continue;
    api::StoredContainer& stored = out.emplace_back();
    stored.name = std::string(name->get_string().value_unsafe());
    std::optional<Element> resources = last_member(container, "resources");
    if (!resources) continue;
    read_stored_section(*resources, "requests", stored.requests);
    read_stored_section(*resources, "limits", stored.limits);
  }
  return out;
}

// oldObject as a StoredOldObject; nullopt when it is not an object (null on CREATE).
std::optional<StoredOldObject> read_stored(Element object) {
  if (object.type() != ElementType::OBJECT) return std::nullopt;
  StoredOldObject out;
  std::optional<Element> metadata = last_member(object, "metadata");
  if (metadata && metadata->type() == ElementType::OBJECT) {
    // One pass over its members (a key given twice: the last, as the tree keeps it).
    std::optional<Element> name, namespace_name, uid, generation;
    simdjson::dom::object members = metadata->get_object().value_unsafe();
    for (auto [key, value] : members) {
      if (key == "name") {
        name = value;
      } else if (key == "namespace") {
        namespace_name = value;
      } else if (key == "uid") {
        uid = value;
      } else if (key == "generation") {
        generation = value;
      }
    }
    auto text = [](const std::optional<Element>& value, std::string& into) {
      if (value && value->type() == ElementType::STRING) {
        into = std::string(value->get_string().value_unsafe());
      }
    };
    text(name, out.name);
    text(namespace_name, out.namespace_name);
    text(uid, out.uid);
    // As kube::meta_generation reads a tree: an integer, unsigned ones cast.
    if (generation && generation->type() == ElementType::INT64) {
      out.generation = generation->get_int64().value_unsafe();
    } else if (generation && generation->type() == ElementType::UINT64) {
      out.generation = static_cast<std::int64_t>(generation->get_uint64().value_unsafe());
    }
  }
  out.containers = stored_containers(object);
  return out;
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
    if (member.type() == ElementType::STRING) {  // the common case, without naming the field
      *target = std::string(member.get_string().value_unsafe());
      continue;
    }
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
  return fail("request.operation " + log::quote_untrusted(text) +
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
  std::optional<Element> object;
  std::optional<Element> old_object;
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
      object = value;
    } else if (key == "oldObject") {
      if (!(step = once(kOldObject, key))) return fail(std::move(step).error());
      if (options.projection != nullptr && options.projection->reads_old_object_stored()) {
        out.old_stored = read_stored(value);
      } else {
        out.old_object = convert(value, options);
      }
      old_object = value;
    }
    if (!step) return fail(std::move(step).error());
  }
  if (out.uid.empty()) return fail("request.uid is missing or empty");
  if (!has_operation) return fail("request.operation is missing");
  if (options.projection) {
    out.subtree_unchanged = subtrees_equal(object, old_object, options.projection->comparison());
  }
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
  if (api_version != kAdmissionApiVersion) {
    return fail("apiVersion " + log::quote_untrusted(api_version) +
                " is not supported; expected admission.k8s.io/v1");
  }
  if (kind != kAdmissionKind) {
    return fail(kind.empty() ? std::string("kind is missing; expected AdmissionReview")
                             : "kind " + log::quote_untrusted(kind) + " is not AdmissionReview");
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

Projection& Projection::compare_subtree(std::vector<std::string> path,
                                        std::vector<std::vector<std::string>> ignored) {
  comparison_ = std::make_shared<const Comparison>(Comparison{std::move(path), std::move(ignored)});
  return *this;
}

kube::Result<Projection> Projection::parse(const std::vector<std::string>& paths) {
  auto parsed = kube::JsonProjection::parse(paths);
  if (!parsed) return fail(std::move(parsed).error());
  Projection projection;
  projection.paths_ = std::move(parsed).value();
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

StoredOldObject stored_old_object_of(const nlohmann::json& object) {
  StoredOldObject out;
  if (!object.is_object()) return out;
  out.name = kube::meta_string(object, "name");
  out.namespace_name = kube::meta_string(object, "namespace");
  out.uid = kube::meta_string(object, "uid");
  out.generation = kube::meta_generation(object);
  out.containers = api::stored_containers_of(object);
  return out;
}

}  // namespace vscaler::webhook
