// vscaler report: list the scalers, read their status, print one line per container.
#include "cmd/report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "api/resources.h"
#include "controller/template_resources.h"
#include "dashboard/format.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/object_meta.h"

namespace vscaler::cmd {
namespace {

using nlohmann::json;

std::optional<kube::Quantity> quantity_at(const json& object, const char* section,
                                          const char* resource) {
  auto values = object.find(section);
  if (values == object.end() || !values->is_object()) return std::nullopt;
  auto value = values->find(resource);
  if (value == values->end()) return std::nullopt;
  auto parsed = value->is_string() ? kube::Quantity::parse(value->get_ref<const std::string&>())
                                   : kube::Quantity::parse(value->dump());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

// What a container requests of `resource`: its request, else its limit (the API server gives a
// container with a limit and no request that limit as its request: DESIGN "Recommendations").
std::optional<kube::Quantity> requested(const json& container, const char* resource) {
  if (auto request = quantity_at(container, "requests", resource)) return request;
  return quantity_at(container, "limits", resource);
}

std::string text_at(const json& object, std::initializer_list<const char*> path) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return {};
    at = &(*at)[key];
  }
  return at->is_string() ? at->get<std::string>() : std::string();
}

/// request - target, when both are there.
std::optional<kube::Int128> difference(const std::optional<kube::Quantity>& request,
                                       const std::optional<kube::Quantity>& target) {
  if (!request || !target) return std::nullopt;
  return request->nanos() - target->nanos();
}

std::string cpu(const std::optional<kube::Quantity>& q) {
  return q ? dashboard::format_cpu(q->nanos()) : "-";
}
std::string memory(const std::optional<kube::Quantity>& q) {
  return q ? dashboard::format_memory(q->nanos()) : "-";
}
std::string signed_cpu(const std::optional<kube::Int128>& nanos) {
  return nanos ? dashboard::format_signed_cpu(*nanos) : "-";
}
std::string signed_memory(const std::optional<kube::Int128>& nanos) {
  return nanos ? dashboard::format_signed_memory(*nanos) : "-";
}

json quantity_json(const std::optional<kube::Quantity>& q) {
  return q ? json(q->to_string()) : json(nullptr);
}

/// Sums of the rows: requests and targets of the containers that have both.
struct Totals {
  kube::Int128 cpu_request = 0;
  kube::Int128 cpu_target = 0;
  kube::Int128 memory_request = 0;
  kube::Int128 memory_target = 0;
};

Totals totals_of(const std::vector<ReportRow>& rows) {
  Totals totals;
  for (const ReportRow& row : rows) {
    if (row.cpu_request && row.cpu_target) {
      totals.cpu_request += row.cpu_request->nanos();
      totals.cpu_target += row.cpu_target->nanos();
    }
    if (row.memory_request && row.memory_target) {
      totals.memory_request += row.memory_request->nanos();
      totals.memory_target += row.memory_target->nanos();
    }
  }
  return totals;
}

json report_json(const std::vector<ReportRow>& rows) {
  json containers = json::array();
  for (const ReportRow& row : rows) {
    auto cpu_difference = difference(row.cpu_request, row.cpu_target);
    auto memory_difference = difference(row.memory_request, row.memory_target);
    containers.push_back(
        {{"namespace", row.ns},
         {"scaler", row.scaler},
         {"target", row.target},
         {"mode", row.mode},
         {"container", row.container},
         {"requests",
          {{"cpu", quantity_json(row.cpu_request)}, {"memory", quantity_json(row.memory_request)}}},
         {"recommendation",
          {{"target",
            {{"cpu", quantity_json(row.cpu_target)}, {"memory", quantity_json(row.memory_target)}}},
           {"lowerBound",
            {{"cpu", quantity_json(row.cpu_lower)}, {"memory", quantity_json(row.memory_lower)}}},
           {"upperBound",
            {{"cpu", quantity_json(row.cpu_upper)}, {"memory", quantity_json(row.memory_upper)}}}}},
         {"difference",
          {{"cpu", cpu_difference ? json(dashboard::format_signed_cpu(*cpu_difference)) : json()},
           {"memory", memory_difference ? json(dashboard::format_signed_memory(*memory_difference))
                                        : json()}}}});
  }
  const Totals totals = totals_of(rows);
  return {{"containers", std::move(containers)},
          {"totals",
           {{"requests",
             {{"cpu", dashboard::format_cpu(totals.cpu_request)},
              {"memory", dashboard::format_memory(totals.memory_request)}}},
            {"recommended",
             {{"cpu", dashboard::format_cpu(totals.cpu_target)},
              {"memory", dashboard::format_memory(totals.memory_target)}}},
            {"difference",
             {{"cpu", dashboard::format_signed_cpu(totals.cpu_request - totals.cpu_target)},
              {"memory",
               dashboard::format_signed_memory(totals.memory_request - totals.memory_target)}}}}}};
}

void emit_yaml(YAML::Emitter& out, const json& value) {
  if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, item] : value.items()) {
      out << YAML::Key << key << YAML::Value;
      emit_yaml(out, item);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : value) emit_yaml(out, item);
    out << YAML::EndSeq;
  } else if (value.is_null()) {
    out << YAML::Null;
  } else if (value.is_string()) {
    // Quoted: "1" and "512Mi" stay strings, as the API writes quantities.
    out << YAML::DoubleQuoted << value.get<std::string>();
  } else {
    out << value.dump();
  }
}

