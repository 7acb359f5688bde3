// LabelSelector -> selector string, in the syntax of k8s.io/apimachinery/pkg/labels.
#include "recommender/selector.h"

#include <algorithm>
#include <vector>

#include "recommender/json_fields.h"

namespace vscaler::recommender {

kube::Result<std::string> label_selector_query(const nlohmann::json& selector) {
  if (!selector.is_object()) return kube::fail("spec.selector: must be an object");
  std::vector<std::string> terms;
  if (const auto* labels = child(selector, "matchLabels"); labels && !labels->is_null()) {
    if (!labels->is_object()) return kube::fail("spec.selector.matchLabels: must be an object");
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return kube::fail("spec.selector.matchLabels." + key + ": must be a string");
      }
      terms.push_back(key + "=" + value.get<std::string>());
    }
  }
  if (const auto* exprs = child(selector, "matchExpressions"); exprs && !exprs->is_null()) {
    if (!exprs->is_array()) return kube::fail("spec.selector.matchExpressions: must be an array");
    for (std::size_t i = 0; i < exprs->size(); ++i) {
      const auto& e = (*exprs)[i];
      const std::string path = "spec.selector.matchExpressions[" + std::to_string(i) + "]";
      const std::string key(string_field(e, "key"));
      const std::string op(string_field(e, "operator"));
      if (key.empty()) return kube::fail(path + ".key: is required");
      std::vector<std::string> values;
      if (const auto* v = child(e, "values"); v && v->is_array()) {
        for (const auto& value : *v) {
          if (!value.is_string()) return kube::fail(path + ".values: must be strings");
          values.push_back(value.get<std::string>());
        }
      }
      if (op == "In" || op == "NotIn") {
        if (values.empty()) return kube::fail(path + ".values: " + op + " needs values");
        std::sort(values.begin(), values.end());  // the API server's canonical order
        std::string joined;
        for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
        terms.push_back(key + (op == "In" ? " in (" : " notin (") + joined + ")");
      } else if (op == "Exists" || op == "DoesNotExist") {
        if (!values.empty()) return kube::fail(path + ".values: " + op + " takes no values");
        terms.push_back(op == "Exists" ? key : "!" + key);
      } else {
        return kube::fail(path + ".operator: \"" + op +
                          "\" is not In, NotIn, Exists or DoesNotExist");
      }
    }
  }
  if (terms.empty()) return kube::fail("spec.selector: empty (it would select every pod)");
  std::string out;
  for (const auto& t : terms) out += (out.empty() ? "" : ",") + t;
  return out;
}

}  // namespace vscaler::recommender
