// PooledTransport against plain-HTTP local servers: one whose every answer is slow (a caller
// waiting for a connection from a busy pool gives up at its request timeout instead of queueing
// behind every earlier caller), one that resets kept-alive connections (what is sent again), and
// answers longer than the client takes; a TLS server that records the server name (SNI) a
// kubeconfig's tls-server-name makes the client send; and a credential plugin's token renewed on
// expiry and on a 401.
#include "kube/transport.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/unit/support/local_http_server.h"
#include "test/unit/support/temp_dir.h"
#include "test/unit/webhook/tls_fixture.h"

using namespace std::chrono_literals;
using vscaler::kube::ClientConfig;
using vscaler::kube::ErrorKind;
using vscaler::kube::HttpRequest;
using vscaler::kube::Transport;

namespace {

// The local server, with GET `path` answering "{}" after `delay`.
class SlowServer : public vscaler::testing::LocalHttpServer {
 public:
  void route(const std::string& path, std::chrono::milliseconds delay) {
    server().Get(path, [delay](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(delay);
      res.set_content("{}", "application/json");
    });
  }
  // Starts serving on one worker thread; returns the config of a client for it. One worker: the
  // tests need no parallel answers, and ThreadSanitizer reports races between httplib 0.11's
  // server workers inside the (uninstrumented) library.
  ClientConfig start(std::chrono::milliseconds request_timeout, int max_connections) {
    server().new_task_queue = [] { return new httplib::ThreadPool(1); };
    LocalHttpServer::start();
    ClientConfig config = LocalHttpServer::config();
    config.request_timeout = request_timeout;
    config.max_connections = max_connections;
    return config;
  }
};

}  // namespace

TEST_CASE("a caller of a busy pool waits for a connection at most its request timeout") {
  SlowServer server;
  server.route("/api", 2s);
  ClientConfig config = server.start(800ms, 1);
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());

  // Three callers at once, one connection, a server that answers in 2 s: the first holds the
  // connection until its time (800 ms) runs out. Waiting counts against each caller's own
  // 800 ms, so none takes much longer than that: before, the third waited for both others
  // (about 2.4 s). The callers start together (a latch), so when the connection comes free the
  // others have (almost) no time left: the first request is sent, the others (but for a caller
  // the scheduler started over 20 ms late) are not.
  constexpr int kCallers = 3;
  std::vector<std::chrono::milliseconds> took(kCallers);
  std::vector<std::string> errors(kCallers);
  std::vector<std::thread> callers;
  std::latch ready(kCallers);
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      ready.arrive_and_wait();
      auto start = std::chrono::steady_clock::now();
      HttpRequest request;
      request.target = "/api";
      auto answer = (*transport)->send(request);
      took[i] = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      if (!answer.ok()) {
        CHECK(answer.error().kind == ErrorKind::kTimeout);
        errors[i] = answer.error().message;
      }
    });
  }
  for (auto& caller : callers) caller.join();

  auto slowest = *std::max_element(took.begin(), took.end());
  INFO("slowest caller took " << slowest.count() << " ms");
  CHECK(slowest < 1500ms);
  // A pool that let every caller through would send three.
  INFO("requests sent: " << (*transport)->stats().requests);
  CHECK((*transport)->stats().requests < kCallers);
  // The one sent hears nothing in its time; the others saw their deadline pass in the wait, or
  // took the connection released at it with no time left to send.
  int waited = 0;
  for (const auto& message : errors) {
    INFO("error: " << message);
    const bool waiting =
        message.find("no connection to the API server became free") != std::string::npos ||
        message.find("not sent: no time left after waiting for a connection") != std::string::npos;
    waited += waiting ? 1 : 0;
    CHECK((waiting || message.find("no answer") != std::string::npos));
  }
  CHECK(waited >= 1);
}

TEST_CASE("a request with a timeout of its own ends by it, and the connection keeps the default") {
  SlowServer server;
  server.route("/slow", 1500ms);
  server.route("/fast", 400ms);
  ClientConfig config = server.start(5s, 1);
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest slow;
  slow.target = "/slow";
  slow.timeout = 200ms;  // say what an admission review has left
  auto start = std::chrono::steady_clock::now();
  auto answer = (*transport)->send(slow);
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.error().kind == ErrorKind::kTimeout);
  CHECK(took < 1000ms);
  // The same pooled connection, without a timeout of its own: the configured 5 s again.
  HttpRequest fast;
  fast.target = "/fast";
  CHECK((*transport)->send(fast).ok());
}

