#include "webhook/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/log.h"

namespace vscaler::webhook {
namespace {

constexpr std::string_view kLogger = "webhook.server";
using Clock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Text from the network made safe for a log line: printable ASCII, at most 128 characters.
std::string printable(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 128; ++i) {
    char c = text[i];
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

// Where a connection is in its life; the guard enforces a deadline on each phase but kIdle
// (httplib's keep-alive timeout covers idle connections).
enum Phase : int {
  kHandshake,  // TLS handshake under way
  kIdle,       // between requests
  kReading,    // a request's bytes have started to arrive; until its response is ready
  kClosing,    // a refused request left its body unread: close once the response is out
};

class ConnectionGuard;

// One TLS connection, created when its handshake starts (on the worker thread serving it) and
// freed with its SSL object. The atomics are shared with the guard's thread; the rest is only
// touched by the worker thread.
struct Connection {
  Connection(int socket, SSL* session, ConnectionGuard* owner)
      : fd(socket), ssl(session), guard(owner) {}

  const int fd;
  SSL* const ssl;
  ConnectionGuard* const guard;
  std::atomic<int> phase{kHandshake};
  std::atomic<std::int64_t> since{now_ns()};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<bool> shut{false};

  bool handshake_done = false;
  bool headers_accepted = false;  // pre_route let this request's body be read
  bool request_started = false;
  bool close_after_response = false;
  Clock::time_point request_start{};

  void enter(Phase next) {
    bytes.store(0, std::memory_order_relaxed);
    since.store(now_ns(), std::memory_order_relaxed);
    phase.store(next, std::memory_order_release);
  }
};

// The connection the current worker thread serves: httplib runs a connection's handshake,
// requests and teardown on one pool thread, and gives handlers no handle on the socket.
thread_local Connection* t_connection = nullptr;

struct GuardLimits {
  std::int64_t handshake_ns;
  std::int64_t request_ns;
  std::int64_t closing_ns;
  std::uint64_t handshake_bytes;
  std::uint64_t header_bytes;   // a request until its headers are parsed
  std::uint64_t request_bytes;  // a request whose headers were accepted (body included)
  std::int64_t linger_ns;       // how long a refused request's unread body is drained
  std::uint64_t linger_bytes;   // and how much of it
};

// Enforces what httplib cannot: a deadline on a whole handshake or request (its timeouts are per
// read, so a client sending a byte a second holds a worker forever) and a byte budget per
// request (a header line has no length limit in httplib). Cutting a connection is
// shutdown(2) of its socket: the worker blocked on it wakes up, fails its read and closes the
// connection itself, so the socket is never closed under httplib's feet.
class ConnectionGuard {
 public:
  ConnectionGuard(GuardLimits limits, metrics::Registry& registry)
      : limits_(limits),
        open_(registry
                  .gauge("vscaler_webhook_open_connections",
                         "TLS connections open on the admission server (each holds a worker).")
                  .get()),
        cut_(registry.counter("vscaler_webhook_rejected_total",
                              "Requests and connections refused before a handler ran, by reason.",
                              {"reason"})),
        handshake_errors_(registry
                              .counter("vscaler_webhook_tls_handshake_errors_total",
                                       "TLS handshakes that failed (plain HTTP, old TLS versions, "
                                       "no certificate, timeouts).")
                              .get()) {}

  ~ConnectionGuard() { stop(); }

  const GuardLimits& limits() const { return limits_; }

  void add(Connection* connection) {
    std::lock_guard lock(mutex_);
    connections_.insert(connection);
    open_.inc();
  }

  void remove(Connection* connection) {
    if (!connection->handshake_done) handshake_errors_.inc();
    std::lock_guard lock(mutex_);
    connections_.erase(connection);
    open_.dec();
  }

  // From the connection's own worker thread (its socket cannot be closed meanwhile).
  void cut_own(Connection* connection, std::string_view reason) {
    if (connection->shut.exchange(true)) return;
    if (!reason.empty()) cut_.with({reason}).inc();  // counted before the client can see it
    ::shutdown(connection->fd, SHUT_RDWR);
  }

  void start() {
    std::lock_guard lock(thread_mutex_);
    if (thread_.joinable()) return;
    stopping_ = false;
    draining_.store(false);
    thread_ = std::thread([this] { run(); });
  }

  void stop() {
    std::thread thread;
    {
      std::lock_guard lock(thread_mutex_);
      stopping_ = true;
      thread = std::move(thread_);
    }
    wake_.notify_all();
    if (thread.joinable()) thread.join();
  }

  // Stop mode: idle and handshaking connections are closed on the next scan; requests in
  // progress finish.
  void drain() {
    draining_.store(true);
    wake_.notify_all();
  }

  // Closes everything still open (the end of a stop's grace period).
  void cut_all() {
    std::lock_guard lock(mutex_);
    for (auto* connection : connections_) cut(connection, {});
  }

 private:
  // Called with mutex_ held: remove() (which runs before httplib closes the socket) cannot
  // complete meanwhile, so the descriptor is still this connection's.
  void cut(Connection* connection, std::string_view reason) {
    if (connection->shut.exchange(true)) return;
    if (!reason.empty()) cut_.with({reason}).inc();
    ::shutdown(connection->fd, SHUT_RDWR);
  }

  void scan() {
    std::int64_t now = now_ns();
    bool draining = draining_.load();
    std::lock_guard lock(mutex_);
    for (auto* connection : connections_) {
      int phase = connection->phase.load(std::memory_order_acquire);
      std::int64_t age = now - connection->since.load(std::memory_order_relaxed);
      switch (phase) {
        case kHandshake:
          if (draining) {
            cut(connection, {});
          } else if (age > limits_.handshake_ns) {
            cut(connection, "handshake_timeout");
          }
          break;
        case kReading:
          if (age > limits_.request_ns) cut(connection, "request_timeout");
          break;
        case kClosing:
          if (age > limits_.closing_ns) cut(connection, {});
          break;
        case kIdle:
          if (draining) cut(connection, {});
          break;
      }
    }
  }

  void run() {
    std::unique_lock lock(thread_mutex_);
    // A tenth of the shortest deadline, within [10 ms, 100 ms]: deadlines are met within 10%.
    auto period = std::chrono::nanoseconds(std::clamp<std::int64_t>(
        std::min(limits_.handshake_ns, limits_.request_ns) / 10, 10'000'000, 100'000'000));
    while (!stopping_) {
      wake_.wait_for(lock, period, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      scan();
      lock.lock();
    }
  }

  GuardLimits limits_;
  metrics::Gauge& open_;
  metrics::CounterFamily& cut_;
  metrics::Counter& handshake_errors_;

  std::mutex mutex_;
  std::unordered_set<Connection*> connections_;

  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> draining_{false};
  std::thread thread_;
};

// OpenSSL ex_data slots: the Connection of an SSL (freed with it) and the guard of a context.
void free_connection(void*, void* pointer, CRYPTO_EX_DATA*, int, long, void*) {
  auto* connection = static_cast<Connection*>(pointer);
  if (connection == nullptr) return;
  connection->guard->remove(connection);
  if (t_connection == connection) t_connection = nullptr;
  delete connection;
}

int ssl_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &free_connection);
  return index;
}

int ctx_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

Connection* connection_of(const SSL* ssl) {
  return static_cast<Connection*>(SSL_get_ex_data(ssl, ssl_index()));
}

void info_callback(const SSL* ssl, int where, int) {
  if (where & SSL_CB_HANDSHAKE_START) {
    if (connection_of(ssl) != nullptr) return;  // renegotiation is disabled; be safe anyway
    auto* guard =
        static_cast<ConnectionGuard*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ctx_index()));
    if (guard == nullptr || SSL_get_fd(ssl) < 0) return;
    // OpenSSL hands info callbacks a const SSL; attaching our state to it is what ex_data is for.
    SSL* mutable_ssl = const_cast<SSL*>(ssl);
    auto* connection = new Connection(SSL_get_fd(ssl), mutable_ssl, guard);
    guard->add(connection);
    if (SSL_set_ex_data(mutable_ssl, ssl_index(), connection) != 1) {
      guard->remove(connection);
      delete connection;
      return;
    }
    t_connection = connection;
  } else if (where & SSL_CB_HANDSHAKE_DONE) {
    auto* connection = connection_of(ssl);
    if (connection == nullptr || connection->handshake_done) return;
    connection->handshake_done = true;
    connection->enter(kIdle);
  }
}

