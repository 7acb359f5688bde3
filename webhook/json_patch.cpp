#include "webhook/json_patch.h"

#include "base/log.h"

namespace vscaler::webhook {
namespace {

using kube::fail;

// RFC 6901 syntax, checked without building a json_pointer: nlohmann reports a bad pointer
// by throwing, and a check that runs on every patched response stays exception-free.
bool valid_pointer(const nlohmann::json& path) {
  if (!path.is_string()) return false;
  const auto& text = path.get_ref<const std::string&>();
  if (!text.empty() && text.front() != '/') return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '~' && (i + 1 == text.size() || (text[i + 1] != '0' && text[i + 1] != '1'))) {
      return false;
    }
  }
  return true;
}

}  // namespace

kube::Result<kube::Unit> validate_json_patch(const nlohmann::json& patch) {
  if (!patch.is_array()) return fail("a JSON patch must be an array of operations");
  for (std::size_t i = 0; i < patch.size(); ++i) {
    const auto& operation = patch[i];
    // Built only for a message: every patched response passes through here.
    auto where = [i] { return "patch operation " + std::to_string(i); };
    if (!operation.is_object()) return fail(where() + " is not an object");
    auto op = operation.find("op");
    if (op == operation.end() || !op->is_string()) return fail(where() + " has no op");
    const auto& name = op->get_ref<const std::string&>();
    bool needs_value = name == "add" || name == "replace" || name == "test";
    bool needs_from = name == "move" || name == "copy";
    if (!needs_value && !needs_from && name != "remove") {
      return fail(where() + " has an unknown op " + log::quote_untrusted(name));
    }
    auto path = operation.find("path");
    if (path == operation.end() || !valid_pointer(*path)) {
      return fail(where() + " has no valid JSON pointer path");
    }
    if (needs_value && !operation.contains("value")) return fail(where() + " has no value");
    if (needs_from) {
      auto from = operation.find("from");
      if (from == operation.end() || !valid_pointer(*from)) {
        return fail(where() + " has no valid JSON pointer from");
      }
    }
  }
  return kube::Unit{};
}

std::string json_pointer_escape(std::string_view token) {
  // "" / token is the one-token pointer "/<escaped token>".
  return (nlohmann::json::json_pointer() / std::string(token)).to_string().substr(1);
}

}  // namespace vscaler::webhook
