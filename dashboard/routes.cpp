// serve: the dashboard's two routes on the metrics server.
#include "dashboard/routes.h"

#include <string>

namespace vscaler::dashboard {
namespace {

std::string namespace_param(const net::QueryParams& params) {
  auto it = params.find("namespace");
  return it == params.end() ? std::string() : it->second;
}

}  // namespace

void serve(net::HealthServer& server, Dashboard& board) {
  server.add_page("/dashboard", [&board](const net::QueryParams& params) {
    return net::Page{"text/html; charset=utf-8", board.html(namespace_param(params)), 200};
  });
  server.add_page("/dashboard.json", [&board](const net::QueryParams& params) {
    return net::Page{"application/json", board.json(namespace_param(params)), 200};
  });
  board.start();
}

}  // namespace vscaler::dashboard