// Called for every TLS record header read: the first record after a response starts a request
// (and its deadline); every record counts against the request's byte budget.
void message_callback(int write, int, int content_type, const void* buffer, std::size_t length,
                      SSL* ssl, void*) {
  if (write != 0 || content_type != SSL3_RT_HEADER || length < 5) return;
  auto* connection = connection_of(ssl);
  if (connection == nullptr) return;
  const auto* header = static_cast<const unsigned char*>(buffer);
  std::uint64_t record = static_cast<std::uint64_t>(header[3]) << 8 | header[4];
  int phase = connection->phase.load(std::memory_order_relaxed);
  if (phase == kIdle) {
    connection->enter(kReading);
    connection->headers_accepted = false;
    phase = kReading;
  }
  std::uint64_t total = connection->bytes.fetch_add(record, std::memory_order_relaxed) + record;
  const auto& limits = connection->guard->limits();
  if (phase == kHandshake && total > limits.handshake_bytes) {
    connection->guard->cut_own(connection, "handshake_too_large");
  } else if (phase == kReading) {
    bool headers = !connection->headers_accepted;
    if (total > (headers ? limits.header_bytes : limits.request_bytes)) {
      // Also stop OpenSSL from handing over what is already buffered: this record is discarded
      // and every later SSL_read returns 0, so httplib closes the connection.
      SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_RECEIVED_SHUTDOWN);
      connection->guard->cut_own(connection, headers ? "headers_too_large" : "request_too_large");
    }
  }
}

