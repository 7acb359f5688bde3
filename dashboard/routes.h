// serve: puts the dashboard's pages on a metrics server and starts its sampler.
#pragma once

#include "dashboard/dashboard.h"
#include "net/health_server.h"

namespace vscaler::dashboard {

/// Registers GET /dashboard (HTML; ?namespace=NAME for one namespace) and /dashboard.json on
/// `server` (before its start()) and starts `board`'s sampler. `board` must outlive `server`.
void serve(net::HealthServer& server, Dashboard& board);

}  // namespace vscaler::dashboard
