#include "metrics/health_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"

namespace vscaler::metrics {
namespace {

using base::fail;

constexpr std::string_view kLogger = "metrics.health";
constexpr const char* kText = "text/plain; charset=utf-8";

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

void listen_socket_options(int socket) {
  int yes = 1;
  int no = 0;
  ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  ::setsockopt(socket, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);  // dual-stack on "::"
}

}  // namespace

class HealthServer::Impl {
 public:
  Impl(std::string address, Registry& counted_in)
      : address_(std::move(address)),
        errors_(
            counted_in.counter("vscaler_health_errors_total",
                               "Exceptions in the health and metrics server: a readiness check or "
                               "a handler that threw",
                               {"what"})) {
    // Probes and scrapes are a handful of small GETs: a small pool, one request per connection
    // (the kubelet's prober does not reuse connections anyway), and short timeouts. A refused
    // body therefore never becomes the next request.
    // httplib calls the factory from listen_after_bind() right after it marks itself running, so
    // the call is its "ready" signal: from then on stop() shuts the listener down (before it,
    // stop() would be a no-op and the join would hang). start() waits for it.
    server_.new_task_queue = [this] {
      {
        std::lock_guard lock(state_mutex_);
        running_ = true;
      }
      state_changed_.notify_all();
      return new httplib::ThreadPool(8);
    };
    server_.set_socket_options(listen_socket_options);
    server_.set_tcp_nodelay(true);
    server_.set_keep_alive_max_count(1);
    server_.set_keep_alive_timeout(2);
    server_.set_read_timeout(std::chrono::seconds(2));
    server_.set_write_timeout(std::chrono::seconds(5));
    server_.set_payload_max_length(0);
    server_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      // Only GET and HEAD, without a body: httplib would read a POST's body (without a limit if
      // chunked) before routing it.
      bool body =
          req.has_header("Transfer-Encoding") ||
          (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
      if ((req.method != "GET" && req.method != "HEAD") || body) {
        res.status = req.method == "GET" || req.method == "HEAD" ? 400 : 405;
        res.set_header("Allow", "GET, HEAD");
        res.set_header("Connection", "close");
        res.set_content(res.status == 405 ? "only GET and HEAD are served here\n"
                                          : "a GET request cannot carry a body\n",
                        kText);
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server_.set_exception_handler(
        [this](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
          errors_.with({"handler"}).inc();
          log::error(kLogger, "a handler threw",
                     {{"address", address_}, {"path", req.path}, {"error", describe(error)}});
          res.status = 500;
          res.set_content("internal error\n", kText);
        });
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", kText);
    });
    server_.Get("/readyz",
                [this](const httplib::Request& req, httplib::Response& res) { readyz(req, res); });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      const Registry* registry = registry_.load();
      if (registry == nullptr) {
        res.status = 404;
        res.set_content("404 page not found\n", kText);
        return;
      }
      res.set_content(registry->render(), std::string(kContentType).c_str());
    });
  }

  ~Impl() { stop(); }

  void add_readiness_check(std::string name, ReadinessCheck check) {
    std::lock_guard lock(checks_mutex_);
    checks_.emplace_back(std::move(name), std::move(check));
  }

  void expose_metrics(const Registry& registry) { registry_.store(&registry); }

  void add_page(const std::string& path, PageHandler handler) {
    server_.Get(
        path, [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
          QueryParams params(req.params.begin(), req.params.end());
          Page page = handler(params);
          res.status = page.status;
          res.set_header("Cache-Control", "no-store");
          res.set_header("X-Content-Type-Options", "nosniff");
          // The pages need nothing from elsewhere: a browser must not load anything for them.
          res.set_header("Content-Security-Policy",
                         "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
          res.set_content(page.body, page.content_type.c_str());
        });
  }

  base::Result<base::Unit> start() {
    std::lock_guard lock(mutex_);
    if (listener_.joinable()) return fail("the server for " + address_ + " was already started");
    auto address = parse_listen_address(address_);
    if (!address) return fail(std::move(address).error());
    std::string host = address->host.empty() ? "::" : address->host;
    int port = bind(host, address->port);
    if (port < 0 && address->host.empty()) {
      host = "0.0.0.0";  // a kernel without IPv6
      port = bind(host, address->port);
    }
    if (port < 0) return fail("cannot listen on " + address_ + ": " + std::strerror(errno));
    port_.store(port);
    {
      std::lock_guard state(state_mutex_);
      running_ = false;
      done_ = false;
    }
    listener_ = std::thread([this] {
      server_.listen_after_bind();
      {
        std::lock_guard state(state_mutex_);
        done_ = true;
      }
      state_changed_.notify_all();
    });
    {
      std::unique_lock state(state_mutex_);
      state_changed_.wait(state, [this] { return running_ || done_; });
    }
    log::info(kLogger, "listening",
              {{"address", address_},
               {"port", std::to_string(port)},
               {"metrics", registry_.load() != nullptr ? "true" : "false"}});
    return base::Unit{};
  }

  void stop() {
    std::lock_guard lock(mutex_);
    if (!listener_.joinable()) return;
    server_.stop();
    listener_.join();
  }

  int port() const { return port_.load(); }

 private:
  int bind(const std::string& host, int port) {
    if (port == 0) return server_.bind_to_any_port(host);
    return server_.bind_to_port(host, port) ? port : -1;
  }

  // Like the Kubernetes components: "ok" when ready; otherwise (or with ?verbose) one line per
  // check, [+] passed or [-] failed, so `kubectl describe pod` shows what is missing.
  void readyz(const httplib::Request& req, httplib::Response& res) {
    std::vector<std::pair<std::string, ReadinessCheck>> checks;
    {
      std::lock_guard lock(checks_mutex_);
      checks = checks_;
    }
    std::vector<std::pair<std::string, bool>> results;
    {
      results.reserve(checks.size());
      for (const auto& [name, check] : checks) {
        bool passed = false;
        try {
          passed = check();
        } catch (...) {
          // Not ready, and said so: a check that throws is a bug to find, not a state.
          errors_.with({"readiness_check"}).inc();
          log::warn(kLogger, "a readiness check threw; counted as not ready",
                    {{"check", name}, {"error", describe(std::current_exception())}});
        }
        results.emplace_back(name, passed);
      }
    }
    bool ready = true;
    for (const auto& result : results) ready = ready && result.second;
    res.status = ready ? 200 : 503;
    if (ready && !req.has_param("verbose")) {
      res.set_content("ok", kText);
      return;
    }
    std::string body;
    for (const auto& [name, passed] : results) {
      body += passed ? "[+]" + name + " ok\n" : "[-]" + name + " failed\n";
    }
    body += ready ? "readyz check passed\n" : "readyz check failed\n";
    res.set_content(body, kText);
  }

  std::string address_;
  std::mutex mutex_;  // start/stop
  std::mutex checks_mutex_;
  std::vector<std::pair<std::string, ReadinessCheck>> checks_;
  std::atomic<const Registry*> registry_{nullptr};
  CounterFamily& errors_;
  httplib::Server server_;
  std::thread listener_;
  std::mutex state_mutex_;  // running_, done_
  std::condition_variable state_changed_;
  bool running_ = false;  // the listener loop has started: stop() now ends it
  bool done_ = true;      // the listener thread has returned
  std::atomic<int> port_{0};
};

HealthServer::HealthServer(std::string address, Registry& registry)
    : impl_(std::make_unique<Impl>(std::move(address), registry)) {}

HealthServer::~HealthServer() = default;

void HealthServer::add_readiness_check(std::string name, ReadinessCheck check) {
  impl_->add_readiness_check(std::move(name), std::move(check));
}

void HealthServer::expose_metrics(const Registry& registry) {
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

int HealthServer::port() const {
  return impl_->port();
}

}  // namespace vscaler::metrics
