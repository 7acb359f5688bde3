#include "webhook/health_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"

namespace vscaler::webhook {
namespace {

using kube::fail;

constexpr std::string_view kLogger = "webhook.health";
constexpr const char* kText = "text/plain; charset=utf-8";

void listen_socket_options(int socket) {
  int yes = 1;
  int no = 0;
  ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  ::setsockopt(socket, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);  // dual-stack on "::"
}

}  // namespace

kube::Result<ListenAddress> parse_listen_address(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return fail("listen address \"" + std::string(text) + "\": " + why);
  };
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("expected host:port, e.g. :8080");
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']') || host.size() < 3) return bad("unbalanced [ ] around an IPv6 host");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 host must be written in brackets, e.g. [::1]:8080");
  }
  if (port.empty() || port.size() > 5) return bad("the port must be a number from 0 to 65535");
  int value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad("the port must be a number from 0 to 65535");
    value = value * 10 + (c - '0');
  }
  if (value > 65535) return bad("the port must be a number from 0 to 65535");
  return ListenAddress{std::string(host), value};
}

class HealthServer::Impl {
 public:
  explicit Impl(std::string address) : address_(std::move(address)) {
    // Probes and scrapes are a handful of small GETs: a small pool, one request per connection
    // (the kubelet's prober does not reuse connections anyway), and short timeouts. A refused
    // body therefore never becomes the next request.
    server_.new_task_queue = [] { return new httplib::ThreadPool(8); };
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
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          res.status = 500;
          res.set_content("internal error\n", kText);
        });
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", kText);
    });
    server_.Get("/readyz",
                [this](const httplib::Request& req, httplib::Response& res) { readyz(req, res); });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      const metrics::Registry* registry = registry_.load();
      if (registry == nullptr) {
        res.status = 404;
        res.set_content("404 page not found\n", kText);
        return;
      }
      res.set_content(registry->render(), std::string(metrics::kContentType).c_str());
    });
  }

  ~Impl() { stop(); }

  void add_readiness_check(std::string name, ReadinessCheck check) {
    std::lock_guard lock(checks_mutex_);
    checks_.emplace_back(std::move(name), std::move(check));
  }

  void expose_metrics(const metrics::Registry& registry) { registry_.store(&registry); }

  kube::Result<kube::Unit> start() {
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
    done_.store(false);
    listener_ = std::thread([this] {
      server_.listen_after_bind();
      done_.store(true);
    });
    while (!server_.is_running() && !done_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    log::info(kLogger, "listening",
              {{"address", address_},
               {"port", std::to_string(port)},
               {"metrics", registry_.load() != nullptr ? "true" : "false"}});
    return kube::Unit{};
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
          passed = false;
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
  std::atomic<const metrics::Registry*> registry_{nullptr};
  httplib::Server server_;
  std::thread listener_;
  std::atomic<bool> done_{true};
  std::atomic<int> port_{0};
};

HealthServer::HealthServer(std::string address)
    : impl_(std::make_unique<Impl>(std::move(address))) {}

HealthServer::~HealthServer() = default;

void HealthServer::add_readiness_check(std::string name, ReadinessCheck check) {
  impl_->add_readiness_check(std::move(name), std::move(check));
}

void HealthServer::expose_metrics(const metrics::Registry& registry) {
  impl_->expose_metrics(registry);
}

kube::Result<kube::Unit> HealthServer::start() {
  return impl_->start();
}

void HealthServer::stop() {
  impl_->stop();
}

int HealthServer::port() const {
  return impl_->port();
}

}  // namespace vscaler::webhook
