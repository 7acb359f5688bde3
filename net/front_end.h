// The admission server's network front end: one epoll event loop that accepts connections (a
// cap in total and per client address), carries every connection's TLS handshake, request
// reading and response writing without blocking (see Connection), and hands complete requests
// to a bounded pool of worker threads (or serves a quick one itself, see FrontEnd::Quick).
//
// Why not cpp-httplib's server loop (which vscaler used before): it serves each connection on a
// thread for the connection's whole life, idle keep-alive time included, and Debian's build
// waits with select(), which fails for file descriptors >= 1024. Measured here: 63 idle TLS
// connections on its 64-thread pool made the next burst of Deployment writes wait 2-4 s (56
// fail-open calls, 36 of 40 Auto patches lost; FACTS.md), and 2,000 idle connections cannot be
// held at all. Here an idle or slow connection costs a descriptor and a few KiB, never a
// thread. cpp-httplib stays the HTTP client of the tests and benchmarks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "metrics/registry.h"
#include "net/connection.h"

namespace vscaler::net {

struct LoopShared;
class EventLoop;

/// Front end settings; AdmissionServerOptions fills them.
struct FrontEndOptions {
  /// What the server is, for its metrics (vscaler_<name>_open_connections, ...) and its log
  /// lines (logger "<name>.server"): "webhook", "health", "metrics", "dashboard".
  std::string name = "webhook";
  /// Address to bind: "" for every interface (IPv6 and IPv4), or an address ("127.0.0.1").
  std::string host;
  /// Port; 0 picks a free one.
  int port = 9443;
  /// Threads running handlers.
  std::size_t workers = 16;
  /// Event loop threads sharing the connections; 0: max(4, the CPUs the process may use,
  /// base::usable_cpus: its affinity and cgroup quota). A burst of new connections
  /// costs a TLS handshake each (the dominant cost), spread over the loops.
  std::size_t event_loops = 0;
  /// Open connections at most (also bounded by RLIMIT_NOFILE, raised to its hard limit).
  std::size_t max_connections = 16384;
  /// Open connections from one client address at most.
  std::size_t max_connections_per_address = 4096;
  /// Request body bytes all connections together may hold (see ConnectionEnv::buffered).
  std::size_t max_buffered_body_bytes = 64 * 1024 * 1024;
  /// Where those bytes are counted: null for this front end alone, or one counter that several
  /// front ends share so that the budget holds for the whole process (--webhook-max-buffered-
  /// bytes). Must outlive the front end.
  std::atomic<std::size_t>* buffered = nullptr;
  /// Per-connection budgets and deadlines.
  ConnectionLimits limits;
  /// Where the connection metrics are registered.
  metrics::Registry* registry = &metrics::default_registry();
};

/// Serves HTTP/1.1 (and HTTP/2 when ALPN offers it) over TLS, or plain HTTP/1.1 without a TLS
/// context, with `serve` on worker threads.
class FrontEnd {
 public:
  /// Runs on a worker thread (or, for a quick request, the loop thread) for each complete
  /// request; an exception becomes a 500 (logged without the body, and counted).
  using Serve = std::function<http::Response(Request& request)>;
  /// Runs on the loop thread for each request refused before `serve` (for metrics).
  using Refused =
      std::function<void(const http::RequestHead& head, int status, Clock::time_point start)>;
  /// Runs on the loop thread for each complete HTTP/1.1 request: true when `serve` answers it
  /// quickly and without blocking (no I/O, a small body), so the loop that read it serves it at
  /// once instead of handing it to a worker and back (two thread wake-ups: a 20 KB review's round
  /// trip on one connection fell from ~135 to ~95 us on 2 cores). The loop's other connections
  /// wait that long.
  using Quick = std::function<bool(const Request& request)>;

  /// `ctx` must outlive the front end; nullptr serves plain HTTP. Without `quick` every request
  /// goes to a worker.
  FrontEnd(SSL_CTX* ctx, FrontEndOptions options, Serve serve, Refused refused, Quick quick = {});
  /// Stops (as stop()).
  ~FrontEnd();
  FrontEnd(const FrontEnd&) = delete;
  FrontEnd& operator=(const FrontEnd&) = delete;

  /// Binds, starts the loop and the workers; the bound port, or why binding failed.
  base::Result<int> start();
  /// Stops accepting, closes idle connections, lets requests under way finish for up to
  /// `grace`, then closes the rest and joins every thread. Idempotent.
  void stop(std::chrono::milliseconds grace);

 private:
  std::unique_ptr<LoopShared> shared_;
  std::vector<std::unique_ptr<EventLoop>> loops_;
};

}  // namespace vscaler::net
