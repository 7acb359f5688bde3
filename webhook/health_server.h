// Plain-HTTP endpoints for the kubelet and Prometheus: /healthz (the process runs), /readyz (the
// caller's readiness checks all pass: informer synced, certificate loaded) and /metrics (the
// Prometheus text format of a metrics registry). One instance per listen address: --health-addr
// and --metrics-addr are two instances, or one serving everything when they are equal.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "metrics/registry.h"

namespace vscaler::webhook {

/// A listen address as Go writes it: ":8080" (every interface), "127.0.0.1:0" (a free port),
/// "[::1]:8081", "localhost:9090".
struct ListenAddress {
  /// Empty for every interface.
  std::string host;
  int port = 0;
};

/// Parses host:port; the error names the text and what is wrong.
kube::Result<ListenAddress> parse_listen_address(std::string_view text);

/// A readiness condition; evaluated on every /readyz request, so it must be cheap and
/// thread-safe (an atomic flag read). An exception counts as not ready.
using ReadinessCheck = std::function<bool()>;

/// Serves /healthz, /readyz and, once expose_metrics() is called, /metrics over plain HTTP.
/// Only GET and HEAD are answered; a request with a body is refused before the body is read.
class HealthServer {
 public:
  /// `address` as parse_listen_address reads it (checked by start()).
  explicit HealthServer(std::string address);
  /// Stops the server.
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  /// Adds a named check to /readyz (which answers 200 only when every check passes, 503 with the
  /// failing names otherwise; no checks means ready). Call before start().
  void add_readiness_check(std::string name, ReadinessCheck check);
  /// Serves `registry` at /metrics. `registry` must outlive the server. Call before start().
  void expose_metrics(const metrics::Registry& registry);

  /// Binds and serves on threads of its own; the error says why binding failed.
  kube::Result<kube::Unit> start();
  /// Stops serving and joins the threads; idempotent.
  void stop();
  /// The bound port (useful with port 0); 0 before start().
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vscaler::webhook
