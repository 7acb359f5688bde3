// The containers' resources of workloads' pod templates, listed: what `vscaler report` and the
// dashboard show a scaler in mode "Off" against (its status shows what would be applied, not
// what the template carries).
#pragma once

#include <chrono>
#include <string>

#include "api/resources.h"
#include "kube/client.h"

namespace vscaler::controller {

/// Adds to `out` the containers' resources of every workload of `kind` ("Deployment",
/// "StatefulSet", "DaemonSet") in namespace `ns`: one paged list, each item reduced as its page
/// arrives to its name and its containers' names and resources; each page's request is bounded
/// by `page_timeout` (zero: the client's request timeout). An unknown kind adds nothing. On an
/// error `out` may hold part of the list.
kube::Result<kube::Unit, kube::ApiError> list_template_resources(
    kube::Client& client, const std::string& ns, const std::string& kind,
    api::TemplateResources& out, std::chrono::milliseconds page_timeout = {});

}  // namespace vscaler::controller
