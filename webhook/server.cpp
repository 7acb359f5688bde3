#include "webhook/server.h"

#include <atomic>
#include <charconv>
#include <mutex>
#include <unordered_map>

#include "base/log.h"
#include "base/time.h"
#include "net/front_end.h"
#include "net/tls.h"

namespace vscaler::webhook {
namespace {

// The transport is net/'s; these are the names this file speaks in.
namespace http = net::http;
namespace tls = net::tls;
using net::Clock;
using net::FrontEnd;
using net::FrontEndOptions;
using net::Request;

constexpr std::string_view kServerLogger = "webhook.server";

http::Response text(int status, std::string body) {
  return http::Response{status, http::kText, std::move(body), {}, false, nullptr};
}

http::Response not_found() {
  return text(404, "404 page not found\n");
}

http::Response method_not_allowed() {
  auto response = text(405, "only POST is served here\n");
  response.headers.emplace_back("Allow", "POST");
  return response;
}

}  // namespace

net::FrontEndOptions front_end_options(const AdmissionServerOptions& options) {
  FrontEndOptions out;
  out.host = options.host;
  out.port = options.port;
  out.workers = options.workers;
  out.event_loops = options.event_loops;
  out.max_connections = options.max_connections;
  out.max_connections_per_address = options.max_connections_per_address;
  out.max_buffered_body_bytes = options.max_buffered_body_bytes;
  out.registry = options.registry;
  auto& limits = out.limits;
  limits.handshake_timeout = options.request_timeout;
  limits.request_timeout = options.request_timeout;
  limits.write_timeout = options.io_timeout;
  limits.keep_alive_timeout = options.keep_alive_timeout;
  limits.idle_buffer_release = options.idle_buffer_release;
  limits.linger_timeout = std::min(options.request_timeout, std::chrono::milliseconds(2000));
  limits.max_header_bytes = options.max_header_bytes;
  limits.max_body_bytes = options.max_body_bytes;
  limits.linger_bytes = 2 * (options.max_body_bytes + options.max_header_bytes);
  limits.keep_alive_max_requests = std::max<std::size_t>(1, options.keep_alive_max_requests);
  limits.body_padding = kParsePadding;
  // The body, its parse and what the handler builds from it (see ConnectionLimits).
  limits.body_memory_factor = 6;
  return out;
}

class AdmissionServer::Impl {
  // A registered webhook path with its handler and its metric children, resolved once.
  struct Route {
    std::string path;
    Handler handler;
    std::optional<Projection> projection;
    bool quick = false;
    metrics::Histogram* latency = nullptr;
    metrics::Gauge* in_flight = nullptr;
  };

