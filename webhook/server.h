// The TLS admission server: the port the API server calls on every workload write of the
// cluster. It owns the transport (webhook/front_end.h: an epoll loop carrying every connection
// without blocking, TLS >= 1.2, keep-alive, caps and deadlines against hostile or slow clients,
// a bounded worker pool, quick handlers' small reviews answered on the loop), the AdmissionReview
// codec and the webhook metrics; handlers only turn a parsed AdmissionRequest into an
// AdmissionResponse.
//
// Hostile input it withstands, each answered without disturbing other connections:
//  - bodies over max_body_bytes: 413 before the body is read (also with Expect: 100-continue);
//  - chunked or length-less bodies (CVE-2025-46728): 411 before the body is read;
//  - malformed JSON, nesting too deep, not an AdmissionReview: 400 with a message;
//  - slow clients (a byte a second, a stalled handshake): cut off by a per-request deadline;
//  - many idle or slow connections: each costs a file descriptor, never a thread; capped in
//    total and per client address;
//  - plain HTTP on the TLS port, TLS 1.0/1.1: the handshake fails;
//  - unknown paths: 404, other methods on a webhook path: 405.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "metrics/registry.h"
#include "net/cert_watcher.h"
#include "net/front_end.h"
#include "webhook/admission.h"

namespace vscaler::webhook {

/// A webhook's business logic: called on a worker thread (or, for a quick handler, on an event
/// loop thread) with the parsed request; must not block on I/O (the API server waits, with
/// timeoutSeconds of about 2). An exception becomes a 500.
using Handler = std::function<AdmissionResponse(const AdmissionRequest&)>;

/// Per-path options.
struct HandlerOptions {
  /// Keep only these parts of object/oldObject (see Projection): parsing a 22 KB Deployment
  /// review costs about 15 us with a projection of metadata and container resources, about
  /// 75 us whole. Unset keeps the whole objects.
  std::optional<Projection> projection;
  /// The handler is quick and never blocks: no I/O, no lock held long (the workload hook's
  /// in-memory path). Its reviews of up to AdmissionServerOptions::max_quick_body_bytes are then
  /// parsed and answered on the event loop thread that read them, not handed to a worker and
  /// back. Leave it false for a handler that calls the API server (the VerticalScaler hook).
  bool quick = false;
};

/// Transport settings. The defaults suit a webhook called by a few API servers.
struct AdmissionServerOptions {
  /// Address to bind: "" for every interface (IPv6 and IPv4), or an address ("127.0.0.1").
  std::string host;
  /// --webhook-port; 0 picks a free port (see AdmissionServer::port()).
  int port = 9443;
  /// Threads running handlers. Connections do not hold them (the event loop carries idle and
  /// slow ones); handlers do no I/O but the VerticalScaler hook's bounded GET.
  std::size_t workers = 16;
  /// Event loop threads carrying the connections (TLS handshakes, reading, writing); 0 picks
  /// max(4, cores), so that a burst of new connections' handshakes runs in parallel.
  std::size_t event_loops = 0;
  /// Open connections at most (also bounded by RLIMIT_NOFILE, which start() raises to its
  /// hard limit). Beyond it new connections are closed at once (counted).
  std::size_t max_connections = 16384;
  /// Open connections from one client address at most: one client cannot take every
  /// descriptor the API servers' connections need.
  std::size_t max_connections_per_address = 4096;
  /// HTTP/1.1 requests per connection before the server closes it, so that a client's
  /// connections spread again over replicas added since (HTTP/2 connections have no cap). Each
  /// new connection costs a TLS handshake, about 2 ms of the client's and the server's time on
  /// one core here, which delays the requests due meanwhile: 1,000 (nginx's default) meant a
  /// handshake every 0.5 s at 2,000 reviews/s on one connection and 4-5 requests over 1 ms
  /// each time, most of the p99 of bench/sections/webhook.sh; 10,000 makes it one in 5 s.
  std::size_t keep_alive_max_requests = 10000;
  /// How long an idle keep-alive connection is kept.
  std::chrono::seconds keep_alive_timeout{30};
  /// How long a keep-alive connection waits for its next request before it frees its TLS and
  /// request buffers (about 80 KiB after a 20 KB review): a connection carrying a steady stream
  /// of reviews keeps them, an idle one holds a few KiB.
  std::chrono::milliseconds idle_buffer_release{500};
  /// Largest request body accepted (DESIGN: 7 MiB).
  std::size_t max_body_bytes = 7 * 1024 * 1024;
  /// Request body bytes all connections together may hold (--webhook-max-buffered-bytes); a body
  /// beyond it gets 503 before it is read: anyone reaching the port could otherwise open
  /// thousands of 7 MiB requests. 64 MiB keeps the process well inside its 256Mi limit (100
  /// concurrent 7 MiB POSTs: see test/e2e/hostile_clients_test.sh).
  std::size_t max_buffered_body_bytes = 64 * 1024 * 1024;
  /// Largest request head (request line and headers); the API server sends well under 1 KiB.
  std::size_t max_header_bytes = 64 * 1024;
  /// Deadline for a TLS handshake, and for a whole request from its first byte to its response.
  /// The API server gives up after the webhook's timeoutSeconds anyway.
  std::chrono::milliseconds request_timeout{10000};
  /// Deadline for writing a response (a client that does not read).
  std::chrono::milliseconds io_timeout{5000};
  /// --webhook-client-ca-file: require a client certificate signed by this CA (PEM), the API
  /// server's from its AdmissionConfiguration kubeConfigFile; empty: any client.
  std::string client_ca_file;
  /// Offer HTTP/2 in ALPN. The API server uses it for webhooks on a loopback address (one
  /// multiplexed connection instead of one per concurrent admission); others get HTTP/1.1.
  bool http2 = true;
  /// Largest review body a quick handler (HandlerOptions::quick) answers on the event loop
  /// thread; larger ones go to the workers (parsing costs about 1 us per KB, and the loop's
  /// other connections wait meanwhile). 0: every review goes to the workers.
  std::size_t max_quick_body_bytes = 64 * 1024;
  /// Nesting limit for reviews (see ParseOptions::max_depth).
  std::size_t max_depth = kDefaultMaxDepth;
  /// Where the webhook metrics are registered.
  metrics::Registry* registry = &metrics::default_registry();
};

/// The front end settings an AdmissionServer with `options` runs with: its budgets, deadlines and
/// the parser's padding (also for a bench's front end without handlers, so the two compare).
net::FrontEndOptions front_end_options(const AdmissionServerOptions& options);

/// Serves admission webhooks over TLS with the certificate a CertWatcher provides.
class AdmissionServer {
 public:
  /// `certs` must outlive the server; it is asked for the certificate on every handshake.
  explicit AdmissionServer(net::CertWatcher& certs, AdmissionServerOptions options = {});
  /// Stops the server (as stop()).
  ~AdmissionServer();
  AdmissionServer(const AdmissionServer&) = delete;
  AdmissionServer& operator=(const AdmissionServer&) = delete;

  /// Routes POST `path` (exact match; the query string, such as the API server's ?timeout=2s, is
  /// ignored) to `handler`. Call before start().
  void handle(const std::string& path, Handler handler, HandlerOptions options = {});

  /// Binds and serves on threads of its own; returns once connections are accepted. The error
  /// says why binding failed (port in use, bad address).
  kube::Result<kube::Unit> start();

  /// Stops accepting (the port is free at once), closes idle keep-alive connections, lets
  /// requests in progress finish for up to `grace`, then closes the rest and joins every
  /// thread. Safe to call more than once.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

  /// The bound port (useful with port 0); 0 before start().
  int port() const;
  /// True between a successful start() and stop().
  bool running() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vscaler::webhook
