// serve: the dashboard's two routes on the metrics server.
#include "dashboard/routes.h"

#include <string>

namespace vscaler::dashboard {
namespace {

std::string namespace_param(const metrics::QueryParams& params) {
  auto it = params.find("namespace");
  return it == params.end() ? std::string() : it->second;
}

}  // namespace

void serve(metrics::HealthServer& server, Dashboard& board) {
  server.add_page("/dashboard", [&board](const metrics::QueryParams& params) {
    return metrics::Page{"text/html; charset=utf-8", board.html(namespace_param(params)), 200};
  });
  server.add_page("/dashboard.json", [&board](const metrics::QueryParams& params) {
    return metrics::Page{"application/json", board.json(namespace_param(params)), 200};
  });
  board.start();
}

}  // namespace vscaler::dashboard
