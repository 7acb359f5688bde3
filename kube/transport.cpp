#include "kube/transport.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "base/log.h"
#include "kube/tls.h"

namespace vscaler::kube {
namespace {

using Clock = std::chrono::steady_clock;

// A non-2xx body of a stream (a watch refused with 410, 403, ...) is a Status object of a few
// hundred bytes; anything beyond this is not worth keeping.
constexpr size_t kMaxStreamErrorBody = 64 * 1024;

struct ServerUrl {
  bool https = true;
  std::string host;  // without IPv6 brackets
  int port = 443;
  std::string prefix;  // path prefix without a trailing slash, "" for none
};

Result<ServerUrl> parse_server_url(const std::string& url) {
  // user:password@host: the address is logged and, for Prometheus, written into scalers' status
  // messages that every reader of them sees; refused without repeating it.
  std::size_t scheme_end = url.find("://");
  std::size_t authority_begin = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  // The authority ends at the path, the query or the fragment (cmd/options.cpp reads it so).
  if (url.substr(authority_begin, url.find_first_of("/?#", authority_begin) - authority_begin)
          .find('@') != std::string::npos) {
    return fail(
        "a server URL carries a user name or password (user:password@host): not repeated here; "
        "give the address alone, and the credentials as a bearer token or a client certificate");
  }
  ServerUrl parsed;
  std::string_view rest = url;
  if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    parsed.https = false;
    parsed.port = 80;
    rest.remove_prefix(7);
  } else {
    return fail("server \"" + url + "\" is not an http(s) URL");
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    parsed.prefix = std::string(prefix);
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("server \"" + url + "\": unclosed '['");
    parsed.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return fail("server \"" + url + "\": bad port");
      port_text = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    parsed.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (parsed.host.empty()) return fail("server \"" + url + "\" has no host");
  if (!port_text.empty()) {
    int port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) return fail("server \"" + url + "\": bad port");
      port = port * 10 + (c - '0');
    }
    if (port == 0 || port > 65535) return fail("server \"" + url + "\": bad port");
    parsed.port = port;
  }
  return parsed;
}

// The bearer token, from a fixed value, from a file that is re-read when it changes (a stat per
// request costs about a microsecond and notices a kubelet rotation at once), or from a credential
// plugin run again once its token expires.
class TokenSource {
 public:
  explicit TokenSource(const ClientConfig& config)
      : token_(config.token),
        file_(config.token_file),
        // A plugin that gave a client certificate is not run again: the TLS context holds it.
        plugin_(config.token.empty() ? nullptr : config.exec_plugin),
        expires_(config.token_expires) {}

  // The token to send. One that a plugin gave and that has expired is renewed first: one caller
  // runs the plugin (for as long as it takes, within its own timeout: no request has a valid
  // token before it is done), the others wait for that run until `deadline`, then go with the
  // old token.
  std::string current(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    if (!file_.empty()) refresh_locked(false);
    if (plugin_ && expires_ && std::chrono::system_clock::now() >= *expires_ &&
        std::chrono::steady_clock::now() >= retry_after_) {
      renew_locked(lock, deadline);
    }
    return token_;
  }

  // After a 401 to a request sent with `used`: true when there is another token to try, from the
  // file read again or the plugin run again (or already renewed by another caller meanwhile).
  bool reload(const std::string& used, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    if (plugin_) {
      if (running_) running_done_.wait_until(lock, deadline, [this] { return !running_; });
      if (token_ != used) return true;
      if (running_ || std::chrono::steady_clock::now() < retry_after_) return false;
      renew_locked(lock, deadline);
      return token_ != used;
    }
    if (file_.empty()) return false;
    refresh_locked(true);
    return token_ != used;
  }
  std::uint64_t reloads() const { return reloads_.load(); }