int alpn_callback(SSL*, const unsigned char** out, unsigned char* out_length,
                  const unsigned char* in, unsigned int in_length, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_length, kHttp11, sizeof kHttp11, in, in_length) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;  // e.g. a client offering only h2: carry on without ALPN
}

const char* reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    default:
      return "Error";
  }
}

// Answers a refused request and closes its connection without reading the refused body as
// requests, the way Go's and nginx's servers do ("lingering close"): write the response, send
// close_notify and FIN, then discard what the client still sends for a bounded time, so that a
// client busy writing its body reads the answer instead of a connection reset. Runs on the
// connection's worker thread; httplib's own attempt to write the response afterwards fails
// harmlessly and it closes the connection.
void linger_close(Connection& connection, int status, const std::string& message) {
  connection.enter(kClosing);
  std::string wire = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                     "\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: " +
                     std::to_string(message.size()) + "\r\n\r\n" + message;
  SSL* ssl = connection.ssl;
  // Every later SSL_read returns 0: the refused body is never handed to httplib.
  SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_RECEIVED_SHUTDOWN);
  if (SSL_write(ssl, wire.data(), static_cast<int>(wire.size())) > 0) (void)SSL_shutdown(ssl);
  ERR_clear_error();
  ::shutdown(connection.fd, SHUT_WR);
  const auto& limits = connection.guard->limits();
  auto deadline = now_ns() + limits.linger_ns;
  std::uint64_t drained = 0;
  char buffer[16384];
  while (drained < limits.linger_bytes) {
    auto left_ms = (deadline - now_ns()) / 1'000'000;
    if (left_ms <= 0) break;
    pollfd entry{connection.fd, POLLIN, 0};
    if (::poll(&entry, 1, static_cast<int>(left_ms)) <= 0) break;
    ssize_t n = ::recv(connection.fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    drained += static_cast<std::uint64_t>(n);
  }
  connection.guard->cut_own(&connection, {});
}

