// `vscaler report` (DESIGN.md "Reports"; also `kubectl vscaler report` through the kubectl-vscaler
// link): the VerticalScalers the current kubeconfig can read, one line per container — what its
// template requests beside the recommendation (target, bounds) and the difference — with totals,
// as a table (Robusta KRR's is the model), JSON, YAML or CSV. Reads the scalers (their status holds
// the recommendation and, but in mode "Off", what the template carries) and, for scalers in mode
// "Off" (whose status shows what would be applied), their workloads' templates: what RBAC lets
// the user read.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/resources.h"
#include "base/result.h"
#include "kube/quantity.h"

namespace vscaler::cmd {

/// One container of one scaler.
struct ReportRow {
  std::string ns;
  std::string scaler;
  std::string target;  ///< "Kind/name"
  std::string mode;    ///< spec.updateMode
  std::string container;
  std::optional<kube::Quantity> cpu_request;  ///< status.containers[].requests.cpu
  std::optional<kube::Quantity> memory_request;
  std::optional<kube::Quantity> cpu_target;  ///< status.recommendation target
  std::optional<kube::Quantity> memory_target;
  std::optional<kube::Quantity> cpu_lower;
  std::optional<kube::Quantity> memory_lower;
  std::optional<kube::Quantity> cpu_upper;
  std::optional<kube::Quantity> memory_upper;
};

/// The resources of workloads' pod templates (api::TemplateResources): "namespace/Kind/name" ->
/// container name -> resources as the template carries them ({"requests": {"cpu": "500m"}}).
using TemplateRequests = api::TemplateResources;

/// The rows of `scalers` (VerticalScaler objects as listed), ordered by namespace, scaler and
/// container; a container appears when the status names it in containers or in the
/// recommendation. The requests come from status.containers, but for a scaler in mode "Off"
/// whose workload `templates` holds: there the status shows what would be applied, not what
/// the template requests.
std::vector<ReportRow> report_rows(const std::vector<nlohmann::json>& scalers,
                                   const TemplateRequests* templates = nullptr);

/// `rows` rendered as `format` ("table", "json", "yaml", "csv"), with totals (the requests and
/// targets summed, per pod); the error names an unknown format.
kube::Result<std::string> render_report(const std::vector<ReportRow>& rows,
                                        const std::string& format);

/// Runs `vscaler report ARGS` (ARGS after "report"): prints the report to stdout and returns the
/// exit code (0 ok; 1 the cluster could not be read or holds no scaler there; 2 bad arguments),
/// errors on stderr naming the problem.
int run_report(const std::vector<std::string>& args);

/// The report's --help text.
extern const char* const kReportUsage;

}  // namespace vscaler::cmd
