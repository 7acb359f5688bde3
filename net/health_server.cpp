#include "net/health_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/log.h"
#include "net/front_end.h"
#include "net/tls.h"

namespace vscaler::net {
namespace {

using base::fail;

constexpr std::string_view kHealthLogger = "net.health";

// What an exception says, for a log line (never a request body: handlers here read none).
std::string describe(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
  return "no exception";
}

http::Response text(int status, std::string body) {
  return http::Response{status, http::kText, std::move(body), {}, false, nullptr};
}

// The host of a Host header ("name:port", "[v6]:port", or either without a port).
std::string_view host_of(std::string_view header) {
  if (!header.empty() && header.front() == '[') {
    auto close = header.find(']');
    return close == std::string_view::npos ? header : header.substr(1, close - 1);
  }
  auto colon = header.find(':');
  return colon == std::string_view::npos ? header : header.substr(0, colon);
}

}  // namespace

bool loopback_host(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);  // "localhost." is absolute
  std::string lower(host);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  // Browsers resolve localhost and every *.localhost name to loopback themselves (RFC 6761).
  if (lower == "localhost" ||
      (lower.size() > 10 && lower.compare(lower.size() - 10, 10, ".localhost") == 0)) {
    return true;
  }
  in_addr v4{};
  if (::inet_pton(AF_INET, lower.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, lower.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;  // ::ffff:127.0.0.1
  }
  return false;
}

class HealthServer::Impl {
 public:
  Impl(std::string address, metrics::Registry& counted_in, std::string name)
      : address_(std::move(address)),
        name_(std::move(name)),
        counted_in_(counted_in),
        errors_(
            counted_in.counter("vscaler_health_errors_total",
                               "Exceptions in the health and metrics server: a readiness check or "
                               "a handler that threw",
                               {"what"})) {}

  ~Impl() { stop(); }

  void add_readiness_check(std::string name, ReadinessCheck check) {
    std::lock_guard lock(checks_mutex_);
    checks_.emplace_back(std::move(name), std::move(check));
  }

  void expose_metrics(const metrics::Registry& registry) { registry_.store(&registry); }

  void add_page(const std::string& path, PageHandler handler) {
    std::lock_guard lock(mutex_);
    pages_[path] = std::move(handler);
  }

  void guard(const std::string& path, Guard guard) {
    std::lock_guard lock(mutex_);
    guards_[path] = std::move(guard);
  }

  void serve_tls(CertWatcher& certs) {
    std::lock_guard lock(mutex_);
    certs_ = &certs;
  }

  void limit_held_bytes(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    budget_bytes_ = bytes;
  }

  base::Result<base::Unit> start() {
    std::lock_guard lock(mutex_);
    if (front_end_ != nullptr) return fail("the server for " + address_ + " was already started");
    auto address = metrics::parse_listen_address(address_);
    if (!address) return fail(std::move(address).error());
    loopback_only_ = loopback_host(address->host);
    FrontEndOptions options;
    options.name = name_;
    options.host = address->host;
    options.port = address->port;
    // Probes and scrapes are a handful of small GETs: one loop carries every connection, two
    // workers render /metrics and pages (milliseconds at 10,000 scalers) off the loop.
    options.event_loops = 1;
    options.workers = 2;
    // No bodies; what connections hold (a TLS port's ~50 KiB buffers each, slow heads) counts
    // within limit_held_bytes, when given.
    options.max_buffered_body_bytes = budget_bytes_;
    options.limits.max_body_bytes = 0;
    options.limits.max_header_bytes = 16 * 1024;
    // Plain HTTP has no handshake: this is how long a connection may stay silent at first.
    options.limits.handshake_timeout = std::chrono::seconds(5);
    options.limits.request_timeout = std::chrono::seconds(5);
    options.limits.write_timeout = std::chrono::seconds(10);
    options.limits.keep_alive_timeout = std::chrono::seconds(10);
    options.registry = &counted_in_;
    if (certs_ != nullptr && ctx_ == nullptr) {
      auto ctx = tls::make_server_context(*certs_, /*offer_http2=*/false);
      if (!ctx) return fail("cannot serve TLS on " + address_ + ": " + ctx.error());
      ctx_ = std::move(*ctx);
    }
    auto front_end = std::make_unique<FrontEnd>(
        ctx_.get(), std::move(options), [this](Request& request) { return serve(request); },
        // Refusals are counted by the front end (vscaler_<name>_rejected_total{reason}).
        [](const http::RequestHead&, int, Clock::time_point) {},
        [this](const Request& request) {
          // Readiness checks are atomic reads: answered on the loop thread (unless guarded: a
          // guard may wait for the API server).
          const auto& path = request.head.path;
          return (path == "/healthz" || path == "/readyz") && !guards_.contains(path);
        });
    auto port = front_end->start();
    if (!port) return fail("cannot listen on " + address_ + ": " + port.error());
    port_.store(*port);
    front_end_ = std::move(front_end);
    log::info(kHealthLogger, "listening",
              {{"address", address_},
               {"port", std::to_string(*port)},
               {"metrics", registry_.load() != nullptr ? "true" : "false"}});
    return base::Unit{};
  }

  void stop() {
    std::lock_guard lock(mutex_);
    if (front_end_ == nullptr) return;
    front_end_->stop(std::chrono::seconds(1));
    front_end_.reset();
  }

  int port() const { return port_.load(); }