TEST_CASE("an answer that trickles in ends at the request's timeout, not at each read's") {
  // A chunk every 150 ms for 3 s: each read is well within the 600 ms timeout, the whole is not.
  SlowServer server;
  server.server().Get("/trickle", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json",
                                     [](std::size_t offset, httplib::DataSink& sink) {
                                       if (offset >= 20) {
                                         sink.done();
                                         return true;
                                       }
                                       std::this_thread::sleep_for(150ms);
                                       return sink.write(" ", 1);
                                     });
  });
  ClientConfig config = server.start(5s, 1);
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest trickle;
  trickle.target = "/trickle";
  trickle.timeout = 600ms;
  auto start = std::chrono::steady_clock::now();
  auto answer = (*transport)->send(trickle);
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.error().kind == ErrorKind::kTimeout);
  CHECK(answer.error().message.find("did not arrive whole within 600ms") != std::string::npos);
  CHECK(took < 1500ms);
}

TEST_CASE("an answer longer than max_response_bytes fails without being read whole") {
  SlowServer server;
  constexpr std::size_t kLimit = 1 << 20;
  const std::string big(2 * kLimit, 'x');
  const std::string exact(kLimit, 'y');
  server.server().Get("/declared", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(big, "application/json");  // with a Content-Length
  });
  server.server().Get("/chunked", [&](const httplib::Request&, httplib::Response& res) {
    // No Content-Length: 64 KiB chunks until 2 MiB.
    res.set_chunked_content_provider("application/json",
                                     [&](std::size_t offset, httplib::DataSink& sink) {
                                       if (offset >= big.size()) {
                                         sink.done();
                                         return true;
                                       }
                                       return sink.write(big.data() + offset, 64 * 1024);
                                     });
  });
  server.server().Get("/exact", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(exact, "application/json");
  });
  ClientConfig config = server.start(5s, 1);
  config.max_response_bytes = kLimit;
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  for (const char* target : {"/declared", "/chunked"}) {
    HttpRequest request;
    request.target = target;
    auto answer = (*transport)->send(request);
    REQUIRE_FALSE(answer.ok());
    CHECK(answer.error().kind == ErrorKind::kDecode);
    CHECK(answer.error().message.find("is longer than 1048576 bytes") != std::string::npos);
    // The one pooled connection still serves (a new one replaces the cut-off answer's).
    HttpRequest next;
    next.target = "/exact";
    auto whole = (*transport)->send(next);
    REQUIRE(whole.ok());
    CHECK(whole->body == exact);
  }
}

namespace {

// What ResettingServer does to the first connection's second request.
enum class Reset {
  kWhileIdle,          ///< resets the connection before it comes, while it idles in the pool
  kAfterHeaders,       ///< reads its headers, then resets before the body arrived
  kAfterWholeRequest,  ///< reads all of it, then resets without answering
};

// A listening TCP socket on 127.0.0.1 at a free port (written to `port`).
int listen_local(int& port) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(listener, 8) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  port = ntohs(address.sin_port);
  return listener;
}

TEST_CASE("a request's timeout shorter than the connect timeout bounds the TLS handshake too") {
  // A server whose socket accepts (the kernel's backlog) and never answers the handshake: an API
  // server that hangs. A /metrics scrape's access review must not wait the 10 s connect timeout.
  int port = 0;
  int listener = listen_local(port);
  ClientConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(port);
  config.insecure_skip_tls_verify = true;
  config.connect_timeout = 10s;
  config.request_timeout = 10s;
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest request;
  request.target = "/apis";
  request.timeout = 300ms;
  auto start = std::chrono::steady_clock::now();
  auto answer = (*transport)->send(request);
  auto took = std::chrono::steady_clock::now() - start;
  ::close(listener);
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.error().kind == ErrorKind::kTimeout);
  CHECK(took < 2s);
}

