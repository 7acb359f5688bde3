// render_json: the dashboard's JSON twin (/dashboard.json) of a Model.
#include <utility>

#include "dashboard/format.h"
#include "dashboard/render.h"

namespace vscaler::dashboard {
namespace {

using nlohmann::json;

// Nano-units to whole millicores / bytes, rounded away from zero.
long long millicores(kube::Int128 nanos) {
  return static_cast<long long>(nanos >= 0 ? (nanos + 999'999) / 1'000'000
                                           : -((-nanos + 999'999) / 1'000'000));
}
long long bytes(kube::Int128 nanos) {
  return static_cast<long long>(nanos >= 0 ? (nanos + 999'999'999) / 1'000'000'000
                                           : -((-nanos + 999'999'999) / 1'000'000'000));
}

json resources_json(const Resources& resources) {
  json out = json::object();
  if (resources.cpu) out["cpu"] = resources.cpu->to_string();
  if (resources.memory) out["memory"] = resources.memory->to_string();
  return out;
}

json totals_json(const Totals& totals) {
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

json render_json(const Model& model, const std::string& only_namespace) {
  json namespaces = json::array();
  for (const auto& ns : model.namespaces) {
    if (!only_namespace.empty() && ns.name != only_namespace) continue;
    json scalers = json::array();
    for (const auto& view : ns.scalers) {
      const ScalerView& scaler = *view;
      json containers = json::array();
      for (const auto& c : scaler.containers) {
        // [unix seconds, millicores, bytes] per point (null: no target for that resource).
        json history = json::array();
        for (const auto& p : c.history) {
          history.push_back(json::array({p.time, p.cpu ? json(millicores(*p.cpu)) : json(nullptr),
                                         p.memory ? json(bytes(*p.memory)) : json(nullptr)}));
        }
        const CopySuggestions copy = copy_suggestions(c);
        const bool known = c.template_known;
        json suggestions = copy.guaranteed.empty() ? json(nullptr)
                                                   : json{{"guaranteed", copy.guaranteed},
                                                          {"burstable", copy.burstable}};
        containers.push_back({{"name", c.name},
                              {"values", c.policy},
                              // null: the template of a scaler in Off not listed yet
                              {"requests", known ? resources_json(c.requests) : json(nullptr)},
                              {"limits", known ? resources_json(c.limits) : json(nullptr)},
                              {"templateKnown", c.template_known},
                              {"target", resources_json(c.target)},
                              {"lowerBound", resources_json(c.lower_bound)},
                              {"upperBound", resources_json(c.upper_bound)},
                              {"uncappedTarget", resources_json(c.uncapped_target)},
                              {"copy", std::move(suggestions)},
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
      item["startupBoost"] = scaler.boost ? json{{"boosted", scaler.boost->boosted},
                                                 {"ended", scaler.boost->ended},
                                                 {"stuck", scaler.boost->stuck},
                                                 {"message", scaler.boost->message}}
                                          : json(nullptr);
      scalers.push_back(std::move(item));
    }
    namespaces.push_back(
        {{"name", ns.name}, {"scalers", std::move(scalers)}, {"totals", totals_json(ns.totals)}});
  }
  return json{{"generatedAt", model.generated_at},
              {"historyColumns", json::array({"time", "cpuMillicores", "memoryBytes"})},
              {"scalerCount", model.scaler_count},
              {"totals", totals_json(model.totals)},
              {"namespaces", std::move(namespaces)}};
}

}  // namespace vscaler::dashboard