 private:
  // On a worker (or the loop thread for /healthz and /readyz). Pages and guards are not changed
  // once started (added before start()), so reading them needs no lock.
  http::Response serve(Request& request) {
    const auto& head = request.head;
    if (head.method != "GET" && head.method != "HEAD") {
      auto response = text(405, "only GET and HEAD are served here\n");
      response.headers.emplace_back("Allow", "GET, HEAD");
      return response;
    }
    const std::string& path = head.path;
    if (auto guard = guards_.find(path); guard != guards_.end()) {
      if (auto refused = guard->second(head)) {
        http::Response response{
            refused->status, std::move(refused->content_type), std::move(refused->body), {}, false,
            nullptr};
        if (refused->status == 401) response.headers.emplace_back("WWW-Authenticate", "Bearer");
        return response;
      }
    }
    if (path == "/healthz") return text(200, "ok");
    if (path == "/readyz") return readyz(head.target);
    if (path == "/metrics") {
      const metrics::Registry* registry = registry_.load();
      if (registry == nullptr) return text(404, "404 page not found\n");
      return http::Response{
          200, std::string(metrics::kContentType), registry->render(), {}, false, nullptr};
    }
    auto page = pages_.find(path);
    if (page == pages_.end()) return text(404, "404 page not found\n");
    // Bound to loopback, the pages are for this machine's browser (or kubectl port-forward's):
    // a page of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) could
    // otherwise read them as its own origin. Its requests say its name in Host.
    if (loopback_only_ && !loopback_host(host_of(head.header("Host").value_or("")))) {
      return text(403, "served to localhost only (the Host header names another site)\n");
    }
    try {
      QueryParams params;
      for (auto& [name, value] : http::query_parameters(head.target)) {
        params.emplace(std::move(name), std::move(value));
      }
      Page answer = page->second(params);
      http::Response response{
          answer.status, std::move(answer.content_type), std::move(answer.body), {}, false,
          nullptr};
      response.headers.emplace_back("Cache-Control", "no-store");
      response.headers.emplace_back("X-Content-Type-Options", "nosniff");
      // The pages need nothing from elsewhere: a browser must not load anything for them.
      // Nor show them in a frame of another site's page.
      response.headers.emplace_back("Content-Security-Policy",
                                    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                                    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
      response.headers.emplace_back("X-Frame-Options", "DENY");
      return response;
    } catch (...) {
      errors_.with({"handler"}).inc();
      log::error(kHealthLogger, "a handler threw",
                 {{"address", address_},
                  {"path", http::printable(path)},
                  {"error", describe(std::current_exception())}});
      return text(500, "internal error\n");
    }
  }

  // Like the Kubernetes components: "ok" when ready; otherwise (or with ?verbose) one line per
  // check, [+] passed or [-] failed, so `kubectl describe pod` shows what is missing.
  http::Response readyz(std::string_view target) {
    std::vector<std::pair<std::string, ReadinessCheck>> checks;
    {
      std::lock_guard lock(checks_mutex_);
      checks = checks_;
    }
    std::vector<std::pair<std::string, bool>> results;
    results.reserve(checks.size());
    for (const auto& [name, check] : checks) {
      bool passed = false;
      try {
        passed = check();
      } catch (...) {
        // Not ready, and said so: a check that throws is a bug to find, not a state.
        errors_.with({"readiness_check"}).inc();
        log::warn(kHealthLogger, "a readiness check threw; counted as not ready",
                  {{"check", name}, {"error", describe(std::current_exception())}});
      }
      results.emplace_back(name, passed);
    }
    bool ready = true;
    for (const auto& result : results) ready = ready && result.second;
    if (ready && !http::query_parameter(target, "verbose")) return text(200, "ok");
    std::string body;
    for (const auto& [name, passed] : results) {
      body += passed ? "[+]" + name + " ok\n" : "[-]" + name + " failed\n";
    }
    body += ready ? "readyz check passed\n" : "readyz check failed\n";
    return text(ready ? 200 : 503, std::move(body));
  }

  const std::string address_;
  const std::string name_;
  metrics::Registry& counted_in_;
  metrics::CounterFamily& errors_;
  std::mutex mutex_;  // start/stop, add_page
  std::mutex checks_mutex_;
  std::vector<std::pair<std::string, ReadinessCheck>> checks_;
  std::unordered_map<std::string, PageHandler> pages_;
  bool loopback_only_ = false;  ///< bound to a loopback address (set by start(), before serving)
  std::unordered_map<std::string, Guard> guards_;
  CertWatcher* certs_ = nullptr;
  std::size_t budget_bytes_ = 0;  // limit_held_bytes
  tls::Context ctx_;              // outlives front_end_ (declared before it)
  std::atomic<const metrics::Registry*> registry_{nullptr};
  std::unique_ptr<FrontEnd> front_end_;
  std::atomic<int> port_{0};
};

HealthServer::HealthServer(std::string address, metrics::Registry& registry, std::string name)
    : impl_(std::make_unique<Impl>(std::move(address), registry, std::move(name))) {}

HealthServer::~HealthServer() = default;

void HealthServer::add_readiness_check(std::string name, ReadinessCheck check) {
  impl_->add_readiness_check(std::move(name), std::move(check));
}

void HealthServer::expose_metrics(const metrics::Registry& registry) {
  impl_->expose_metrics(registry);
}

void HealthServer::add_page(const std::string& path, PageHandler handler) {
  impl_->add_page(path, std::move(handler));
}

base::Result<base::Unit> HealthServer::start() {
  return impl_->start();
}

void HealthServer::stop() {
  impl_->stop();
}

void HealthServer::guard(const std::string& path, Guard guard) {
  impl_->guard(path, std::move(guard));
}

void HealthServer::serve_tls(CertWatcher& certs) {
  impl_->serve_tls(certs);
}

void HealthServer::limit_held_bytes(std::size_t bytes) {
  impl_->limit_held_bytes(bytes);
}

int HealthServer::port() const {
  return impl_->port();
}

}  // namespace vscaler::net