// A raw HTTP/1.1 server on 127.0.0.1 that answers each request "{}" with keep-alive and records
// the requests it read whole, by method, except on its first connection's second request (see
// Reset): there it resets the connection (SO_LINGER 0). httplib's server cannot be made to
// drop a kept-alive connection on cue.
class ResettingServer {
 public:
  explicit ResettingServer(Reset reset) : reset_(reset) {
    listener_ = listen_local(port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~ResettingServer() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  ClientConfig config() const {
    ClientConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    config.max_connections = 1;
    return config;
  }
  /// The methods of the requests read whole, in order; call after the client is done.
  std::vector<std::string> methods() {
    std::lock_guard lock(mutex_);
    return methods_;
  }

 private:
  // Connections are served one after another: the client's pool holds one at a time.
  void serve() {
    for (bool first = true;; first = false) {
      int connection = ::accept(listener_, nullptr, nullptr);
      if (connection < 0) return;
      for (int request = 0;; ++request) {
        const bool reset_here = first && request == 1;
        if (reset_here && reset_ == Reset::kWhileIdle) break;
        std::string method = read_request(connection, reset_here && reset_ == Reset::kAfterHeaders);
        if (method.empty()) break;
        {
          std::lock_guard lock(mutex_);
          methods_.push_back(method);
        }
        if (reset_here) break;
        const std::string answer =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        if (::send(connection, answer.data(), answer.size(), MSG_NOSIGNAL) < 0) break;
      }
      linger reset{1, 0};
      ::setsockopt(connection, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      ::close(connection);
    }
  }
  // Reads one request (headers and a Content-Length body); returns its method, or "" at EOF
  // and when `headers_only` (the body is left unread).
  static std::string read_request(int connection, bool headers_only) {
    std::string data;
    char buffer[4096];
    std::size_t body_from = std::string::npos;
    std::size_t length = 0;
    for (;;) {
      if (body_from == std::string::npos) {
        if (auto end = data.find("\r\n\r\n"); end != std::string::npos) {
          if (headers_only) return "";
          body_from = end + 4;
          if (auto at = data.find("Content-Length: "); at != std::string::npos && at < end) {
            length = std::stoul(data.substr(at + 16));
          }
        }
      }
      if (body_from != std::string::npos && data.size() >= body_from + length) break;
      ssize_t got = ::recv(connection, buffer, sizeof buffer, 0);
      if (got <= 0) return "";
      data.append(buffer, static_cast<std::size_t>(got));
    }
    return data.substr(0, data.find(' '));
  }

  Reset reset_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> methods_;
};

// A merge PATCH of `body_bytes` bytes.
HttpRequest patch_request(std::size_t body_bytes) {
  HttpRequest request;
  request.method = "PATCH";
  request.target = "/apis/x/v1/namespaces/a/things/b/status";
  request.body = R"({"status":{"note":")" + std::string(body_bytes, 'x') + R"("}})";
  request.content_type = "application/merge-patch+json";
  return request;
}

// Sends a GET on a new transport, so that its one pooled connection has served a request.
std::shared_ptr<Transport> transport_with_used_connection(const ClientConfig& config) {
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest get;
  get.target = "/api";
  REQUIRE((*transport)->send(get).ok());
  return *transport;
}

}  // namespace

TEST_CASE("a pooled connection the server reset while idle is replaced before a PATCH") {
  // httplib checks a kept-alive socket before it reuses it: the PATCH goes out once, on a new
  // connection, and nothing here has to send it again.
  ResettingServer server(Reset::kWhileIdle);
  auto transport = transport_with_used_connection(server.config());
  std::this_thread::sleep_for(100ms);  // the reset reaches the client's socket
  auto answer = transport->send(patch_request(10));
  INFO((answer.ok() ? std::string() : answer.error().message));
  CHECK(answer.ok());
  CHECK(server.methods() == std::vector<std::string>{"GET", "PATCH"});
  CHECK(transport->stats().connections_opened == 2);
}

TEST_CASE("a PATCH that could not be sent whole on a kept-alive connection goes out again") {
  // The server resets the kept-alive connection after the PATCH's headers; writing its 16 MiB
  // body (more than the sockets' buffers hold) fails. The server never had the whole request,
  // so it cannot have applied it: it is sent again on a new connection, as Go's net/http does.
  ResettingServer server(Reset::kAfterHeaders);
  auto transport = transport_with_used_connection(server.config());
  auto answer = transport->send(patch_request(16 << 20));
  INFO((answer.ok() ? std::string() : answer.error().message));
  CHECK(answer.ok());
  CHECK(server.methods() == std::vector<std::string>{"GET", "PATCH"});
  CHECK(transport->stats().requests == 3);
}

TEST_CASE("a PATCH the server read whole before the connection failed is not sent again") {
  // The server may have applied it: the caller gets the failure and decides (a status write is
  // redone by the next pass from fresh state).
  ResettingServer server(Reset::kAfterWholeRequest);
  auto transport = transport_with_used_connection(server.config());
  auto answer = transport->send(patch_request(10));
  REQUIRE_FALSE(answer.ok());
  CHECK(answer.error().kind == ErrorKind::kTransport);
  CHECK(server.methods() == std::vector<std::string>{"GET", "PATCH"});
  CHECK(transport->stats().requests == 2);
}

namespace {

// A TLS server on 127.0.0.1 answering one request "{}" and recording the server name (SNI) the
// ClientHello carried.
class SniServer {
 public:
  explicit SniServer(const vscaler::testing::PemPair& pair) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cert = BIO_new_mem_buf(pair.cert.data(), static_cast<int>(pair.cert.size()));
    BIO* key = BIO_new_mem_buf(pair.key.data(), static_cast<int>(pair.key.size()));
    X509* x509 = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    EVP_PKEY* pkey = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    REQUIRE(SSL_CTX_use_certificate(ctx_, x509) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey(ctx_, pkey) == 1);
    X509_free(x509);
    EVP_PKEY_free(pkey);
    BIO_free(cert);
    BIO_free(key);
    // SSL_CTX_set_tlsext_servername_callback and _arg, without the macros' C casts.
    SSL_CTX_callback_ctrl(ctx_, SSL_CTRL_SET_TLSEXT_SERVERNAME_CB,
                          reinterpret_cast<void (*)()>(on_server_name));
    SSL_CTX_ctrl(ctx_, SSL_CTRL_SET_TLSEXT_SERVERNAME_ARG, 0, this);
    listener_ = listen_local(port_);
    thread_ = std::thread([this] { serve_one(); });
  }
  ~SniServer() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
    SSL_CTX_free(ctx_);
  }
  int port() const { return port_; }
  std::string seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  static int on_server_name(SSL* ssl, int* /*alert*/, void* self) {
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    std::lock_guard lock(static_cast<SniServer*>(self)->mutex_);
    static_cast<SniServer*>(self)->seen_ = name != nullptr ? name : "";
    return SSL_TLSEXT_ERR_OK;
  }
  void serve_one() {
    int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        int n = SSL_read(ssl, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      const std::string answer =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
          "Connection: close\r\n\r\n{}";
      SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ::close(fd);
  }

  SSL_CTX* ctx_ = nullptr;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::string seen_;
};

}  // namespace

TEST_CASE("a kubeconfig's tls-server-name is the server name the handshake sends (SNI)") {
  vscaler::testing::TestCa ca;
  // The server answers on 127.0.0.1 with a certificate naming localhost too (as a cluster
  // reached by IP behind a proxy that routes by SNI).
  SniServer server(ca.issue(2));
  ClientConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(server.port());
  config.ca_pem = ca.cert_pem();
  config.tls_server_name = "localhost";
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest request;
  request.target = "/version";
  auto answer = (*transport)->send(request);
  REQUIRE_MESSAGE(answer.ok(), (answer.ok() ? "" : answer.error().to_string()));
  CHECK(answer->body == "{}");
  CHECK(server.seen() == "localhost");
}

TEST_CASE("a write carrying invalid UTF-8 is sent with U+FFFD in its place, never thrown") {
  // A status message may quote another server's bytes (an error page in Latin-1): the write must
  // go out, not end the process with nlohmann's type_error 316.
  vscaler::testing::LocalHttpServer server;
  std::mutex mutex;
  std::string received;
  server.server().Patch("/api/v1/namespaces/ns/configmaps/cm",
                        [&](const httplib::Request& request, httplib::Response& response) {
                          std::lock_guard lock(mutex);
                          received = request.body;
                          response.set_content("{}", "application/json");
                        });
  server.start();
  auto client = server.client();
  nlohmann::json patch = {{"data", {{"message", std::string("caf\xe9 down")}}}};
  auto patched = client.patch(vscaler::kube::resources::kConfigMaps, "ns", "cm",
                              vscaler::kube::PatchType::kMerge, patch);
  REQUIRE(patched.ok());
  std::lock_guard lock(mutex);
  CHECK(received == "{\"data\":{\"message\":\"caf\xef\xbf\xbd down\"}}");
}

namespace {

// A stand-in API server that records the bearer token of every request and answers 401 to
// `refused`, after `refusal_delay`. One worker; with a delay, one request per connection, so that
// a second client connection is served as soon as the first request is answered.
class TokenServer : public vscaler::testing::LocalHttpServer {
 public:
  explicit TokenServer(std::string refused,
                       std::chrono::milliseconds refusal_delay = std::chrono::milliseconds(0))
      : refused_(std::move(refused)) {
    server().Get("/api",
                 [this, refusal_delay](const httplib::Request& req, httplib::Response& res) {
                   std::string token = req.get_header_value("Authorization");
                   {
                     std::lock_guard lock(mutex_);
                     seen_.push_back(token);
                   }
                   bool refusing = token == "Bearer " + refused_;
                   if (refusing) std::this_thread::sleep_for(refusal_delay);
                   res.status = refusing ? 401 : 200;
                   res.set_content("{}", "application/json");
                 });
    server().new_task_queue = [] { return new httplib::ThreadPool(1); };
    if (refusal_delay.count() > 0) server().set_keep_alive_max_count(1);
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  std::string refused_;
  std::mutex mutex_;
  std::vector<std::string> seen_;
};

// A credential plugin printing "fresh-N" at its Nth run (counted in a file next to it), valid
// until 2099; `then` runs after the count (a sleep, an exit).
struct CountingPlugin {
  vscaler::testing::TempDir dir;
  std::shared_ptr<vscaler::kube::ExecPlugin> plugin = std::make_shared<vscaler::kube::ExecPlugin>();
  explicit CountingPlugin(const std::string& then = "") {
    plugin->api_version = "client.authentication.k8s.io/v1";
    plugin->command =
        dir.script("plugin.sh",
                   "n=$(( $(cat \"$(dirname \"$0\")/runs\" 2>/dev/null || echo 0) + 1 ))\n"
                   "echo $n > \"$(dirname \"$0\")/runs\"\n" +
                       then +
                       "\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                       "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"fresh-'$n'\","
                       "\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}'\n");
    plugin->where = "test: users[u].user.exec";
  }
  int runs() const { return std::atoi(dir.read("runs").c_str()); }
};

}  // namespace

TEST_CASE("a credential plugin's token is renewed when it expires, by one run for all requests") {
  TokenServer server("");
  server.start();
  CountingPlugin plugin;
  ClientConfig config = server.config();
  config.token = "loaded";
  config.token_expires = std::chrono::time_point_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now() - 1s);
  config.exec_plugin = plugin.plugin;
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest request;
  request.target = "/api";
  for (int i = 0; i < 3; ++i) CHECK((*transport)->send(request).ok());
  CHECK(server.seen() ==
        std::vector<std::string>{"Bearer fresh-1", "Bearer fresh-1", "Bearer fresh-1"});
  CHECK(plugin.runs() == 1);
  CHECK((*transport)->stats().token_reloads == 1);
}

TEST_CASE("a 401 runs the credential plugin again and the request goes out once more") {
  TokenServer server("revoked");
  server.start();
  CountingPlugin plugin;
  ClientConfig config = server.config();
  config.token = "revoked";  // no expiry: valid until the API server says otherwise
  config.exec_plugin = plugin.plugin;
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest request;
  request.target = "/api";
  auto first = (*transport)->send(request);
  REQUIRE(first.ok());
  CHECK(first->status == 200);
  CHECK((*transport)->send(request).ok());
  CHECK(server.seen() ==
        std::vector<std::string>{"Bearer revoked", "Bearer fresh-1", "Bearer fresh-1"});
  CHECK(plugin.runs() == 1);
}

TEST_CASE("a 401 while the plugin runs for another request waits for its token, one run for both") {
  TokenServer server("revoked", 200ms);
  server.start();
  CountingPlugin plugin("sleep 0.5");
  ClientConfig config = server.config();
  config.token = "revoked";
  config.exec_plugin = plugin.plugin;
  config.max_connections = 2;
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest request;
  request.target = "/api";
  // The first request's 401 comes at 200 ms and starts the plugin (until 700 ms); the second,
  // sent at 100 ms with the old token, is answered 401 at 400 ms, while the plugin runs, and
  // must retry with the token that run gives, not give up because a run just happened.
  using Answer = vscaler::base::Result<vscaler::kube::HttpResponse, vscaler::kube::ApiError>;
  Answer first = vscaler::kube::HttpResponse{};
  Answer second = vscaler::kube::HttpResponse{};
  std::thread one([&] { first = (*transport)->send(request); });
  std::this_thread::sleep_for(100ms);
  std::thread two([&] { second = (*transport)->send(request); });
  one.join();
  two.join();
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first->status == 200);
  CHECK(second->status == 200);
  CHECK(plugin.runs() == 1);
}

TEST_CASE("a plugin that fails keeps the last token and is not run again within 10 s") {
  TokenServer server("revoked");
  server.start();
  CountingPlugin plugin("exit 1");
  ClientConfig config = server.config();
  config.token = "revoked";
  config.exec_plugin = plugin.plugin;
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());
  HttpRequest request;
  request.target = "/api";
  for (int i = 0; i < 3; ++i) {
    auto answer = (*transport)->send(request);
    REQUIRE(answer.ok());
    CHECK(answer->status == 401);
  }
  CHECK(plugin.runs() == 1);
  CHECK(server.seen() ==
        std::vector<std::string>{"Bearer revoked", "Bearer revoked", "Bearer revoked"});
}
