// render_html, render_json, render_chart: the dashboard's page, its JSON twin and its charts.
#include "dashboard/render.h"

#include <algorithm>
#include <cstdio>

#include "dashboard/format.h"

namespace vscaler::dashboard {
namespace {

using nlohmann::json;

constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header{background:#1d3557;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;opacity:.8}main{padding:16px 24px}
nav a{margin-right:12px}a{color:#1d4ed8}
.totals{border-collapse:collapse;margin:8px 0 16px}.totals td,.totals th{padding:4px 12px;border:1px solid #d0d5dd;text-align:right}
.totals th:first-child,.totals td:first-child{text-align:left}
section.ns{background:#fff;border:1px solid #d0d5dd;border-radius:6px;padding:8px 16px 16px;margin-bottom:20px}
.scaler{border-top:1px solid #e4e7ec;padding-top:8px;margin-top:12px}
.scaler h3{margin:0 0 4px;font-size:16px}.meta span{margin-right:16px}
.badge{display:inline-block;padding:0 6px;border-radius:4px;background:#e4e7ec;font-size:12px}
.mode-Auto{background:#d1fadf}.mode-Off{background:#fee4e2}.mode-Reconcile{background:#fef0c7}.mode-Initial{background:#e0eaff}
table.c{border-collapse:collapse;margin-top:6px;width:100%}table.c th,table.c td{border-bottom:1px solid #e4e7ec;padding:3px 8px;text-align:left;white-space:nowrap}
table.c th{font-size:12px;color:#475467;font-weight:600}
.pos{color:#067647}.neg{color:#b42318}.warn{color:#b54708}.problem{color:#b42318}
svg .bg{fill:#f2f4f7}svg .cpu{stroke:#1d4ed8}svg .mem{stroke:#c11574}svg polyline{fill:none;stroke-width:1.5}
.legend-cpu{color:#1d4ed8}.legend-mem{color:#c11574}
)";

std::string esc(std::string_view text) {
  return html_escape(text);
}

// A quantity cell: the stored text, or an em dash.
std::string cell(const std::optional<kube::Quantity>& quantity) {
  return quantity ? esc(quantity->to_string()) : std::string("&mdash;");
}

std::string pair_cell(const Resources& resources) {
  if (resources.empty()) return "&mdash;";
  return cell(resources.cpu) + " / " + cell(resources.memory);
}

std::string signed_class(kube::Int128 value) {
  return value > 0 ? "pos" : value < 0 ? "neg" : "";
}

void totals_table(std::string& out, const Totals& totals) {
  out +=
      "<table class=\"totals\"><tr><th></th><th>requested now</th><th>recommended</th>"
      "<th>savings (requested &minus; recommended)</th></tr>";
  out += "<tr><td>CPU</td><td>" + format_cpu(totals.requested_cpu) + "</td><td>" +
         format_cpu(totals.recommended_cpu) + "</td><td class=\"" +
         signed_class(totals.savings_cpu()) + "\">" + format_signed_cpu(totals.savings_cpu()) +
         "</td></tr>";
  out += "<tr><td>Memory</td><td>" + format_memory(totals.requested_memory) + "</td><td>" +
         format_memory(totals.recommended_memory) + "</td><td class=\"" +
         signed_class(totals.savings_memory()) + "\">" +
         format_signed_memory(totals.savings_memory()) + "</td></tr></table>";
}

void scaler_html(std::string& out, const ScalerView& scaler, std::int64_t now,
                 std::int64_t window) {
  out += "<div class=\"scaler\" id=\"" + esc(scaler.ns + "/" + scaler.name) + "\"><h3>" +
         esc(scaler.name) + " <span class=\"badge mode-" + esc(scaler.mode) + "\">" +
         esc(scaler.mode) + "</span></h3><div class=\"meta\"><span>target <b>" +
         esc(scaler.target) + "</b></span>";
  if (scaler.last_change) {
    out += "<span>last change " + esc(scaler.last_change->time) + " (" +
           esc(scaler.last_change->cause) + ")</span>";
  } else {
    out += "<span>no change yet</span>";
  }
  if (!scaler.last_recommendation_update_time.empty()) {
    out += "<span>last recommendation applied " + esc(scaler.last_recommendation_update_time) +
           "</span>";
  }
  out += "<span>savings CPU <b class=\"" + signed_class(scaler.totals.savings_cpu()) + "\">" +
         format_signed_cpu(scaler.totals.savings_cpu()) + "</b>, memory <b class=\"" +
         signed_class(scaler.totals.savings_memory()) + "\">" +
         format_signed_memory(scaler.totals.savings_memory()) + "</b></span></div>";
  if (scaler.deferral) {
    out += "<div class=\"warn\">deferred";
    if (!scaler.deferral->until.empty()) out += " until " + esc(scaler.deferral->until);
    out += ": " + esc(scaler.deferral->message) + "</div>";
  }
  for (const auto& problem : scaler.problems) {
    out += "<div class=\"problem\">" + esc(problem.type) + "=" + esc(problem.status) + " " +
           esc(problem.reason) + ": " + esc(problem.message) + "</div>";
  }
  out +=
      "<table class=\"c\"><tr><th>container</th><th>values</th><th>requests cpu / memory</th>"
      "<th>limits</th><th>target</th><th>lowerBound</th><th>upperBound</th>"
      "<th>uncapped</th><th>target, last hours (<span class=\"legend-cpu\">cpu</span>, "
      "<span class=\"legend-mem\">memory</span>)</th></tr>";
  for (const auto& container : scaler.containers) {
    out += "<tr><td>" + esc(container.name) + "</td><td>" + esc(container.policy) + "</td><td>" +
           pair_cell(container.requests) + "</td><td>" + pair_cell(container.limits) + "</td><td>" +
           pair_cell(container.target) + "</td><td>" + pair_cell(container.lower_bound) +
           "</td><td>" + pair_cell(container.upper_bound) + "</td><td>" +
           pair_cell(container.uncapped_target) + "</td><td>";
    std::string chart = render_chart(container.history, now, window);
    out += chart.empty() ? "&mdash;" : chart;
    out += "</td></tr>";
  }
  if (scaler.containers.empty()) {
    out += "<tr><td colspan=\"9\">no container reported yet</td></tr>";
  }
  out += "</table></div>";
}

json resources_json(const Resources& resources) {
  json out = json::object();
  if (resources.cpu) out["cpu"] = resources.cpu->to_string();
  if (resources.memory) out["memory"] = resources.memory->to_string();
  return out;
}

json totals_json(const Totals& totals) {
  auto millicores = [](kube::Int128 nanos) {
    return static_cast<long long>(nanos >= 0 ? (nanos + 999'999) / 1'000'000
                                             : -((-nanos + 999'999) / 1'000'000));
  };
  auto bytes = [](kube::Int128 nanos) {
    return static_cast<long long>(nanos >= 0 ? (nanos + 999'999'999) / 1'000'000'000
                                             : -((-nanos + 999'999'999) / 1'000'000'000));
  };
  auto side = [&](kube::Int128 cpu, kube::Int128 memory, bool sign) {
    return json{{"cpu", sign ? format_signed_cpu(cpu) : format_cpu(cpu)},
                {"memory", sign ? format_signed_memory(memory) : format_memory(memory)},
                {"cpuMillicores", millicores(cpu)},
                {"memoryBytes", bytes(memory)}};
  };
  return json{{"requested", side(totals.requested_cpu, totals.requested_memory, false)},
              {"recommended", side(totals.recommended_cpu, totals.recommended_memory, false)},
              {"savings", side(totals.savings_cpu(), totals.savings_memory(), true)}};
}

}  // namespace

std::string render_chart(const std::vector<HistoryPoint>& points, std::int64_t now,
                         std::int64_t window) {
  if (points.empty() || window <= 0) return {};
  constexpr int kWidth = 160, kHeight = 36, kPad = 2;
  const std::int64_t start = now - window;
  auto x_of = [&](std::int64_t t) {
    t = std::clamp(t, start, now);
    return kPad +
           static_cast<double>(t - start) * (kWidth - 2 * kPad) / static_cast<double>(window);
  };
  std::string out = "<svg class=\"chart\" width=\"" + std::to_string(kWidth) + "\" height=\"" +
                    std::to_string(kHeight) + "\" viewBox=\"0 0 " + std::to_string(kWidth) + " " +
                    std::to_string(kHeight) + "\" role=\"img\"><rect class=\"bg\" width=\"" +
                    std::to_string(kWidth) + "\" height=\"" + std::to_string(kHeight) + "\"/>";
  std::string title;
  for (int series = 0; series < 2; ++series) {
    auto value = [&](const HistoryPoint& p) { return series == 0 ? p.cpu : p.memory; };
    kube::Int128 top = 0;
    for (const auto& p : points) {
      if (auto v = value(p); v && *v > top) top = *v;
    }
    if (top <= 0) continue;
    // A step line: each value holds until the next point, the last one until now.
    std::string line;
    char buffer[64];
    std::optional<double> last_y;
    for (const auto& p : points) {
      auto v = value(p);
      if (!v) continue;
      // The maximum at 80 % of the height: a flat line stays visible below the top edge.
      double y = kHeight - kPad -
                 static_cast<double>(*v) / static_cast<double>(top) * 0.8 * (kHeight - 2 * kPad);
      double x = x_of(p.time);
      if (last_y) {
        std::snprintf(buffer, sizeof buffer, "%.1f,%.1f ", x, *last_y);
        line += buffer;
      }
      std::snprintf(buffer, sizeof buffer, "%.1f,%.1f ", x, y);
      line += buffer;
      last_y = y;
    }
    if (!last_y) continue;
    std::snprintf(buffer, sizeof buffer, "%.1f,%.1f", x_of(now), *last_y);
    line += buffer;
    out += std::string("<polyline class=\"") + (series == 0 ? "cpu" : "mem") + "\" points=\"" +
           line + "\"/>";
    title += series == 0 ? "cpu max " + format_cpu(top) + " " : "memory max " + format_memory(top);
  }
  out += "<title>" + esc(title) + "</title></svg>";
  return out;
}

std::string render_html(const Model& model, const std::string& only_namespace, std::int64_t now,
                        std::int64_t window) {
  std::string out;
  out.reserve(4096 + model.scaler_count * 2048);
  out +=
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>vscaler dashboard</title><style>";
  out += kStyle;
  out += "</style></head><body><header><h1>vscaler dashboard</h1><p>" +
         std::to_string(model.scaler_count) + " scalers in " +
         std::to_string(model.namespaces.size()) + " namespaces &middot; generated " +
         esc(model.generated_at) +
         " &middot; <a style=\"color:#fff\" href=\"dashboard.json\">JSON</a></p></header><main>";
  out += "<h2>Cluster</h2>";
  totals_table(out, model.totals);
  out += "<nav>namespaces: <a href=\"dashboard\">all</a>";
  for (const auto& ns : model.namespaces) {
    out += "<a href=\"dashboard?namespace=" + esc(ns.name) + "\">" + esc(ns.name) + "</a>";
  }
  out += "</nav>";
  bool shown = false;
  for (const auto& ns : model.namespaces) {
    if (!only_namespace.empty() && ns.name != only_namespace) continue;
    shown = true;
    out += "<section class=\"ns\" id=\"ns-" + esc(ns.name) + "\"><h2>Namespace " + esc(ns.name) +
           " <small>(" + std::to_string(ns.scalers.size()) + " scalers)</small></h2>";
    totals_table(out, ns.totals);
    for (const auto& scaler : ns.scalers) scaler_html(out, scaler, now, window);
    out += "</section>";
  }
  if (!shown) {
    out += only_namespace.empty()
               ? "<p>No VerticalScaler yet.</p>"
               : "<p>No VerticalScaler in namespace " + esc(only_namespace) + ".</p>";
  }
  out +=
      "<p><small>Requested and recommended are per pod (one replica of each workload); "
      "savings below zero mean under-provisioned. Charts: the recommended target over the "
      "last " +
      std::to_string(window / 3600) + " h as this replica saw it.</small></p></main></body></html>";
  return out;
}

json render_json(const Model& model, const std::string& only_namespace) {
  json namespaces = json::array();
  for (const auto& ns : model.namespaces) {
    if (!only_namespace.empty() && ns.name != only_namespace) continue;
    json scalers = json::array();
    for (const auto& scaler : ns.scalers) {
      json containers = json::array();
      for (const auto& c : scaler.containers) {
        json history = json::array();
        for (const auto& p : c.history) {
          json point{{"time", p.time}};
          if (p.cpu) point["cpu"] = kube::Quantity::from_nanos(*p.cpu).to_string();
          if (p.memory) {
            point["memory"] =
                kube::Quantity::from_nanos(*p.memory, kube::QuantityFormat::kBinarySI).to_string();
          }
          history.push_back(std::move(point));
        }
        containers.push_back({{"name", c.name},
                              {"values", c.policy},
                              {"requests", resources_json(c.requests)},
                              {"limits", resources_json(c.limits)},
                              {"target", resources_json(c.target)},
                              {"lowerBound", resources_json(c.lower_bound)},
                              {"upperBound", resources_json(c.upper_bound)},
                              {"uncappedTarget", resources_json(c.uncapped_target)},
                              {"history", std::move(history)}});
      }
      json problems = json::array();
      for (const auto& p : scaler.problems) {
        problems.push_back({{"type", p.type},
                            {"status", p.status},
                            {"reason", p.reason},
                            {"message", p.message},
                            {"lastTransitionTime", p.last_transition_time}});
      }
      json item{{"name", scaler.name},
                {"namespace", scaler.ns},
                {"target", scaler.target},
                {"mode", scaler.mode},
                {"containers", std::move(containers)},
                {"conditions", std::move(problems)},
                {"totals", totals_json(scaler.totals)}};
      item["lastChange"] = scaler.last_change ? json{{"time", scaler.last_change->time},
                                                     {"cause", scaler.last_change->cause}}
                                              : json(nullptr);
      item["lastRecommendationUpdateTime"] = scaler.last_recommendation_update_time;
      item["deferral"] = scaler.deferral ? json{{"message", scaler.deferral->message},
                                                {"until", scaler.deferral->until}}
                                         : json(nullptr);
      scalers.push_back(std::move(item));
    }
    namespaces.push_back(
        {{"name", ns.name}, {"scalers", std::move(scalers)}, {"totals", totals_json(ns.totals)}});
  }
  return json{{"generatedAt", model.generated_at},
              {"scalerCount", model.scaler_count},
              {"totals", totals_json(model.totals)},
              {"namespaces", std::move(namespaces)}};
}

}  // namespace vscaler::dashboard
