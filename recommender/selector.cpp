// LabelSelector parsing, its query string (the syntax of k8s.io/apimachinery/pkg/labels), and
// matching labels against it.
#include "recommender/selector.h"

#include <algorithm>
#include <utility>

#include "recommender/json_fields.h"

namespace vscaler::recommender {
namespace {

using Op = LabelSelector::Requirement::Op;

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + v;
  return out;
}

}  // namespace

kube::Result<LabelSelector> parse_label_selector(const nlohmann::json& selector) {
  if (!selector.is_object()) return kube::fail("spec.selector: must be an object");
  LabelSelector parsed;
  if (const auto* labels = child(selector, "matchLabels"); labels && !labels->is_null()) {
    if (!labels->is_object()) return kube::fail("spec.selector.matchLabels: must be an object");
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        return kube::fail("spec.selector.matchLabels." + key + ": must be a string");
      }
      parsed.requirements.push_back({key, Op::kEquals, {value.get<std::string>()}});
    }
  }
  if (const auto* exprs = child(selector, "matchExpressions"); exprs && !exprs->is_null()) {
    if (!exprs->is_array()) return kube::fail("spec.selector.matchExpressions: must be an array");
    for (std::size_t i = 0; i < exprs->size(); ++i) {
      const auto& e = (*exprs)[i];
      const std::string path = "spec.selector.matchExpressions[" + std::to_string(i) + "]";
      LabelSelector::Requirement requirement;
      requirement.key = std::string(string_field(e, "key"));
      const std::string op(string_field(e, "operator"));
      if (requirement.key.empty()) return kube::fail(path + ".key: is required");
      if (const auto* v = child(e, "values"); v && v->is_array()) {
        for (const auto& value : *v) {
          if (!value.is_string()) return kube::fail(path + ".values: must be strings");
          requirement.values.push_back(value.get<std::string>());
        }
      }
      std::sort(requirement.values.begin(), requirement.values.end());
      if (op == "In" || op == "NotIn") {
        if (requirement.values.empty())
          return kube::fail(path + ".values: " + op + " needs values");
        requirement.op = op == "In" ? Op::kIn : Op::kNotIn;
      } else if (op == "Exists" || op == "DoesNotExist") {
        if (!requirement.values.empty()) {
          return kube::fail(path + ".values: " + op + " takes no values");
        }
        requirement.op = op == "Exists" ? Op::kExists : Op::kDoesNotExist;
      } else {
        return kube::fail(path + ".operator: \"" + op +
                          "\" is not In, NotIn, Exists or DoesNotExist");
      }
      parsed.requirements.push_back(std::move(requirement));
    }
  }
  if (parsed.requirements.empty()) {
    return kube::fail("spec.selector: empty (it would select every pod)");
  }
  return parsed;
}

std::string to_query(const LabelSelector& selector) {
  std::vector<std::string> terms;
  for (const auto& r : selector.requirements) {
    switch (r.op) {
      case Op::kEquals:
        terms.push_back(r.key + "=" + r.values.front());
        break;
      case Op::kIn:
        terms.push_back(r.key + " in (" + joined(r.values) + ")");
        break;
      case Op::kNotIn:
        terms.push_back(r.key + " notin (" + joined(r.values) + ")");
        break;
      case Op::kExists:
        terms.push_back(r.key);
        break;
      case Op::kDoesNotExist:
        terms.push_back("!" + r.key);
        break;
    }
  }
  return joined(terms);
}

bool matches(const LabelSelector& selector, const Labels& labels) {
  return std::all_of(
      selector.requirements.begin(), selector.requirements.end(), [&labels](const auto& r) {
        auto it = labels.find(r.key);
        const bool present = it != labels.end();
        const bool listed =
            present && std::binary_search(r.values.begin(), r.values.end(), it->second);
        switch (r.op) {
          case Op::kEquals:
          case Op::kIn:
            return listed;
          case Op::kNotIn:
            return !listed;
          case Op::kExists:
            return present;
          case Op::kDoesNotExist:
            return !present;
        }
        return false;
      });
}

kube::Result<std::string> label_selector_query(const nlohmann::json& selector) {
  auto parsed = parse_label_selector(selector);
  if (!parsed.ok()) return kube::fail(parsed.error());
  return to_query(*parsed);
}

}  // namespace vscaler::recommender
