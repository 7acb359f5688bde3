// Plain-HTTP endpoints for the kubelet, Prometheus and people: /healthz (the process runs),
// /readyz (the caller's readiness checks all pass: informer synced, certificate loaded), /metrics
// (the Prometheus text format of a metrics registry) and read-only pages (the dashboard). One
// instance per listen address: --health-addr, --metrics-addr and --dashboard-addr.
//
// Served by the project's non-blocking front end (net/front_end.h), as the webhook is: anyone in
// the cluster reaches these ports, and on a thread pool 8 connections sending a byte a second
// made the kubelet's /healthz probe time out (the liveness probe would restart both replicas).
// Here an idle or slow connection costs a descriptor; /healthz and /readyz are answered on the
// event loop, /metrics and pages on two workers.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "metrics/listen_address.h"
#include "metrics/registry.h"
#include "net/cert_watcher.h"
#include "net/http.h"

namespace vscaler::net {

/// A readiness condition; evaluated on every /readyz request, so it must be cheap and
/// thread-safe (an atomic flag read). An exception counts as not ready, and is logged and counted
/// (vscaler_health_errors_total{what="readiness_check"}).
using ReadinessCheck = std::function<bool()>;

/// What a page handler answers: a body of `content_type` with `status`.
struct Page {
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  int status = 200;
};

/// Query parameters of a GET (name -> value; a repeated name keeps every value).
using QueryParams = std::multimap<std::string, std::string>;

/// A read-only page served beside /metrics (the dashboard); called on the server's threads, so it
/// must be thread-safe. An exception becomes a 500 and is counted.
using PageHandler = std::function<Page(const QueryParams& params)>;

/// Decides whether a request may be served (--metrics-secure: a TokenReview and a
/// SubjectAccessReview): nullopt serves it, a Page (401, 403, 503) is the answer instead. Called
/// on a worker thread, so it may wait for the API server; must be thread-safe.
using Guard = std::function<std::optional<Page>(const http::RequestHead& head)>;

/// Serves /healthz, /readyz and, once expose_metrics() is called, /metrics over plain HTTP.
/// Only GET and HEAD are answered (405 otherwise); a request with a body is refused before the
/// body is read (413, or 411 when chunked).
class HealthServer {
 public:
  /// `address` as parse_listen_address reads it (checked by start()); `registry` counts the
  /// exceptions of checks and handlers (vscaler_health_errors_total) and the connections
  /// (vscaler_<name>_open_connections, ...: `name` says which port, "health", "metrics" or
  /// "dashboard").
  explicit HealthServer(std::string address,
                        metrics::Registry& registry = metrics::default_registry(),
                        std::string name = "health");
  /// Stops the server.
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  /// Adds a named check to /readyz (which answers 200 only when every check passes, 503 with the
  /// failing names otherwise; no checks means ready). Call before start().
  void add_readiness_check(std::string name, ReadinessCheck check);
  /// Serves `registry` at /metrics. `registry` must outlive the server. Call before start().
  void expose_metrics(const metrics::Registry& registry);
  /// Serves GET `path` with `handler` (keeps net/ unaware of what renders it). Call before
  /// start().
  void add_page(const std::string& path, PageHandler handler);
  /// Asks `guard` before serving `path` (/metrics under --metrics-secure). Call before start().
  void guard(const std::string& path, Guard guard);
  /// Serves HTTPS (TLS >= 1.2, HTTP/1.1) with the certificate `certs` holds, reloaded as it
  /// changes, instead of plain HTTP; `certs` must outlive the server. Call before start().
  void serve_tls(CertWatcher& certs);
  /// Bounds what this port's connections hold before any request is answered (a TLS port's
  /// ~50 KiB of OpenSSL buffers each, heads arriving slowly) to `bytes`: beyond it a newcomer
  /// closes the oldest connection never answered, or is refused, as on the webhook port. The
  /// port's own budget, not the webhook's: a flood here must not refuse the API server there.
  /// Without it (0) nothing is counted. Call before start().
  void limit_held_bytes(std::size_t bytes);

  /// Binds and serves on threads of its own; the error says why binding failed.
  base::Result<base::Unit> start();
  /// Stops serving and joins the threads; idempotent.
  void stop();
  /// The bound port (useful with port 0); 0 before start().
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// True for "localhost", "::1" and 127.0.0.0/8 (a host without port or brackets): where a server
/// bound there serves its pages only to requests whose Host names one.
bool loopback_host(std::string_view host);

}  // namespace vscaler::net