 private:
  void refresh_locked(bool force) {
    struct stat info {};
    if (::stat(file_.c_str(), &info) != 0) {
      if (!warned_)
        log::warn("kube.transport", "token file unreadable; keeping the last token",
                  {{"file", file_}, {"error", std::strerror(errno)}});
      warned_ = true;
      return;
    }
    bool changed = info.st_mtim.tv_sec != seen_.st_mtim.tv_sec ||
                   info.st_mtim.tv_nsec != seen_.st_mtim.tv_nsec || info.st_size != seen_.st_size ||
                   info.st_ino != seen_.st_ino || info.st_dev != seen_.st_dev;
    if (!changed && !force && loaded_) return;
    std::ifstream in(file_, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string token = text.str();
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                              token.back() == '\t')) {
      token.pop_back();
    }
    if (!in || token.empty()) {
      // A writer may have truncated the file and not written it yet: keep the old token and
      // look again next time (seen_ is not updated).
      return;
    }
    seen_ = info;
    loaded_ = true;
    warned_ = false;
    token_ = std::move(token);
    reloads_.fetch_add(1);
  }

  // Runs the plugin with the lock let go (requests that need no renewal go on meanwhile), or
  // waits until `deadline` for the run under way. A failed run keeps the last token (the API
  // server says whether it still works) and is tried again kPluginRetry after it ended; the
  // error is logged once per failure streak.
  void renew_locked(std::unique_lock<std::mutex>& lock,
                    std::chrono::steady_clock::time_point deadline) {
    if (running_) {
      running_done_.wait_until(lock, deadline, [this] { return !running_; });
      return;
    }
    running_ = true;
    lock.unlock();
    auto credential = run_exec_plugin(*plugin_);
    lock.lock();
    running_ = false;
    retry_after_ = std::chrono::steady_clock::now() + kPluginRetry;
    running_done_.notify_all();
    if (!credential || credential->token.empty()) {
      if (!warned_) {
        log::warn("kube.transport", "credential plugin failed; keeping the last token",
                  {{"error", credential ? "the new ExecCredential has no token (a client "
                                          "certificate is taken once, at start)"
                                        : credential.error()}});
      }
      warned_ = true;
      return;
    }
    warned_ = false;
    token_ = std::move(credential->token);
    expires_ = credential->expires;
    reloads_.fetch_add(1);
  }

  std::mutex mutex_;
  std::string token_;
  std::string file_;
  // The plugin runs at most once per this long, however many requests come (or fail with 401).
  static constexpr std::chrono::seconds kPluginRetry{10};

  std::shared_ptr<const ExecPlugin> plugin_;
  std::optional<base::TimeMillis> expires_;
  std::chrono::steady_clock::time_point retry_after_{};
  bool running_ = false;  // a plugin run is under way (the lock let go meanwhile)
  std::condition_variable running_done_;
  struct stat seen_ {};
  bool loaded_ = false;
  bool warned_ = false;
  std::atomic<std::uint64_t> reloads_{0};
};

// One HTTP client (one connection at a time) with its TLS verification state.
struct Connection {
  std::unique_ptr<httplib::ClientImpl> http;
  std::unique_ptr<TlsVerifyState> tls;
};

// What every connection of a Transport shares; streams keep it alive after the Transport.
struct Shared {
  ClientConfig config;
  ServerUrl url;
  std::shared_ptr<const TlsMaterial> material;
  TokenSource token;
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> connections_opened{0};
  std::atomic<std::uint64_t> streams{0};

  Shared(ClientConfig c, ServerUrl u, std::shared_ptr<const TlsMaterial> m)
      : config(std::move(c)), url(std::move(u)), material(std::move(m)), token(config) {}