/// Text from the cluster as a terminal may show it: printable ASCII only, every other byte '?'.
/// No escape sequence in a name or message may reach the terminal (OSC 52 writes the clipboard;
/// others erase or forge lines), and a terminal not in UTF-8 mode reads the byte 0x9B, which
/// valid UTF-8 carries inside characters, as a CSI. Kubernetes names are ASCII anyway.
std::string terminal_safe(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7E) c = '?';  // char may be signed: bytes >= 0x80 are negative
  }
  return out;
}

std::string csv_field(const std::string& raw) {
  const std::string text = terminal_safe(raw);
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// "300m..1", or "-" when the recommendation has no bounds.
std::string bounds(const std::string& lower, const std::string& upper) {
  return lower == "-" && upper == "-" ? "-" : lower + ".." + upper;
}

std::string table(const std::vector<ReportRow>& rows) {
  std::vector<std::vector<std::string>> cells = {{"NAMESPACE", "SCALER", "TARGET", "MODE",
                                                  "CONTAINER", "CPU REQUEST", "CPU TARGET",
                                                  "CPU BOUNDS", "CPU DIFF", "MEMORY REQUEST",
                                                  "MEMORY TARGET", "MEMORY BOUNDS", "MEMORY DIFF"}};
  for (const ReportRow& row : rows) {
    cells.push_back({terminal_safe(row.ns), terminal_safe(row.scaler), terminal_safe(row.target),
                     terminal_safe(row.mode), terminal_safe(row.container), cpu(row.cpu_request),
                     cpu(row.cpu_target), bounds(cpu(row.cpu_lower), cpu(row.cpu_upper)),
                     signed_cpu(difference(row.cpu_request, row.cpu_target)),
                     memory(row.memory_request), memory(row.memory_target),
                     bounds(memory(row.memory_lower), memory(row.memory_upper)),
                     signed_memory(difference(row.memory_request, row.memory_target))});
  }
  const Totals totals = totals_of(rows);
  cells.push_back({"TOTAL", "", "", "", std::to_string(rows.size()) + " containers",
                   dashboard::format_cpu(totals.cpu_request),
                   dashboard::format_cpu(totals.cpu_target), "",
                   dashboard::format_signed_cpu(totals.cpu_request - totals.cpu_target),
                   dashboard::format_memory(totals.memory_request),
                   dashboard::format_memory(totals.memory_target), "",
                   dashboard::format_signed_memory(totals.memory_request - totals.memory_target)});
  std::vector<std::size_t> widths(cells.front().size(), 0);
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text += std::string(widths[i] - line[i].size() + 3, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

std::string csv(const std::vector<ReportRow>& rows) {
  std::string out =
      "namespace,scaler,target,mode,container,cpu_request,cpu_target,cpu_lower_bound,"
      "cpu_upper_bound,memory_request,memory_target,memory_lower_bound,memory_upper_bound,"
      "cpu_difference,memory_difference\n";
  auto q = [](const std::optional<kube::Quantity>& value) {
    return value ? value->to_string() : std::string();
  };
  // As JSON gives them (requested minus recommended); empty when either is unknown.
  auto cpu_diff = [](const ReportRow& row) {
    auto diff = difference(row.cpu_request, row.cpu_target);
    return diff ? dashboard::format_signed_cpu(*diff) : std::string();
  };
  auto memory_diff = [](const ReportRow& row) {
    auto diff = difference(row.memory_request, row.memory_target);
    return diff ? dashboard::format_signed_memory(*diff) : std::string();
  };
  for (const ReportRow& row : rows) {
    out += csv_field(row.ns) + "," + csv_field(row.scaler) + "," + csv_field(row.target) + "," +
           csv_field(row.mode) + "," + csv_field(row.container) + "," + q(row.cpu_request) + "," +
           q(row.cpu_target) + "," + q(row.cpu_lower) + "," + q(row.cpu_upper) + "," +
           q(row.memory_request) + "," + q(row.memory_target) + "," + q(row.memory_lower) + "," +
           q(row.memory_upper) + "," + cpu_diff(row) + "," + memory_diff(row) + "\n";
  }
  return out;
}

/// The kubeconfig as kubectl finds it: --kubeconfig, $KUBECONFIG, ~/.kube/config, else the
/// in-cluster service account.
// The kubeconfig as kubectl finds it: --kubeconfig, else $KUBECONFIG (a colon-separated list),
// else ~/.kube/config, else the pod's service account; `context` (--context) picks a context of
// whichever file(s) that is.
kube::Result<kube::ClientConfig> report_config(const std::string& flag,
                                               const std::string& context) {
  const char* list = std::getenv("KUBECONFIG");
  if (flag.empty() && (list == nullptr || *list == '\0')) {
    if (const char* home = std::getenv("HOME"); home != nullptr) {
      const std::string path = std::string(home) + "/.kube/config";
      if (std::filesystem::exists(path)) return kube::load_kubeconfig(path, context);
    }
  }
  return kube::load_default(flag, kube::kServiceAccountDir, context);
}

// True when the scaler's Ready condition says another scaler of its workload is the active one
// (reason Conflict): its status is stale, and its rows would count the workload twice.
bool lost_to_another(const json& object) {
  auto status = object.find("status");
  if (status == object.end() || !status->is_object()) return false;
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return false;
  for (const json& condition : *conditions) {
    if (condition.is_object() && text_at(condition, {"type"}) == "Ready" &&
        text_at(condition, {"reason"}) == "Conflict") {
      return true;
    }
  }
  return false;
}

// The pod templates' resources of the workloads of scalers in mode "Off": one paged list per
// namespace and kind (controller::list_template_resources). A list the user may not read is said
// on stderr; those rows' requests are unknown.
TemplateRequests off_templates(kube::Client& client, const std::vector<json>& scalers) {
  std::set<std::pair<std::string, std::string>> wanted;  // (namespace, kind)
  for (const auto& row : report_rows(scalers)) {
    if (row.mode != "Off") continue;
    wanted.emplace(row.ns, row.target.substr(0, row.target.find('/')));
  }
  TemplateRequests out;
  for (const auto& [ns, kind] : wanted) {
    auto listed = controller::list_template_resources(client, ns, kind, out);
    if (!listed.ok()) {
      std::fprintf(stderr,
                   "vscaler report: cannot list %ss in %s (%s): the requests of its scalers in "
                   "mode Off are unknown (-)\n",
                   kind.c_str(), ns.c_str(), terminal_safe(listed.error().to_string()).c_str());
    }
  }
  return out;
}

}  // namespace

const char* const kReportUsage =
    R"(Usage: vscaler report [flags]   (or: kubectl vscaler report [flags])

What each VerticalScaler's containers request beside the recommendation, one line per
container, with totals.

  -n, --namespace NS    the scalers of this namespace (default: the kubeconfig context's)
  -A, --all-namespaces  the scalers of every namespace
  -l, --selector SEL    only scalers with these labels ("team=shop")
  -o, --output FORMAT   table (default), json, yaml or csv
      --kubeconfig FILE the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME    its context (default: its current-context)
  -h, --help            this text
)";

std::vector<ReportRow> report_rows(const std::vector<json>& scalers,
                                   const TemplateRequests* templates) {
  std::vector<ReportRow> rows;
  for (const json& object : scalers) {
    if (!object.is_object() || lost_to_another(object)) continue;
    ReportRow base;
    base.ns = text_at(object, {"metadata", "namespace"});
    base.scaler = text_at(object, {"metadata", "name"});
    base.mode = text_at(object, {"spec", "updateMode"});
    if (base.mode.empty()) base.mode = "Auto";
    base.target = text_at(object, {"status", "target", "ref"});
    if (base.target.empty()) {
      const std::string kind = text_at(object, {"spec", "targetRef", "kind"});
      base.target = kind.empty() ? "Deployment/" + text_at(object, {"spec", "deploymentName"})
                                 : kind + "/" + text_at(object, {"spec", "targetRef", "name"});
    }
    std::map<std::string, ReportRow> by_container;
    auto row_of = [&](const std::string& name) -> ReportRow& {
      auto [slot, fresh] = by_container.try_emplace(name, base);
      if (fresh) slot->second.container = name;
      return slot->second;
    };
    const json status = object.value("status", json::object());
    if (auto containers = status.find("containers");
        containers != status.end() && containers->is_array()) {
      for (const json& item : *containers) {
        const std::string name = item.value("name", "");
        if (name.empty()) continue;
        ReportRow& row = row_of(name);
        row.cpu_request = requested(item, "cpu");
        row.memory_request = requested(item, "memory");
      }
    }
    if (templates != nullptr && base.mode == "Off") {
      // Only the template says what an Off scaler's workload requests; its status holds what
      // would be applied. A template not listed (the user may not read that kind, the list
      // failed, the workload is gone) leaves the requests unknown ("-", out of the totals):
      // the status's values there would read as "request = recommendation, nothing to save".
      auto found = templates->find(api::template_key(base.ns, base.target));
      for (auto& [name, row] : by_container) {
        json held = json::object();
        if (found != templates->end()) {
          if (auto resources = found->second.find(name); resources != found->second.end()) {
            held = resources->second;
          }
        }
        row.cpu_request = requested(held, "cpu");
        row.memory_request = requested(held, "memory");
      }
    }
    const json* recommendations = nullptr;
    if (auto rec = status.find("recommendation"); rec != status.end() && rec->is_object()) {
      auto list = rec->find("containerRecommendations");
      if (list != rec->end() && list->is_array()) recommendations = &*list;
    }
    if (recommendations != nullptr) {
      for (const json& item : *recommendations) {
        const std::string name = item.value("containerName", "");
        if (name.empty()) continue;
        ReportRow& row = row_of(name);
        row.cpu_target = quantity_at(item, "target", "cpu");
        row.memory_target = quantity_at(item, "target", "memory");
        row.cpu_lower = quantity_at(item, "lowerBound", "cpu");
        row.memory_lower = quantity_at(item, "lowerBound", "memory");
        row.cpu_upper = quantity_at(item, "upperBound", "cpu");
        row.memory_upper = quantity_at(item, "upperBound", "memory");
      }
    }
    for (auto& [name, row] : by_container) rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ReportRow& a, const ReportRow& b) {
    return std::tie(a.ns, a.scaler, a.container) < std::tie(b.ns, b.scaler, b.container);
  });
  return rows;
}

kube::Result<std::string> render_report(const std::vector<ReportRow>& rows,
                                        const std::string& format) {
  if (format == "table") return table(rows);
  if (format == "csv") return csv(rows);
  // Every non-ASCII character escaped (\uXXXX): C1 controls and DEL are not, by JSON's rules.
  if (format == "json") return report_json(rows).dump(2, ' ', true) + "\n";
  if (format == "yaml") {
    YAML::Emitter out;
    out.SetOutputCharset(YAML::EscapeNonAscii);  // likewise
    emit_yaml(out, report_json(rows));
    return std::string(out.c_str()) + "\n";
  }
  return kube::fail("--output: \"" + format + "\" is not one of table, json, yaml, csv");
}

int run_report(const std::vector<std::string>& args) {
  std::string ns;
  std::string selector;
  std::string format = "table";
  std::string kubeconfig;
  std::string context;
  bool all = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool inline_value = false;
    if (auto equals = arg.find('='); equals != std::string::npos && arg.rfind("--", 0) == 0) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
      inline_value = true;
    } else if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-' &&
               std::string_view("nlo").find(arg[1]) != std::string_view::npos) {
      // kubectl's short forms with the value attached: -ojson, -nshop, -n=shop.
      value = arg.substr(arg[2] == '=' ? 3 : 2);
      arg = arg.substr(0, 2);
      inline_value = true;
    }
    auto take = [&](std::string& field) {
      if (inline_value) {
        field = value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      field = args[++i];
      return true;
    };
    bool ok = true;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kReportUsage, stdout);
      return 0;
    } else if (arg == "-A" || arg == "--all-namespaces") {
      all = true;
    } else if (arg == "-n" || arg == "--namespace") {
      ok = take(ns);
    } else if (arg == "-l" || arg == "--selector") {
      ok = take(selector);
    } else if (arg == "-o" || arg == "--output") {
      ok = take(format);
    } else if (arg == "--kubeconfig") {
      ok = take(kubeconfig);
    } else if (arg == "--context") {
      ok = take(context);
    } else {
      std::fprintf(stderr, "vscaler report: unknown flag \"%s\" (see --help)\n", arg.c_str());
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "vscaler report: %s needs a value\n", arg.c_str());
      return 2;
    }
  }
  if (format != "table" && format != "json" && format != "yaml" && format != "csv") {
    std::fprintf(stderr, "vscaler report: --output: \"%s\" is not one of table, json, yaml, csv\n",
                 format.c_str());
    return 2;
  }
  auto config = report_config(kubeconfig, context);
  if (!config.ok()) {
    std::fprintf(stderr, "vscaler report: no usable kubeconfig: %s\n", config.error().c_str());
    return 1;
  }
  config->request_timeout = std::chrono::seconds(30);
  config->connect_timeout = std::chrono::seconds(10);
  auto client = kube::Client::connect(*config);
  if (!client.ok()) {
    std::fprintf(stderr, "vscaler report: cannot use %s: %s\n", config->source.c_str(),
                 client.error().c_str());
    return 1;
  }
  if (!all && ns.empty()) ns = config->default_namespace;
  kube::ListOptions options;
  options.label_selector = selector;
  options.limit = 500;
  options.transform = [](json& object) {
    if (auto metadata = object.find("metadata"); metadata != object.end()) {
      metadata->erase("managedFields");
    }
  };
  auto listed = client->list(kube::resources::kVerticalScalers, all ? "" : ns, options);
  if (!listed.ok()) {
    if (kube::is_not_found(listed.error())) {
      // The API server knows no such resource: the CRD, not a namespace or a scaler, is missing.
      std::fprintf(stderr,
                   "vscaler report: the VerticalScaler CRD (verticalscalers.%s) is not installed "
                   "at %s; install vscaler first\n",
                   kube::resources::kVerticalScalers.group.c_str(), config->server.c_str());
      return 1;
    }
    std::fprintf(stderr, "vscaler report: cannot list VerticalScalers at %s: %s\n",
                 config->server.c_str(), terminal_safe(listed.error().to_string()).c_str());
    return 1;
  }
  if (listed->items.empty()) {
    // As kubectl get: said on stderr, exit 0; a format a program reads gets its empty document
    // (no containers, zero totals; CSV its header), so `-o json | jq` has input.
    std::fprintf(stderr, "vscaler report: no VerticalScalers found %s%s\n",
                 all ? "in any namespace" : ("in namespace " + terminal_safe(ns)).c_str(),
                 selector.empty() ? "" : (" with labels " + terminal_safe(selector)).c_str());
    if (format != "table") std::fputs(render_report({}, format)->c_str(), stdout);
    return 0;
  }
  const TemplateRequests templates = off_templates(*client, listed->items);
  auto rendered = render_report(report_rows(listed->items, &templates), format);
  std::fputs(rendered->c_str(), stdout);
  return 0;
}

}  // namespace vscaler::cmd