 public:
  Impl(net::CertWatcher& certs, AdmissionServerOptions options)
      : certs_(certs),
        options_(std::move(options)),
        requests_(options_.registry->counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.", {"webhook", "code"})),
        latency_(options_.registry->histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests.", {"webhook"})),
        in_flight_(options_.registry->gauge("controller_runtime_webhook_requests_in_flight",
                                            "Current number of admission requests being served.",
                                            {"webhook"})),
        errors_(options_.registry->counter(
            "vscaler_webhook_internal_errors_total",
            "Exceptions and failed system calls in the admission server, by where.", {"where"})) {}

  ~Impl() { stop(std::chrono::seconds(5)); }

  void handle(const std::string& path, Handler handler, HandlerOptions options) {
    std::lock_guard lock(lifecycle_);
    if (started_) throw std::logic_error("AdmissionServer::handle after start: " + path);
    Route route;
    route.path = path;
    route.handler = std::move(handler);
    route.projection = std::move(options.projection);
    route.quick = options.quick;
    route.latency = &latency_.with({path});
    route.in_flight = &in_flight_.with({path});
    routes_.insert_or_assign(path, std::move(route));
  }

  kube::Result<kube::Unit> start() {
    std::lock_guard lock(lifecycle_);
    if (started_) return kube::fail("the admission server was already started");
    auto ctx = tls::make_server_context(certs_, options_.http2, options_.client_ca_file);
    if (!ctx) return kube::fail("cannot set up the TLS context: " + ctx.error());
    ctx_ = std::move(*ctx);
    front_end_ = std::make_unique<FrontEnd>(
        ctx_.get(), front_end_options(options_),
        [this](Request& request) { return serve(request); },
        [this](const http::RequestHead& head, int status, Clock::time_point start) {
          record(head.path, status, start);
        },
        [this](const Request& request) { return quick(request); });
    auto port = front_end_->start();
    if (!port) {
      front_end_.reset();
      return kube::fail(port.error());
    }
    started_ = true;
    port_.store(*port);
    running_.store(true);
    log::info(kServerLogger, "admission server listening",
              {{"address", options_.host.empty() ? "::" : options_.host},
               {"port", std::to_string(*port)},
               {"workers", std::to_string(options_.workers)}});
    return kube::Unit{};
  }

  void stop(std::chrono::milliseconds grace) {
    std::lock_guard lock(lifecycle_);
    if (!front_end_) return;
    front_end_->stop(grace);
    front_end_.reset();
    running_.store(false);
    log::info(kServerLogger, "admission server stopped", {{"port", std::to_string(port_.load())}});
  }

  int port() const { return port_.load(); }
  bool running() const { return running_.load(); }

 private:
  const Route* route_for(const std::string& path) const {
    auto found = routes_.find(path);
    return found == routes_.end() ? nullptr : &found->second;
  }

  // On the loop thread: whether serve() may answer `request` there (FrontEnd::Quick). Unknown
  // paths and other methods are answered without a handler.
  bool quick(const Request& request) const {
    const Route* route = route_for(request.head.path);
    if (route == nullptr || request.head.method != "POST") return true;
    return route->quick && request.body.size() <= options_.max_quick_body_bytes;
  }

  // On a worker thread, or for a quick request the loop thread: the request's body has been
  // read (and is within limits).
  http::Response serve(Request& request) {
    const Route* route = route_for(request.head.path);
    if (route == nullptr) return not_found();
    http::Response response =
        request.head.method == "POST" ? serve_review(*route, request) : method_not_allowed();
    record(route->path, response.status, request.start);
    return response;
  }

  // A parsed review and its answer, kept until the response is written.
  struct Served {
    AdmissionRequest request;
    AdmissionResponse answer;
  };

  http::Response serve_review(const Route& route, const Request& request) {
    route.in_flight->inc();
    struct Done {
      metrics::Gauge* gauge;
      ~Done() { gauge->dec(); }
    } done{route.in_flight};

    if (auto content_type = request.head.header("Content-Type")) {
      auto type = http::media_type(*content_type);
      if (!http::iequals(type, "application/json")) {
        return text(400, "bad request: Content-Type " + http::printable(type) +
                             ", expected application/json\n");
      }
    }
    ParseOptions parse_options;
    parse_options.max_depth = options_.max_depth;
    parse_options.projection = route.projection ? &*route.projection : nullptr;
    parse_options.readable_padding = request.body.capacity() - request.body.size();
    auto result = parse_review(request.body, parse_options);
    if (!result) {
      // The message quotes nothing from the body beyond short identifiers: safe to log.
      log::debug(kServerLogger, "bad AdmissionReview",
                 {{"webhook", route.path}, {"error", result.error()}});
      return text(400, "bad AdmissionReview: " + result.error() + "\n");
    }
    // The review and the answer are freed after the response is written (their trees take
    // microseconds to free, which the API server need not wait for).
    auto served = std::make_shared<Served>(Served{std::move(*result), {}});
    AdmissionRequest& parsed = served->request;
    // The API server says how long it waits (?timeout=, from timeoutSeconds): handlers bound
    // their own calls by it. Counted from the request's first byte, which is when it began.
    if (auto timeout = http::query_parameter(request.head.target, "timeout")) {
      if (auto wait = base::parse_duration(*timeout); wait.ok() && wait->count() > 0) {
        parsed.deadline = request.start + *wait;
      }
    }
    AdmissionResponse& answer = served->answer;
    try {
      answer = route.handler(parsed);
    } catch (const std::exception& error) {
      return handler_failed(route, error.what());
    } catch (...) {
      return handler_failed(route, "unknown exception");
    }
    sanitize(answer, parsed, route);
    http::Response response{
        200, "application/json", encode_review(parsed.uid, answer), {}, false, nullptr};
    response.free_after_write = std::move(served);
    return response;
  }

  // The message never reaches the client (it may name internals); the log gets it without any
  // of the review (bodies can carry secrets).
  http::Response handler_failed(const Route& route, std::string_view what) {
    log::error(kServerLogger, "admission handler failed",
               {{"webhook", route.path}, {"error", http::printable(what)}});
    errors_.with({"handler"}).inc();
    return text(500, "internal error\n");
  }

  // A patch the API server cannot apply fails the user's write whatever the failurePolicy: drop
  // patches that are malformed or make no sense for the request, and say so.
  static void sanitize(AdmissionResponse& response, const AdmissionRequest& request,
                       const Route& route) {
    if (response.patch.is_null()) return;
    bool mutable_operation =
        request.operation == Operation::kCreate || request.operation == Operation::kUpdate;
    if (!response.allowed || !mutable_operation) {
      log::error(
          kServerLogger, "handler returned a patch for a denied or non-mutating request; dropped",
          {{"webhook", route.path}, {"operation", std::string(to_string(request.operation))}});
      response.patch = nullptr;
      return;
    }
    if (auto valid = validate_json_patch(response.patch); !valid) {
      log::error(kServerLogger, "handler returned an invalid JSON patch; dropped",
                 {{"webhook", route.path}, {"error", valid.error()}});
      response.patch = nullptr;
      response.warnings.push_back("vscaler: internal error, the patch was not applied");
    }
  }

  // Counts a request to a webhook path (other paths are not counted: their names come from
  // the client and would make a metric label of unbounded cardinality).
  void record(const std::string& path, int status, Clock::time_point start) {
    const Route* route = route_for(path);
    if (route == nullptr) return;
    std::chrono::duration<double> seconds = Clock::now() - start;
    route->latency->observe(seconds.count());
    char digits[12];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, status);
    requests_.with({route->path, std::string_view(digits, static_cast<std::size_t>(end - digits))})
        .inc();
  }

  net::CertWatcher& certs_;
  AdmissionServerOptions options_;
  metrics::CounterFamily& requests_;
  metrics::HistogramFamily& latency_;
  metrics::GaugeFamily& in_flight_;
  metrics::CounterFamily& errors_;
  // Written before start() only, then read concurrently without a lock.
  std::unordered_map<std::string, Route> routes_;

  std::mutex lifecycle_;
  bool started_ = false;
  tls::Context ctx_;
  std::unique_ptr<FrontEnd> front_end_;  // after ctx_: destroyed first
  std::atomic<int> port_{0};
  std::atomic<bool> running_{false};
};

AdmissionServer::AdmissionServer(net::CertWatcher& certs, AdmissionServerOptions options)
    : impl_(std::make_unique<Impl>(certs, std::move(options))) {}

AdmissionServer::~AdmissionServer() = default;

void AdmissionServer::handle(const std::string& path, Handler handler, HandlerOptions options) {
  impl_->handle(path, std::move(handler), std::move(options));
}

kube::Result<kube::Unit> AdmissionServer::start() {
  return impl_->start();
}

void AdmissionServer::stop(std::chrono::milliseconds grace) {
  impl_->stop(grace);
}

int AdmissionServer::port() const {
  return impl_->port();
}

bool AdmissionServer::running() const {
  return impl_->running();
}

}  // namespace vscaler::webhook