  // `on_socket` runs on every new socket (counting, stream cancellation).
  std::unique_ptr<Connection> connect(std::chrono::milliseconds read_timeout,
                                      std::function<void(int)> on_socket) {
    auto connection = std::make_unique<Connection>();
    if (url.https) {
      auto ssl = std::make_unique<httplib::SSLClient>(url.host, url.port);
      connection->tls = std::make_unique<TlsVerifyState>();
      connection->tls->material = material;
      connection->tls->expected_host =
          config.tls_server_name.empty() ? url.host : config.tls_server_name;
      connection->tls->server_name = config.tls_server_name;
      // httplib's own check would add the system trust store to the configured CA; ours trusts
      // exactly the configured CAs (see configure_client_context).
      ssl->enable_server_certificate_verification(false);
      configure_client_context(ssl->ssl_context(), connection->tls.get(),
                               !config.insecure_skip_tls_verify);
      connection->http = std::move(ssl);
    } else {
      connection->http = std::make_unique<httplib::ClientImpl>(url.host, url.port);
    }
    httplib::ClientImpl& http = *connection->http;
    http.set_keep_alive(true);
    http.set_tcp_nodelay(true);  // else each request waits ~40-90 ms for a delayed ACK
    http.set_url_encode(false);  // targets are encoded by the caller
    http.set_follow_location(false);
    auto connect_us = std::chrono::duration_cast<std::chrono::microseconds>(config.connect_timeout);
    http.set_connection_timeout(connect_us.count() / 1'000'000, connect_us.count() % 1'000'000);
    auto read_us = std::chrono::duration_cast<std::chrono::microseconds>(read_timeout);
    http.set_read_timeout(read_us.count() / 1'000'000, read_us.count() % 1'000'000);
    http.set_write_timeout(read_us.count() / 1'000'000, read_us.count() % 1'000'000);
    http.set_socket_options([this, on_socket = std::move(on_socket)](int sock) {
      int one = 1;
      ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      // Half-open connections (a server gone without a FIN, a NAT that forgot us) are noticed
      // after about a minute of silence (30 s idle + 3 probes 10 s apart) instead of hanging
      // a quiet watch until its read timeout.
      ::setsockopt(sock, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
      int idle = 30, interval = 10, count = 3;
      ::setsockopt(sock, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
      ::setsockopt(sock, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
      ::setsockopt(sock, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
      connections_opened.fetch_add(1);
      if (on_socket) on_socket(sock);
    });
    return connection;
  }

  // `bearer`: token.current()'s answer, or "" for none.
  httplib::Headers headers(const HttpRequest& request, const std::string& bearer) {
    httplib::Headers headers{{"Accept", request.accept}, {"User-Agent", config.user_agent}};
    if (!bearer.empty()) headers.emplace("Authorization", "Bearer " + bearer);
    if (!request.body.empty()) headers.emplace("Content-Type", request.content_type);
    return headers;
  }

  // Turns an httplib failure into an ApiError that says what to look at.
  ApiError failure(httplib::Error error, const Connection& connection, Clock::duration elapsed,
                   std::chrono::milliseconds read_timeout) const {
    std::string where = config.server;
    switch (error) {
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLServerVerification:
      case httplib::Error::SSLLoadingCerts: {
        if (connection.tls && connection.tls->failed.load()) {
          long code = connection.tls->last_error.load();
          std::string trusted = material->ca_certs() ? "the configured CA (" + config.source + ")"
                                                     : "the system trust store";
          return make_error(ErrorKind::kTls, "TLS certificate verify failed for " + where + ": " +
                                                 X509_verify_cert_error_string(code) +
                                                 " (X509 error " + std::to_string(code) +
                                                 "); the server's certificate is not trusted by " +
                                                 trusted + " for host \"" +
                                                 connection.tls->expected_host + "\"");
        }
        return make_error(ErrorKind::kTls,
                          "TLS handshake with " + where +
                              " failed (protocol or client certificate refused by the server)");
      }
      case httplib::Error::Connection:
        return make_error(ErrorKind::kTransport, "cannot connect to " + where);
      case httplib::Error::ConnectionTimeout:
        return make_error(ErrorKind::kTimeout, "connecting to " + where + " timed out after " +
                                                   std::to_string(config.connect_timeout.count()) +
                                                   " ms");
      case httplib::Error::Read:
        if (elapsed + std::chrono::milliseconds(50) >= read_timeout) {
          return make_error(ErrorKind::kTimeout, "no answer from " + where + " within " +
                                                     std::to_string(read_timeout.count()) + " ms");
        }
        return make_error(ErrorKind::kTransport,
                          "connection to " + where + " closed while reading the answer");
      case httplib::Error::Write:
        return make_error(ErrorKind::kTransport,
                          "connection to " + where + " failed while sending the request");
      case httplib::Error::Canceled:
        return make_error(ErrorKind::kCanceled, "request to " + where + " canceled");
      case httplib::Error::Compression:
        return make_error(ErrorKind::kDecode, "cannot decompress the answer from " + where);
      default:
        return make_error(ErrorKind::kTransport,
                          "request to " + where + " failed: " + httplib::to_string(error));
    }
  }
};

void fill_response(const httplib::Response& from, HttpResponse& to) {
  to.status = from.status;
  to.content_type = from.get_header_value("Content-Type");
  to.retry_after = from.get_header_value("Retry-After");
  auto range = from.headers.equal_range("Warning");
  for (auto it = range.first; it != range.second; ++it) to.warnings.push_back(it->second);
}

class HttpStream final : public Stream {
 public:
  HttpStream(std::shared_ptr<Shared> shared, HttpRequest request,
             std::chrono::milliseconds read_timeout)
      : shared_(std::move(shared)), request_(std::move(request)), read_timeout_(read_timeout) {
    connection_ = shared_->connect(read_timeout_, [this](int sock) {
      // Closes the race where cancel() ran before the socket existed (stop() then had nothing
      // to shut down): a socket created after cancellation is shut down at once.
      std::lock_guard lock(mutex_);
      if (canceled_) ::shutdown(sock, SHUT_RDWR);
    });
  }

  Result<Unit, ApiError> run(const std::function<bool(std::string_view)>& on_data) override {
    if (is_canceled()) return fail(make_error(ErrorKind::kCanceled, "stream canceled"));
    shared_->streams.fetch_add(1);
    httplib::Request req;
    req.method = request_.method;
    req.path = shared_->url.prefix + request_.target;
    req.headers = shared_->headers(
        request_,
        shared_->token.current(std::chrono::steady_clock::now() + shared_->config.request_timeout));
    req.body = request_.body;
    int status = 0;
    std::string retry_after;
    std::string error_body;
    bool stopped_by_handler = false;
    req.response_handler = [&](const httplib::Response& response) {
      status = response.status;
      retry_after = response.get_header_value("Retry-After");
      return !is_canceled();
    };
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      if (is_canceled()) return false;
      if (status < 200 || status > 299) {
        if (error_body.size() < kMaxStreamErrorBody) error_body.append(data, size);
        return true;
      }
      if (!on_data(std::string_view(data, size))) {
        stopped_by_handler = true;
        return false;
      }
      return true;
    };
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    auto start = Clock::now();
    bool sent = connection_->http->send(req, response, error);
    if (is_canceled()) return fail(make_error(ErrorKind::kCanceled, "stream canceled"));
    if (stopped_by_handler) return Unit{};
    if (!sent)
      return fail(shared_->failure(error, *connection_, Clock::now() - start, read_timeout_));
    if (status == 0) status = response.status;
    if (status < 200 || status > 299) {
      if (error_body.empty()) error_body = response.body;
      return fail(error_from_response(status, error_body, retry_after));
    }
    return Unit{};
  }

  void cancel() override {
    {
      std::lock_guard lock(mutex_);
      if (canceled_) return;
      canceled_ = true;
    }
    // Shuts the socket down if a request is in flight (the reader wakes with EOF); waits while
    // a connect is in progress, whose socket the hook above then shuts down.
    connection_->http->stop();
  }

 private:
  bool is_canceled() {
    std::lock_guard lock(mutex_);
    return canceled_;
  }

  std::shared_ptr<Shared> shared_;
  HttpRequest request_;
  std::chrono::milliseconds read_timeout_;
  std::unique_ptr<Connection> connection_;
  std::mutex mutex_;
  bool canceled_ = false;
};

class PooledTransport final : public Transport {
  /// Below this much time before its deadline a request is not sent (nor sent again).
  static constexpr std::chrono::milliseconds kLeastTimeToSend{20};

 public:
  explicit PooledTransport(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  Result<HttpResponse, ApiError> send(const HttpRequest& request) override {
    // Waiting for a connection counts against the request's time: a caller never waits longer
    // than request_timeout for a free connection however busy the pool is.
    const std::chrono::milliseconds limit = time_limit(request);
    // One deadline for all of it: the wait for a connection, connecting, a token renewal, the
    // answer read whole, and a second try after a 401.
    const auto deadline = Clock::now() + limit;
    std::unique_ptr<Connection> connection = acquire(deadline);
    if (!connection) {
      return fail(make_error(
          ErrorKind::kTimeout,
          "no connection to the API server became free within the request timeout (" +
              std::to_string(limit.count()) + " ms; all " +
              std::to_string(std::max(1, shared_->config.max_connections)) + " are busy)"));
    }
    // Not sent with (almost) no time left: a write the server applied would be reported as failed
    // when the answer cannot be waited for.
    auto out_of_time = [&](std::string_view what) {
      return make_error(ErrorKind::kTimeout, request.method + " " + request.target + ": " +
                                                 std::string(what) + " within the request's " +
                                                 std::to_string(limit.count()) + " ms");
    };
    std::string bearer = shared_->token.current(deadline);
    if (Clock::now() + kLeastTimeToSend >= deadline) {
      release(std::move(connection));
      return fail(out_of_time("not sent: no time left after waiting for a connection"));
    }
    auto result = send_on(*connection, request, bearer, limit, deadline);
    if (result && result->status == 401 && shared_->token.reload(bearer, deadline)) {
      // The token file changed since we last read it (a rotation between stat and use), or the
      // plugin gave a new token (a revoked or expired one).
      bearer = shared_->token.current(deadline);
      if (Clock::now() + kLeastTimeToSend >= deadline) {
        release(std::move(connection));
        return fail(out_of_time("refused (401), and no time left to send again with a new token"));
      }
      result = send_on(*connection, request, bearer, limit, deadline);
    }
    release(std::move(connection));
    return result;
  }

  std::unique_ptr<Stream> open_stream(HttpRequest request,
                                      std::chrono::milliseconds read_timeout) override {
    return std::make_unique<HttpStream>(shared_, std::move(request), read_timeout);
  }

  const ClientConfig& config() const override { return shared_->config; }

  TransportStats stats() const override {
    TransportStats stats;
    stats.requests = shared_->requests.load();
    stats.connections_opened = shared_->connections_opened.load();
    stats.token_reloads = shared_->token.reloads();
    stats.streams = shared_->streams.load();
    return stats;
  }

 private:
  std::chrono::milliseconds time_limit(const HttpRequest& request) const {
    const auto configured = shared_->config.request_timeout;
    return request.timeout > std::chrono::milliseconds::zero()
               ? std::min(request.timeout, configured)
               : configured;
  }

  /// Sets the connect, read and write timeouts of `connection` for the next request.
  static void set_timeouts(Connection& connection, std::chrono::milliseconds connect,
                           std::chrono::milliseconds timeout) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
    connection.http->set_read_timeout(us / 1'000'000, us % 1'000'000);
    connection.http->set_write_timeout(us / 1'000'000, us % 1'000'000);
    auto connect_us = std::chrono::duration_cast<std::chrono::microseconds>(connect).count();
    connection.http->set_connection_timeout(connect_us / 1'000'000, connect_us % 1'000'000);
  }

  /// Gives `connection` what is left until `deadline` (rounded up: a timeout that fires is then
  /// past the deadline, and said as the request's), never more than the configured timeouts.
  void set_timeouts_within(Connection& connection, Clock::time_point deadline) const {
    const auto left =
        std::max(std::chrono::milliseconds(1),
                 std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
    const auto& config = shared_->config;
    set_timeouts(connection, std::min(left, config.connect_timeout),
                 std::min(left, config.request_timeout));
  }

  /// Sends on `connection` within what is left until `deadline` (of the request's `limit`).
  Result<HttpResponse, ApiError> send_on(Connection& connection, const HttpRequest& request,
                                         const std::string& bearer, std::chrono::milliseconds limit,
                                         Clock::time_point deadline) {
    set_timeouts_within(connection, deadline);
    auto result = send_once(connection, request, limit, deadline, bearer);
    // Pooled connections carry the configured timeouts for whoever takes them next.
    set_timeouts(connection, shared_->config.connect_timeout, shared_->config.request_timeout);
    return result;
  }

  Result<HttpResponse, ApiError> send_once(Connection& connection, const HttpRequest& request,
                                           std::chrono::milliseconds limit,
                                           Clock::time_point deadline, const std::string& bearer) {
    httplib::Request req;
    req.method = request.method;
    req.path = shared_->url.prefix + request.target;
    req.headers = shared_->headers(request, bearer);
    req.body = request.body;
    const bool idempotent = request.method == "GET" || request.method == "HEAD" ||
                            request.method == "PUT" || request.method == "DELETE";
    // The body is taken piece by piece (decompressed), so an answer longer than
    // max_response_bytes is cut off as it arrives, before it is all in memory.
    const std::size_t max_bytes = shared_->config.max_response_bytes;
    std::string body;
    bool too_large = false;
    // The socket's timeouts bound each read (to what was left when it began, send_on); the
    // deadline bounds the whole answer, as client-go's Timeout does: a server (or a proxy) that
    // sends a chunk every few seconds must not hold the caller for minutes. It is checked as
    // body chunks arrive; httplib cannot shorten a wait under way, so connecting, the TLS
    // handshake and the head each get at most what was left when the attempt began: a server
    // that stalls in each of them holds the caller up to about three times the limit, never
    // unbounded. A second attempt shares the deadline.
    bool past_deadline = false;
    req.response_handler = [&](const httplib::Response& response) {
      // A declared length says so before any of the body is read.
      std::string length = response.get_header_value("Content-Length");
      std::uint64_t declared = 0;
      auto [end, parsed] = std::from_chars(length.data(), length.data() + length.size(), declared);
      too_large = parsed == std::errc::result_out_of_range ||
                  (parsed == std::errc() && declared > max_bytes);
      return !too_large;
    };
    req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
      too_large = size > max_bytes - body.size();
      past_deadline = Clock::now() > deadline;
      if (!too_large && !past_deadline) body.append(data, size);
      return !too_large && !past_deadline;
    };
    for (int attempt = 0;; ++attempt) {
      const bool reused = connection.http->is_socket_open() > 0;
      shared_->requests.fetch_add(1);
      httplib::Response response;
      httplib::Error error = httplib::Error::Success;
      body.clear();
      auto start = Clock::now();
      if (connection.http->send(req, response, error)) {
        HttpResponse out;
        fill_response(response, out);
        out.body = std::move(body);
        return out;
      }
      if (too_large) {
        // httplib has closed the connection whose answer it stopped reading; the next request
        // on this pooled client connects again.
        return fail(make_error(ErrorKind::kDecode,
                               "the answer to " + request.method + " " + request.target +
                                   " is longer than " + std::to_string(max_bytes) +
                                   " bytes (max_response_bytes); not read further"));
      }
      if (past_deadline) {
        return fail(make_error(ErrorKind::kTimeout,
                               "the answer to " + request.method + " " + request.target +
                                   " did not arrive whole within " + std::to_string(limit.count()) +
                                   "ms; not read further"));
      }
      // A kept-alive connection the server closed meanwhile fails at once. The request is
      // sent again, once, on a new connection, as Go's net/http does: an idempotent one
      // always; any other only when writing it failed, since the server then never had all of
      // it and cannot have acted on it (after a failed read it may have).
      const bool stale = reused &&
                         (error == httplib::Error::Read || error == httplib::Error::Write) &&
                         Clock::now() - start < std::chrono::seconds(1);
      const bool unsent = error == httplib::Error::Write;
      if (attempt == 0 && stale && (idempotent || unsent) &&
          Clock::now() + kLeastTimeToSend < deadline) {
        set_timeouts_within(connection, deadline);  // what is left, not what was left for the first
        continue;
      }
      if (Clock::now() >= deadline) {
        // What failed had only the time left (a connection waited for, a first try): the
        // request's time is what ran out.
        return fail(make_error(ErrorKind::kTimeout,
                               request.method + " " + request.target + ": no answer within " +
                                   std::to_string(limit.count()) + "ms (" +
                                   httplib::to_string(error) + " at the end)"));
      }
      // A read that timed out had what was left of the request's time, not all of it.
      const auto had =
          std::min(limit, std::chrono::ceil<std::chrono::milliseconds>(deadline - start));
      return fail(shared_->failure(error, connection, Clock::now() - start, had));
    }
  }

  /// A pooled connection, or a new one while fewer than max_connections exist; nullptr when
  /// none became free by `deadline`.
  std::unique_ptr<Connection> acquire(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    bool available = idle_changed_.wait_until(lock, deadline, [&] {
      return !idle_.empty() || total_ < std::max(1, shared_->config.max_connections);
    });
    if (!available) return nullptr;
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());  // the most recently used is the warmest
      idle_.pop_back();
      return connection;
    }
    ++total_;
    lock.unlock();
    return shared_->connect(shared_->config.request_timeout, nullptr);
  }

  void release(std::unique_ptr<Connection> connection) {
    {
      std::lock_guard lock(mutex_);
      idle_.push_back(std::move(connection));
    }
    idle_changed_.notify_one();
  }

  std::shared_ptr<Shared> shared_;
  std::mutex mutex_;
  std::condition_variable idle_changed_;
  std::vector<std::unique_ptr<Connection>> idle_;
  int total_ = 0;
};

}  // namespace

Result<std::shared_ptr<Transport>> Transport::create(const ClientConfig& config) {
  // OpenSSL writes to sockets with write(2): a connection the peer (or cancel()) has shut down
  // would kill the process with SIGPIPE instead of returning EPIPE. A process that installed
  // its own handler keeps it.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
  std::string origin = config.source.empty() ? "client configuration" : config.source;
  auto url = parse_server_url(config.server);
  if (!url) return fail(origin + ": " + url.error());
  auto material =
      TlsMaterial::parse(config.ca_pem, config.client_cert_pem, config.client_key_pem,
                         origin + ": CA", origin + ": client certificate", origin + ": client key");
  if (!material) return fail(material.error());
  auto shared = std::make_shared<Shared>(config, std::move(*url), std::move(*material));
  return std::shared_ptr<Transport>(std::make_shared<PooledTransport>(std::move(shared)));
}

}  // namespace vscaler::kube