void listen_socket_options(int socket) {
  int yes = 1;
  int no = 0;
  // Not SO_REUSEPORT (httplib's default): a second process on the same port must fail to bind,
  // not silently receive half the API server's calls.
  ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  // Dual-stack when bound to "::" (fails harmlessly on an IPv4 socket).
  ::setsockopt(socket, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
}

// Strict Content-Length: digits only (no sign, no spaces, no second value).
std::optional<std::uint64_t> parse_length(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::string_view media_type(std::string_view content_type) {
  auto end = content_type.find(';');
  auto type = content_type.substr(0, end);
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  while (!type.empty() && type.front() == ' ') type.remove_prefix(1);
  return type;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] + 32) : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] + 32) : b[i];
    if (x != y) return false;
  }
  return true;
}

constexpr const char* kText = "text/plain; charset=utf-8";

// A registered webhook path with its handler and its metric children, resolved once.
struct Route {
  std::string path;
  Handler handler;
  std::optional<Projection> projection;
  metrics::Histogram* latency = nullptr;
  metrics::Gauge* in_flight = nullptr;
};

}  // namespace

class AdmissionServer::Impl {
 public:
  Impl(CertWatcher& certs, AdmissionServerOptions options)
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
        rejected_(options_.registry->counter(
            "vscaler_webhook_rejected_total",
            "Requests and connections refused before a handler ran, by reason.", {"reason"})),
        guard_(limits(options_), *options_.registry),
        server_([this](SSL_CTX& ctx) { return configure(ctx); }) {
    auto workers = std::max<std::size_t>(1, options_.workers);
    server_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
    server_.set_tcp_nodelay(true);
    server_.set_socket_options(listen_socket_options);
    server_.set_keep_alive_max_count(std::max<std::size_t>(1, options_.keep_alive_max_requests));
    server_.set_keep_alive_timeout(options_.keep_alive_timeout.count());
    server_.set_read_timeout(options_.io_timeout);
    server_.set_write_timeout(options_.io_timeout);
    server_.set_payload_max_length(options_.max_body_bytes);
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return pre_route(req, res);
    });
    server_.set_expect_100_continue_handler(
        [this](const httplib::Request& req, httplib::Response& res) {
          return expect_continue(req, res);
        });
    server_.set_post_routing_handler(
        [this](const httplib::Request& req, httplib::Response& res) { post_route(req, res); });
    server_.set_exception_handler([](const httplib::Request& req, httplib::Response& res,
                                     std::exception_ptr error) { on_exception(req, res, error); });
    // Every path and body-carrying method goes to serve(), which matches paths exactly (httplib
    // would treat a registered path as a regular expression).
    auto serve_any = [this](const httplib::Request& req, httplib::Response& res) {
      serve(req, res);
    };
    server_.Post(".*", serve_any);
    server_.Put(".*", serve_any);
    server_.Patch(".*", serve_any);
    server_.Delete(".*", serve_any);
  }

  ~Impl() { stop(std::chrono::seconds(5)); }

  void handle(const std::string& path, Handler handler, HandlerOptions options) {
    std::lock_guard lock(lifecycle_);
    if (started_) throw std::logic_error("AdmissionServer::handle after start: " + path);
    Route route;
    route.path = path;
    route.handler = std::move(handler);
    route.projection = std::move(options.projection);
    route.latency = &latency_.with({path});
    route.in_flight = &in_flight_.with({path});
    routes_.insert_or_assign(path, std::move(route));
  }

  kube::Result<kube::Unit> start() {
    std::lock_guard lock(lifecycle_);
    if (started_) return kube::fail("the admission server was already started");
    if (!server_.is_valid()) return kube::fail("cannot set up the TLS context");
    std::string host = options_.host.empty() ? "::" : options_.host;
    int port = bind(host);
    if (port < 0 && options_.host.empty()) {
      host = "0.0.0.0";  // a kernel without IPv6
      port = bind(host);
    }
    if (port < 0) {
      return kube::fail("cannot listen on " + host + ":" + std::to_string(options_.port) + ": " +
                        std::strerror(errno));
    }
    port_.store(port);
    started_ = true;
    guard_.start();
    listener_done_.store(false);
    listener_ = std::thread([this] {
      server_.listen_after_bind();
      listener_done_.store(true);
    });
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!server_.is_running() && !listener_done_.load() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!server_.is_running()) {
      listener_.join();
      guard_.stop();
      return kube::fail("the admission server did not start accepting connections");
    }
    running_.store(true);
    log::info(kLogger, "admission server listening",
              {{"address", host},
               {"port", std::to_string(port)},
               {"workers", std::to_string(options_.workers)}});
    return kube::Unit{};
  }

  void stop(std::chrono::milliseconds grace) {
    std::lock_guard lock(lifecycle_);
    if (!listener_.joinable()) return;
    server_.stop();
    guard_.drain();
    auto deadline = Clock::now() + grace;
    while (!listener_done_.load() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!listener_done_.load()) guard_.cut_all();
    // Connections still queued behind busy workers are served (and cut) before the pool ends.
    while (!listener_done_.load()) {
      guard_.cut_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    listener_.join();
    guard_.stop();
    running_.store(false);
    log::info(kLogger, "admission server stopped", {{"port", std::to_string(port_.load())}});
  }

  int port() const { return port_.load(); }
  bool running() const { return running_.load(); }

 private:
  static GuardLimits limits(const AdmissionServerOptions& options) {
    auto ns = [](std::chrono::milliseconds value) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(value).count();
    };
    GuardLimits limits{};
    limits.handshake_ns = ns(options.request_timeout);
    limits.request_ns = ns(options.request_timeout);
    limits.closing_ns = ns(std::chrono::milliseconds(250));
    // ClientHello, certificates and key exchange fit easily; OpenSSL limits messages itself.
    limits.handshake_bytes = 256 * 1024;
    // Headers: 64 KiB (the API server sends well under 1 KiB), plus the one 16 KiB record of
    // body httplib may have pulled in with them. A request: the largest body plus that. Both with
    // TLS record overhead (at most 256 bytes per 16 KiB record) on top.
    std::uint64_t headers = 64 * 1024 + 16 * 1024;
    std::uint64_t payload = options.max_body_bytes + headers;
    limits.header_bytes = headers + headers / 32 + 1024;
    limits.request_bytes = payload + payload / 32 + 1024;
    limits.linger_ns = std::min(ns(options.request_timeout), ns(std::chrono::milliseconds(2000)));
    limits.linger_bytes = 2 * limits.request_bytes;
    return limits;
  }

  int bind(const std::string& host) {
    if (options_.port == 0) return server_.bind_to_any_port(host);
    return server_.bind_to_port(host, options_.port) ? options_.port : -1;
  }

  bool configure(SSL_CTX& ctx) {
    // The callback constructor of httplib's SSLServer sets nothing: every policy is ours.
    if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
    SSL_CTX_set_options(
        &ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    // TLS 1.2: forward-secret AEAD suites only (what Go's TLS client prefers anyway).
    if (SSL_CTX_set_cipher_list(&ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1) return false;
    if (SSL_CTX_set_ex_data(&ctx, ctx_index(), &guard_) != 1) return false;
    (void)ssl_index();  // registers the per-connection slot before the first handshake
    SSL_CTX_set_info_callback(&ctx, info_callback);
    SSL_CTX_set_msg_callback(&ctx, message_callback);
    SSL_CTX_set_alpn_select_cb(&ctx, alpn_callback, nullptr);
    certs_.install(&ctx);
    return true;
  }

  const Route* route_for(const std::string& path) const {
    auto found = routes_.find(path);
    return found == routes_.end() ? nullptr : &found->second;
  }

  // Refuses a request before its body is read. The body, if any, stays unread, so the
  // connection must close after the response (or the body would be parsed as the next
  // request): see linger_close.
  httplib::Server::HandlerResponse refuse(const httplib::Request& req, httplib::Response& res,
                                          int status, std::string_view reason,
                                          const std::string& message) {
    rejected_.with({reason}).inc();
    res.status = status;
    res.set_header("Connection", "close");
    res.set_content(message, kText);
    if (Connection* connection = t_connection) {
      // Counted now: the lingering close below may take a while, and post_route runs after it.
      if (connection->request_started) {
        connection->request_started = false;
        record(req.path, status, connection->request_start);
      }
      connection->close_after_response = true;
      linger_close(*connection, status, message);
    }
    return httplib::Server::HandlerResponse::Handled;
  }

  // Runs after the request line and headers are read and before the body is: the only place
  // where a body can be refused without reading it.
  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) {
    if (auto* connection = t_connection) {
      connection->request_started = true;
      connection->request_start = Clock::now();
      connection->close_after_response = false;
    }
    if (req.has_header("Transfer-Encoding")) {
      return refuse(req, res, 411, "chunked",
                    "transfer-encoded (chunked) request bodies are not accepted; send "
                    "Content-Length\n");
    }
    std::optional<std::uint64_t> length;
    if (auto count = req.get_header_value_count("Content-Length"); count > 1) {
      return refuse(req, res, 400, "bad_content_length", "more than one Content-Length header\n");
    } else if (count == 1) {
      length = parse_length(req.get_header_value("Content-Length"));
      if (!length) return refuse(req, res, 400, "bad_content_length", "invalid Content-Length\n");
      if (*length > options_.max_body_bytes) {
        return refuse(req, res, 413, "body_too_large",
                      "the request body of " + std::to_string(*length) +
                          " bytes exceeds the limit of " + std::to_string(options_.max_body_bytes) +
                          " bytes\n");
      }
    }
    bool has_body = length && *length > 0;
    // httplib reads a body for these methods only; for them it is read (within the limit
    // checked above) and answered by serve(), so the connection stays usable.
    bool body_method = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                       req.method == "DELETE";
    if (body_method && req.method != "DELETE" && !length) {
      // Without Content-Length httplib 0.11.4 reads the body until the connection closes.
      return refuse(req, res, 411, "no_content_length", "a request body needs Content-Length\n");
    }
    if (!body_method && has_body) {
      return refuse(req, res, 400, "unexpected_body",
                    "a " + printable(req.method) + " request cannot carry a body\n");
    }
    if (body_method) {
      if (Connection* connection = t_connection) connection->headers_accepted = true;
      return httplib::Server::HandlerResponse::Unhandled;
    }
    // GET, HEAD, OPTIONS...: nothing is served that way.
    if (route_for(req.path) != nullptr) {
      res.status = 405;
      res.set_header("Allow", "POST");
      res.set_content("only POST is served here\n", kText);
    } else {
      res.status = 404;
      res.set_content("404 page not found\n", kText);
    }
    return httplib::Server::HandlerResponse::Handled;
  }

  // Expect: 100-continue: refuse oversize bodies before the client sends them.
  int expect_continue(const httplib::Request& req, httplib::Response& res) {
    try {
      if (pre_route(req, res) == httplib::Server::HandlerResponse::Handled) return res.status;
    } catch (...) {
      res.status = 500;
      return 500;
    }
    return 100;
  }

  // The webhook itself: the body has been read (and is within limits).
  void serve(const httplib::Request& req, httplib::Response& res) {
    const Route* route = route_for(req.path);
    if (route == nullptr) {
      res.status = 404;
      res.set_content("404 page not found\n", kText);
      return;
    }
    if (req.method != "POST") {
      res.status = 405;
      res.set_header("Allow", "POST");
      res.set_content("only POST is served here\n", kText);
      return;
    }
    route->in_flight->inc();
    struct Done {
      metrics::Gauge* gauge;
      ~Done() { gauge->dec(); }
    } done{route->in_flight};

    if (req.has_header("Content-Type")) {
      std::string content_type = req.get_header_value("Content-Type");  // owns the text
      auto type = media_type(content_type);
      if (!iequals(type, "application/json")) {
        res.status = 400;
        res.set_content(
            "bad request: Content-Type " + printable(type) + ", expected application/json\n",
            kText);
        return;
      }
    }
    ParseOptions parse_options;
    parse_options.max_depth = options_.max_depth;
    parse_options.projection = route->projection ? &*route->projection : nullptr;
    auto request = parse_review(req.body, parse_options);
    if (!request) {
      // The message quotes nothing from the body beyond short identifiers: safe to log.
      log::debug(kLogger, "bad AdmissionReview",
                 {{"webhook", route->path}, {"error", request.error()}});
      res.status = 400;
      res.set_content("bad AdmissionReview: " + request.error() + "\n", kText);
      return;
    }
    AdmissionResponse response = route->handler(*request);
    sanitize(response, *request, *route);
    res.status = 200;
    res.set_content(encode_review(request->uid, response), "application/json");
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
          kLogger, "handler returned a patch for a denied or non-mutating request; dropped",
          {{"webhook", route.path}, {"operation", std::string(to_string(request.operation))}});
      response.patch = nullptr;
      return;
    }
    if (auto valid = validate_json_patch(response.patch); !valid) {
      log::error(kLogger, "handler returned an invalid JSON patch; dropped",
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

  // Runs for every response, just before httplib writes it: metrics, and the connection's next
  // phase. Exceptions must not escape (httplib calls this outside its try block).
  void post_route(const httplib::Request& req, httplib::Response& res) noexcept {
    try {
      Connection* connection = t_connection;
      if (connection != nullptr && connection->request_started) {
        connection->request_started = false;
        record(req.path, res.status, connection->request_start);
      }
      if (connection != nullptr) {
        if (connection->close_after_response) {
          connection->close_after_response = false;
          // Nothing more is read from this connection (the refused body stays unread); the
          // guard closes it once the response is out.
          SSL_set_shutdown(connection->ssl,
                           SSL_get_shutdown(connection->ssl) | SSL_RECEIVED_SHUTDOWN);
          connection->enter(kClosing);
        } else {
          connection->enter(kIdle);
        }
      }
    } catch (...) {
    }
  }

  static void on_exception(const httplib::Request& req, httplib::Response& res,
                           std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log::error(kLogger, "admission handler failed",
               {{"webhook", printable(req.path)}, {"error", printable(what)}});
    res.status = 500;
    res.set_content("internal error\n", kText);
  }

  CertWatcher& certs_;
  AdmissionServerOptions options_;
  metrics::CounterFamily& requests_;
  metrics::HistogramFamily& latency_;
  metrics::GaugeFamily& in_flight_;
  metrics::CounterFamily& rejected_;
  ConnectionGuard guard_;
  // Written before start() only, then read concurrently without a lock.
  std::unordered_map<std::string, Route> routes_;
  httplib::SSLServer server_;  // last: its callbacks use the members above

  std::mutex lifecycle_;
  bool started_ = false;
  std::thread listener_;
  std::atomic<bool> listener_done_{true};
  std::atomic<int> port_{0};
  std::atomic<bool> running_{false};
};

AdmissionServer::AdmissionServer(CertWatcher& certs, AdmissionServerOptions options)
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
