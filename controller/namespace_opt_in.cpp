// Namespace opt-in: the plan (a pure function of what was read) and the pass that writes it.
#include "controller/namespace_opt_in.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "api/namespace_scalers.h"
#include "base/log.h"

namespace vscaler::controller {
namespace {

constexpr std::string_view kOptInLogger = "namespace-opt-in";
constexpr const char* kKinds[] = {"Deployment", "StatefulSet", "DaemonSet"};

using Workload = std::tuple<std::string, std::string, std::string>;  // ns, kind, name

}  // namespace

OptInPlan plan_opt_in(const std::vector<OptInNamespace>& labelled, bool labels_complete,
                      const std::vector<std::shared_ptr<const api::Scaler>>& scalers) {
  std::set<Workload> person_targets;
  std::map<std::pair<std::string, std::string>, const api::Scaler*> names;  // by (ns, name)
  for (const auto& scaler : scalers) {
    names.emplace(std::make_pair(scaler->ns, scaler->name), scaler.get());
    if (!scaler->made_for_namespace) {
      person_targets.emplace(scaler->ns, scaler->target.kind, scaler->target.name);
    }
  }
  std::unordered_map<std::string, const OptInNamespace*> by_name;
  for (const auto& ns : labelled) by_name.emplace(ns.name, &ns);

  OptInPlan plan;
  for (const auto& ns : labelled) {
    for (const auto& [kind, workload] : ns.workloads) {
      if (person_targets.count({ns.name, kind, workload}) != 0) continue;
      std::string name = api::made_scaler_name(kind, workload);
      auto holder = names.find({ns.name, name});
      if (holder == names.end()) {
        plan.creates.push_back({ns.name, kind, workload});
      } else if (!holder->second->made_for_namespace || holder->second->target.kind != kind ||
                 holder->second->target.name != workload) {
        // Not made for this workload: a person's scaler of that name targets another one.
        plan.names_held.push_back(
            {ns.name, kind, workload, std::move(name), holder->second->uid,
             holder->second->target.kind + "/" + holder->second->target.name});
      }  // else made already
    }
  }
  for (const auto& scaler : scalers) {
    if (!scaler->made_for_namespace) continue;
    const auto& target = scaler->target;
    auto remove = [&](std::string reason) {
      plan.deletes.push_back({scaler->ns, scaler->name, scaler->uid, std::move(reason)});
    };
    auto ns = by_name.find(scaler->ns);
    if (ns == by_name.end()) {
      if (labels_complete) {
        remove("its namespace is no longer labelled " + std::string(api::kRecommendLabel) +
               "=true");
      }
    } else if (person_targets.count({scaler->ns, target.kind, target.name}) != 0) {
      remove("a VerticalScaler written by a person targets " + target.kind + "/" + target.name);
    } else if (ns->second->complete) {
      bool present = false;
      for (const auto& [kind, workload] : ns->second->workloads) {
        present = present || (kind == target.kind && workload == target.name);
      }
      if (!present) remove(target.kind + "/" + target.name + " is gone");
    }
  }
  return plan;
}

void NamespaceOptIn::report_names_held(const std::vector<OptInPlan::NameHeld>& held,
                                       bool forget_others) {
  std::set<std::string> still = forget_others ? std::set<std::string>{} : warned_;
  for (const auto& entry : held) {
    std::string key = entry.ns + "/" + entry.name + " " + entry.holder_uid;
    if (!warned_.count(key)) {
      log::warn(kOptInLogger,
                "a VerticalScaler holds the name the namespace's would get; the workload has "
                "none until it is renamed",
                {{"namespace", entry.ns},
                 {"name", entry.name},
                 {"workload", entry.kind + "/" + entry.workload},
                 {"holder_target", entry.holder_target},
                 {"holder_uid", entry.holder_uid}});
    }
    still.insert(std::move(key));
  }
  warned_ = std::move(still);
}

bool NamespaceOptIn::may_write(OptInStats& stats) const {
  if (!still_leading_ || still_leading_()) return true;
  stats.lost_leadership = true;
  log::info(kOptInLogger, "no longer leading; the rest of the pass is left to the new leader");
  return false;
}

OptInStats NamespaceOptIn::run_once() {
  OptInStats stats;
  auto names = api_.labelled_namespaces();
  if (!names.ok()) {
    ++stats.failed;
    log::warn(kOptInLogger, "listing the namespaces that ask for recommendations failed",
              {{"label", std::string(api::kRecommendLabel) + "=true"},
               {"error", names.error().to_string()}});
  }
  std::vector<OptInNamespace> labelled;
  if (names.ok()) {
    for (const auto& [name, terminating] : *names) {
      if (terminating) {
        // Nothing to make (a 403 each pass) nor to delete (the namespace takes its scalers).
        labelled.push_back(OptInNamespace{name, {}, false});
        continue;
      }
      OptInNamespace ns{name, {}, true};
      for (const char* kind : kKinds) {
        int calls = 0;
        auto list = lists_.list_workloads(name, kind, calls);
        if (!list.ok()) {
          ns.complete = false;
          ++stats.failed;
          log::warn(kOptInLogger, "listing workloads failed; nothing deleted in the namespace",
                    {{"namespace", name}, {"kind", kind}, {"error", list.error().to_string()}});
          continue;
        }
        for (const auto& meta : *list) ns.workloads.emplace_back(kind, meta.name);
      }
      labelled.push_back(std::move(ns));
    }
  }
  stats.namespaces = labelled.size();
  const OptInPlan plan = plan_opt_in(labelled, names.ok(), store_.snapshot());
  stats.names_held = plan.names_held.size();
  // Forgotten only on a pass that read everything: a failed list proves no name free again.
  bool complete = names.ok();
  for (const auto& ns : labelled) complete = complete && ns.complete;
  report_names_held(plan.names_held, /*forget_others=*/complete);
  for (const auto& create : plan.creates) {
    if (!may_write(stats)) return stats;
    auto created = api_.create_scaler(api::made_scaler(create.ns, create.kind, create.workload));
    if (created.ok() || kube::is_already_exists(created.error())) {
      stats.created += created.ok() ? 1 : 0;
      if (created.ok()) {
        log::info(kOptInLogger, "made a VerticalScaler for a workload of a namespace that asks",
                  {{"namespace", create.ns},
                   {"name", api::made_scaler_name(create.kind, create.workload)},
                   {"target", create.kind + "/" + create.workload}});
      }
      continue;
    }
    ++stats.failed;
    log::warn(kOptInLogger, "creating a VerticalScaler failed; tried again next pass",
              {{"namespace", create.ns},
               {"target", create.kind + "/" + create.workload},
               {"error", created.error().to_string()}});
  }
  for (const auto& remove : plan.deletes) {
    if (!may_write(stats)) return stats;
    auto removed = api_.delete_scaler(remove.ns, remove.name, remove.uid);
    // Gone already, or replaced since (another uid: the precondition refused): nothing to do.
    if (removed.ok() || kube::is_not_found(removed.error()) || kube::is_conflict(removed.error())) {
      stats.deleted += removed.ok() ? 1 : 0;
      if (removed.ok()) {
        log::info(kOptInLogger, "deleted a VerticalScaler it had made",
                  {{"namespace", remove.ns}, {"name", remove.name}, {"reason", remove.reason}});
      }
      continue;
    }
    ++stats.failed;
    log::warn(
        kOptInLogger, "deleting a VerticalScaler it had made failed; tried again next pass",
        {{"namespace", remove.ns}, {"name", remove.name}, {"error", removed.error().to_string()}});
  }
  return stats;
}

}  // namespace vscaler::controller
