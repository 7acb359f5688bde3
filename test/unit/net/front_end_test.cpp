// The admission front end's own pieces: the HTTP head parser, the connection limiter, and over
// real TLS on loopback the per-address cap, idle connections that hold no worker, deadlines and
// byte budgets.
#include "net/front_end.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/connection_limiter.h"
#include "net/http.h"
#include "net/tls.h"
#include "test/unit/support/eventually.h"
#include "test/unit/webhook/started_server.h"
#include "test/unit/webhook/tls_fixture.h"
#include "webhook/server.h"

using namespace std::chrono_literals;
using vscaler::metrics::Registry;
using vscaler::net::Admit;
using vscaler::net::CertWatcher;
using vscaler::net::CertWatcherOptions;
using vscaler::net::ConnectionLimiter;
using vscaler::testing::closed_by_peer_within;
using vscaler::testing::PemPair;
using vscaler::testing::RawTlsClient;
using vscaler::testing::TempDir;
using vscaler::testing::TestCa;
using vscaler::testing::write_file;
using vscaler::webhook::AdmissionRequest;
using vscaler::webhook::AdmissionResponse;
using vscaler::webhook::AdmissionServer;
using vscaler::webhook::AdmissionServerOptions;
namespace http = vscaler::net::http;

namespace {

// A front end on a free loopback port with one worker and one event loop, counting into
// `registry`.
vscaler::net::FrontEndOptions one_of_each(Registry& registry) {
  vscaler::net::FrontEndOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.workers = 1;
  options.event_loops = 1;
  options.registry = &registry;
  return options;
}

// A started server answering POST /allow, with its own registry and options.
struct Server : vscaler::testing::StartedServer {
  using StartedServer::StartedServer;

  double metric(const std::string& sample) const {
    auto text = registry.render();
    auto at = text.find("\n" + sample + " ");
    if (at == std::string::npos) return 0;
    return std::stod(text.substr(at + sample.size() + 2));
  }

  std::unique_ptr<RawTlsClient> connect() const {
    return std::make_unique<RawTlsClient>(server->port(), TLS1_2_VERSION, TLS1_3_VERSION,
                                          ca.cert_pem());
  }

  // One review on a fresh connection; its HTTP status line.
  std::string review() const {
    auto client = connect();
    if (!client->ok()) return "handshake failed: " + client->error();
    std::string body =
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE"}})";
    client->send(
        "POST /allow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    auto response = client->read_response();
    return response.substr(0, response.find("\r\n"));
  }
};

// A TCP connection from `source` (a loopback address) to 127.0.0.1:port; -1 on failure.
int connect_from(const char* source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<std::uint16_t>(port));
  remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A POST of an AdmissionReview with uid `uid` to `path`, its object padded with `pad` bytes.
std::string review_request(const std::string& path, const std::string& uid, std::size_t pad) {
  std::string body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                     R"("request":{"uid":")" +
                     uid + R"(","operation":"CREATE","object":{"pad":")" + std::string(pad, 'a') +
                     R"("}}})";
  return "POST " + path +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Registers `path` as a quick handler (HandlerOptions::quick) allowing every review.
void quick_route(AdmissionServer& server, const std::string& path) {
  vscaler::webhook::HandlerOptions options;
  options.quick = true;
  server.handle(
      path, [](const AdmissionRequest&) { return AdmissionResponse::allow(); }, options);
}

// A handler that holds its worker until release() (or 5 s), for tests that need every worker
// busy.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  int entered = 0;
  bool open = false;

  AdmissionResponse hold() {
    std::unique_lock lock(mutex);
    ++entered;
    changed.notify_all();
    changed.wait_for(lock, 5s, [this] { return open; });
    return AdmissionResponse::allow();
  }
  bool wait_entered(int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 2s, [&] { return entered >= count; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

}  // namespace

TEST_CASE("http: request heads are parsed strictly and only once complete") {
  http::RequestHead head;
  std::size_t scanned = 0;  // a new head each call: the search starts at its beginning
  CHECK(http::parse_head("POST /a HTTP/1.1\r\nHost: x\r\n", head, scanned).status ==
        http::HeadStatus::kIncomplete);
  std::string text =
      "\r\nPOST /mutate?timeout=2s HTTP/1.1\r\nHost:  x \r\nContent-Length: 2\r\n\r\n{}";
  scanned = 0;
  auto parsed = http::parse_head(text, head, scanned);
  REQUIRE(parsed.status == http::HeadStatus::kComplete);
  CHECK(parsed.consumed == text.size() - 2);
  CHECK(head.method == "POST");
  CHECK(head.path == "/mutate");
  CHECK(head.target == "/mutate?timeout=2s");
  CHECK(head.header("host") == "x");
  CHECK(head.count("CONTENT-LENGTH") == 1);
  scanned = 0;
  CHECK(http::parse_head("GET / HTTP/1.0\r\n\r\n", head, scanned).status ==
        http::HeadStatus::kComplete);
  CHECK(head.minor_version == 0);

  for (const char* bad :
       {"POST /a HTTP/2.0\r\n\r\n", "POST  HTTP/1.1\r\n\r\n",
        "POST /a HTTP/1.1\r\nBad Name: x\r\n\r\n", "POST /a HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
        "POST /a HTTP/1.1\r\nX: a\x01\r\n\r\n", "P\"ST /a HTTP/1.1\r\n\r\n"}) {
    scanned = 0;
    auto result = http::parse_head(bad, head, scanned);
    CHECK_MESSAGE(result.status == http::HeadStatus::kMalformed, bad);
    CHECK_FALSE(result.error.empty());
  }
  CHECK(http::parse_length("123") == 123u);
  CHECK_FALSE(http::parse_length("-1"));
  CHECK_FALSE(http::parse_length("1 2"));
  CHECK_FALSE(http::parse_length("1234567890123456789"));
  CHECK(http::has_token("keep-alive, Close", "close"));
  CHECK_FALSE(http::has_token("closed", "close"));
  CHECK(http::serialize({404, http::kText, "no\n", {{"Allow", "POST"}}, false, nullptr}, false) ==
        "HTTP/1.1 404 Not Found\r\nAllow: POST\r\nConnection: close\r\nContent-Type: "
        "text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nno\n");
}

TEST_CASE("http: a head arriving a byte at a time costs its length, not its length squared") {
  // A client may send the head one byte per TLS record; every read asks parse_head again. With
  // the search resumed where it stopped, 64 KiB of '\r' bytes (each a near match of the blank
  // line) take microseconds; searched from the start each time, seconds of the loop thread.
  std::string buffer = "POST /mutate-deployments HTTP/1.1\r\nX: ";
  http::RequestHead head;
  std::size_t scanned = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 64 * 1024; ++i) {
    buffer += '\r';
    REQUIRE(http::parse_head(buffer, head, scanned).status == http::HeadStatus::kIncomplete);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
  CHECK(scanned == buffer.size() - 3);
  // The blank line is found across the boundary of two reads.
  buffer = "GET / HTTP/1.1\r\nHost: x\r\n\r";
  scanned = 0;
  CHECK(http::parse_head(buffer, head, scanned).status == http::HeadStatus::kIncomplete);
  buffer += "\n";
  auto parsed = http::parse_head(buffer, head, scanned);
  CHECK(parsed.status == http::HeadStatus::kComplete);
  CHECK(parsed.consumed == buffer.size());
  // A few empty lines before the request are skipped; a stream of them is refused.
  std::string padded;
  for (std::size_t i = 0; i < http::kMaxLeadingEmptyLines; ++i) padded += "\r\n";
  scanned = 0;
  CHECK(http::parse_head(padded + "GET / HTTP/1.1\r\n\r\n", head, scanned).status ==
        http::HeadStatus::kComplete);
  scanned = 0;
  CHECK(http::parse_head(padded + "\r\nGET / HTTP/1.1\r\n\r\n", head, scanned).status ==
        http::HeadStatus::kMalformed);
}

TEST_CASE("connection limiter: a cap in total and per address, slots given back") {
  ConnectionLimiter limiter(3, 2);
  CHECK(limiter.acquire("a") == Admit::kOk);
  CHECK(limiter.acquire("a") == Admit::kOk);
  CHECK(limiter.acquire("a") == Admit::kPerAddress);
  CHECK(limiter.acquire("b") == Admit::kOk);
  CHECK(limiter.acquire("c") == Admit::kTotal);
  CHECK(limiter.open() == 3);
  limiter.release("a");
  CHECK(limiter.open_from("a") == 1);
  CHECK(limiter.acquire("c") == Admit::kOk);
  limiter.release("a");
  limiter.release("b");
  limiter.release("c");
  CHECK(limiter.open() == 0);
  CHECK(limiter.open_from("a") == 0);
}

TEST_CASE("front end: the per-address cap refuses one client without touching another") {
  Server s([](AdmissionServerOptions& options) { options.max_connections_per_address = 3; });
  std::vector<std::unique_ptr<RawTlsClient>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(s.connect());
    REQUIRE(held.back()->ok());
  }
  // The fourth from 127.0.0.1 is closed at once, before any TLS.
  int fd = vscaler::testing::connect_local(s.server->port());
  REQUIRE(fd >= 0);
  CHECK(closed_by_peer_within(fd, 2s));
  ::close(fd);
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="too_many_connections_per_address"})") ==
        1);
  // Another address is not affected.
  int other = connect_from("127.0.0.2", s.server->port());
  REQUIRE(other >= 0);
  CHECK_FALSE(closed_by_peer_within(other, 300ms));
  ::close(other);
  // A slot given back is usable again.
  held.pop_back();
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (s.metric("vscaler_webhook_open_connections") > 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  CHECK(s.review() == "HTTP/1.1 200 OK");
}

TEST_CASE("front end: at the total cap a newcomer is served; the idle connection due first goes") {
  // Refusing newcomers at the cap let a few clients holding idle connections shut out everyone
  // after them (the kubelet's probes, the API server).
  Server s([](AdmissionServerOptions& options) {
    options.max_connections = 3;
    options.event_loops = 1;
  });
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(connect_from("127.0.0.2", s.server->port()));  // idle, in their handshakes
    REQUIRE(held.back() >= 0);
    std::this_thread::sleep_for(20ms);  // the first opened is the first due
  }
  CHECK(vscaler::testing::eventually(
      [&] { return s.metric("vscaler_webhook_open_connections") == 3; }));
  CHECK(s.review() == "HTTP/1.1 200 OK");
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="evicted_at_capacity"})") == 1);
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="too_many_connections"})") == 0);
  CHECK(closed_by_peer_within(held[0], 2s));           // the oldest went
  CHECK_FALSE(closed_by_peer_within(held[2], 200ms));  // the newest stays
  for (int fd : held) ::close(fd);
}

TEST_CASE("front end: at the total cap a client that was answered is never closed for another") {
  // Its keep-alive deadline (idle_buffer_release, 500 ms after an answer) comes first, but it is
  // the API server's connection: only never-served ones make room.
  Server s([](AdmissionServerOptions& options) {
    options.max_connections = 2;
    options.event_loops = 1;
  });
  const std::string request = review_request("/allow", "u1", 10);
  auto served = s.connect();
  REQUIRE(served->ok());
  served->send(request);
  CHECK(served->read_response().rfind("HTTP/1.1 200", 0) == 0);
  int idle = connect_from("127.0.0.2", s.server->port());
  REQUIRE(idle >= 0);
  CHECK(vscaler::testing::eventually(
      [&] { return s.metric("vscaler_webhook_open_connections") == 2; }));
  CHECK(s.review() == "HTTP/1.1 200 OK");  // the never-served one made room
  CHECK(closed_by_peer_within(idle, 2s));
  ::close(idle);
  served->send(request);  // still open, still answered
  CHECK(served->read_response().rfind("HTTP/1.1 200", 0) == 0);
  // With only served connections left, a newcomer is refused as before.
  auto second = s.connect();
  REQUIRE(second->ok());
  second->send(request);
  CHECK(second->read_response().rfind("HTTP/1.1 200", 0) == 0);
  int refused = vscaler::testing::connect_local(s.server->port());
  REQUIRE(refused >= 0);
  CHECK(closed_by_peer_within(refused, 2s));
  ::close(refused);
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="too_many_connections"})") == 1);
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="evicted_at_capacity"})") == 1);
}

TEST_CASE("front end: idle connections hold no worker; one worker serves past 200 of them") {
  Server s([](AdmissionServerOptions& options) { options.workers = 1; });
  std::vector<std::unique_ptr<RawTlsClient>> idle;
  for (int i = 0; i < 200; ++i) {
    idle.push_back(s.connect());
    REQUIRE(idle.back()->ok());
  }
  CHECK(s.metric("vscaler_webhook_open_connections") == 200);
  auto start = std::chrono::steady_clock::now();
  CHECK(s.review() == "HTTP/1.1 200 OK");
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  // TLS 1.3: a client is done before the server read its Finished, so the last idle
  // connections' handshakes may end on their loops after the review was answered on another.
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (s.metric("vscaler_webhook_tls_handshake_seconds_count") < 201 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  CHECK(s.metric("vscaler_webhook_tls_handshake_seconds_count") == 201);
  // Handshakes of one client at a time: well under a second each on average.
  CHECK(s.metric("vscaler_webhook_tls_handshake_seconds_sum") / 201 < 1.0);
}

TEST_CASE("front end: idle keep-alive connections are closed after keep_alive_timeout") {
  Server s([](AdmissionServerOptions& options) { options.keep_alive_timeout = 1s; });
  auto client = s.connect();
  REQUIRE(client->ok());
  auto start = std::chrono::steady_clock::now();
  CHECK(closed_by_peer_within(client->fd(), 3s));
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 900ms);
  CHECK(elapsed < 2s);
}

TEST_CASE("front end: a connection idle past idle_buffer_release answers again, closed on time") {
  // Its TLS and request buffers are freed after 50 ms idle; the next review allocates them
  // again, and freeing them moves neither the keep-alive deadline nor the TLS state.
  Server s([](AdmissionServerOptions& options) {
    options.idle_buffer_release = 50ms;
    options.keep_alive_timeout = 1s;
  });
  auto client = s.connect();
  REQUIRE(client->ok());
  for (int i = 1; i <= 3; ++i) {
    CAPTURE(i);
    std::this_thread::sleep_for(200ms);  // past the release (the first: after the handshake)
    REQUIRE(client->send(review_request("/allow", "u-" + std::to_string(i), 30000)));
    CHECK(client->read_response().substr(0, 15) == "HTTP/1.1 200 OK");
  }
  auto start = std::chrono::steady_clock::now();
  CHECK(closed_by_peer_within(client->fd(), 3s));
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 900ms);
  CHECK(elapsed < 2s);
}

TEST_CASE("tls: a stream frees its buffers only when no record is read ahead") {
  vscaler::testing::StartedServer s([](AdmissionServerOptions&) {});
  auto ctx = vscaler::net::tls::make_server_context(*s.certs, /*offer_http2=*/false);
  REQUIRE(ctx.ok());
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
  vscaler::net::tls::Stream server(ctx->get(), fds[0]);
  REQUIRE(server.ok());
  SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
  SSL* client = SSL_new(client_ctx);
  SSL_set_fd(client, fds[1]);
  SSL_set_connect_state(client);
  using vscaler::net::tls::Io;
  bool client_done = false;
  bool server_done = false;
  for (int i = 0; i < 100 && !(client_done && server_done); ++i) {
    if (!client_done) client_done = SSL_do_handshake(client) == 1;
    if (!server_done) server_done = server.handshake() == Io::kDone;
  }
  REQUIRE(client_done);
  REQUIRE(server_done);
  // Two records in one go: read-ahead takes both, the first read returns only the first.
  REQUIRE(SSL_write(client, "first", 5) == 5);
  REQUIRE(SSL_write(client, "second", 6) == 6);
  std::string in;
  Io io = Io::kWantRead;
  for (int i = 0; i < 100 && io == Io::kWantRead; ++i) io = server.read(in, 5);
  REQUIRE(io == Io::kDone);
  CHECK(in == "first");
  CHECK(server.pending());
  CHECK_FALSE(server.release_buffers());  // "second" waits in the read buffer: kept
  CHECK(server.read(in, 64) == Io::kDone);
  CHECK(in == "firstsecond");
  CHECK(server.release_buffers());
  // Freed buffers come back for the next record, both ways.
  REQUIRE(SSL_write(client, "third", 5) == 5);
  io = Io::kWantRead;
  for (int i = 0; i < 100 && io == Io::kWantRead; ++i) io = server.read(in, 64);
  CHECK(in == "firstsecondthird");
  std::string answer = "answer";
  std::size_t offset = 0;
  CHECK(server.write(answer, offset) == Io::kDone);
  char buffer[16];
  int n = SSL_read(client, buffer, sizeof buffer);
  CHECK(std::string(buffer, static_cast<std::size_t>(std::max(n, 0))) == "answer");
  SSL_free(client);
  SSL_CTX_free(client_ctx);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("tls: AES-128-GCM is chosen first, as Go's TLS does; other suites are still served") {
  vscaler::testing::StartedServer s([](AdmissionServerOptions&) {});
  auto ctx = vscaler::net::tls::make_server_context(*s.certs, /*offer_http2=*/false);
  REQUIRE(ctx.ok());
  // The suite a client configured by `configure` ends up with.
  auto negotiated = [&](auto configure) {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
    vscaler::net::tls::Stream server(ctx->get(), fds[0]);
    SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
    configure(client_ctx);
    SSL* client = SSL_new(client_ctx);
    SSL_set_fd(client, fds[1]);
    SSL_set_connect_state(client);
    bool client_done = false;
    bool server_done = false;
    for (int i = 0; i < 100 && !(client_done && server_done); ++i) {
      if (!client_done) client_done = SSL_do_handshake(client) == 1;
      if (!server_done) server_done = server.handshake() == vscaler::net::tls::Io::kDone;
    }
    std::string suite = client_done && server_done ? SSL_get_cipher_name(client) : "failed";
    SSL_free(client);
    SSL_CTX_free(client_ctx);
    ::close(fds[0]);
    ::close(fds[1]);
    return suite;
  };
  // OpenSSL's own client offers AES-256-GCM first; the server's order decides.
  CHECK(negotiated([](SSL_CTX*) {}) == "TLS_AES_128_GCM_SHA256");
  CHECK(negotiated([](SSL_CTX* c) { SSL_CTX_set_ciphersuites(c, "TLS_AES_256_GCM_SHA384"); }) ==
        "TLS_AES_256_GCM_SHA384");
  CHECK(negotiated([](SSL_CTX* c) {
          SSL_CTX_set_ciphersuites(c, "TLS_CHACHA20_POLY1305_SHA256");
        }) == "TLS_CHACHA20_POLY1305_SHA256");
  // TLS 1.2, forward-secret AEAD suites only, in the same order.
  CHECK(negotiated([](SSL_CTX* c) { SSL_CTX_set_max_proto_version(c, TLS1_2_VERSION); }) ==
        "ECDHE-ECDSA-AES128-GCM-SHA256");
  CHECK(negotiated([](SSL_CTX* c) {
          SSL_CTX_set_max_proto_version(c, TLS1_2_VERSION);
          SSL_CTX_set_cipher_list(c, "ECDHE-ECDSA-AES256-GCM-SHA384");
        }) == "ECDHE-ECDSA-AES256-GCM-SHA384");
  CHECK(negotiated([](SSL_CTX* c) {
          SSL_CTX_set_max_proto_version(c, TLS1_2_VERSION);
          SSL_CTX_set_cipher_list(c, "ECDHE-ECDSA-AES128-SHA256");  // CBC, not AEAD: refused
        }) == "failed");
}

TEST_CASE("front end: a keep-alive connection is closed after keep_alive_max_requests answers") {
  // The default is high: each reconnection costs the client a TLS handshake (~2 ms here) that
  // delays the requests due meanwhile (bench/sections/webhook.sh's p99 at 2,000 reviews/s).
  CHECK(AdmissionServerOptions{}.keep_alive_max_requests >= 10000);
  Server s([](AdmissionServerOptions& options) { options.keep_alive_max_requests = 3; });
  auto client = s.connect();
  REQUIRE(client->ok());
  for (int i = 1; i <= 3; ++i) {
    CAPTURE(i);
    REQUIRE(client->send(review_request("/allow", "u-" + std::to_string(i), 10)));
    auto response = client->read_response();
    CHECK(response.substr(0, 15) == "HTTP/1.1 200 OK");
    bool closing = response.find("Connection: close") != std::string::npos;
    CHECK(closing == (i == 3));
  }
  CHECK(closed_by_peer_within(client->fd(), 2s));
}

TEST_CASE("front end: a head over its byte budget is cut, one within it is served") {
  Server s([](AdmissionServerOptions& options) { options.max_header_bytes = 1024; });
  {
    auto client = s.connect();
    REQUIRE(client->ok());
    client->send("POST /allow HTTP/1.1\r\nX-Big: " + std::string(2000, 'a'));
    CHECK(closed_by_peer_within(client->fd(), 2s));
    CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="headers_too_large"})") == 1);
  }
  CHECK(s.review() == "HTTP/1.1 200 OK");
}

TEST_CASE("front end: pipelined reviews in one write are all answered, in order") {
  // Three 20 KB reviews sent at once: with TLS read-ahead OpenSSL holds records of the next
  // request while one is served; the connection must read them after each response instead of
  // waiting for the socket (nothing more arrives), or this hangs until the client's timeout.
  // On a quick path the loop serves them itself, one per turn (Wait::again).
  Server s([](AdmissionServerOptions&) {}, {"/allow"},
           [](AdmissionServer& server) { quick_route(server, "/quick"); });
  for (const char* path : {"/allow", "/quick"}) {
    CAPTURE(path);
    auto client = s.connect();
    REQUIRE(client->ok());
    std::string pipelined;
    for (int i = 0; i < 3; ++i) pipelined += review_request(path, "u-" + std::to_string(i), 20000);
    REQUIRE(client->send(pipelined));
    std::string answers;
    auto count = [&answers] {
      std::size_t n = 0;
      for (auto at = answers.find("HTTP/1.1 200 OK"); at != std::string::npos;
           at = answers.find("HTTP/1.1 200 OK", at + 1)) {
        ++n;
      }
      return n;
    };
    char buffer[4096];
    while (count() < 3 || answers.find(R"("uid":"u-2")") == std::string::npos) {
      int n = SSL_read(client->ssl(), buffer, sizeof buffer);
      if (n <= 0) break;  // closed, or the client's read timeout
      answers.append(buffer, static_cast<std::size_t>(n));
    }
    CHECK(count() == 3);
    auto first = answers.find(R"("uid":"u-0")");
    auto second = answers.find(R"("uid":"u-1")");
    auto third = answers.find(R"("uid":"u-2")");
    REQUIRE(third != std::string::npos);
    CHECK(first < second);
    CHECK(second < third);
  }
}

TEST_CASE("front end: a quick handler's small reviews are answered while every worker is busy") {
  Gate gate;
  Server s(
      [](AdmissionServerOptions& options) {
        options.workers = 1;
        options.max_quick_body_bytes = 4096;
      },
      {},
      [&gate](AdmissionServer& server) {
        server.handle("/slow", [&gate](const AdmissionRequest&) { return gate.hold(); });
        quick_route(server, "/quick");
      });
  auto slow = s.connect();
  REQUIRE(slow->ok());
  REQUIRE(slow->send(review_request("/slow", "slow", 10)));
  REQUIRE(gate.wait_entered(1));  // the only worker is held
  auto quick = s.connect();
  REQUIRE(quick->ok());
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    REQUIRE(quick->send(review_request("/quick", "q-" + std::to_string(i), 100)));
    auto answer = quick->read_response();
    CHECK(answer.starts_with("HTTP/1.1 200 OK"));
    CHECK(answer.find(R"("uid":"q-)" + std::to_string(i) + "\"") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  // A body over max_quick_body_bytes waits for a worker, like every review of /slow.
  auto large = s.connect();
  REQUIRE(large->ok());
  REQUIRE(large->send(review_request("/quick", "large", 8000)));
  const std::string served =
      R"(controller_runtime_webhook_requests_total{webhook="/quick",code="200"})";
  std::this_thread::sleep_for(300ms);
  CHECK(s.metric(served) == 3);  // not served yet
  gate.release();
  CHECK(slow->read_response().starts_with("HTTP/1.1 200 OK"));
  auto answer = large->read_response();
  CHECK(answer.starts_with("HTTP/1.1 200 OK"));
  CHECK(answer.find(R"("uid":"large")") != std::string::npos);
}

TEST_CASE("front end: a quick handler that throws answers 500 and its loop serves on") {
  Server s([](AdmissionServerOptions&) {}, {},
           [](AdmissionServer& server) {
             vscaler::webhook::HandlerOptions options;
             options.quick = true;
             server.handle(
                 "/throw",
                 [](const AdmissionRequest& request) -> AdmissionResponse {
                   if (request.uid == "bad") throw std::runtime_error("boom");
                   return AdmissionResponse::allow();
                 },
                 options);
           });
  auto client = s.connect();
  REQUIRE(client->ok());
  REQUIRE(client->send(review_request("/throw", "bad", 10)));
  CHECK(client->read_response().starts_with("HTTP/1.1 500"));
  REQUIRE(client->send(review_request("/throw", "good", 10)));
  CHECK(client->read_response().starts_with("HTTP/1.1 200 OK"));
  CHECK(s.metric(R"(vscaler_webhook_internal_errors_total{where="handler"})") == 1);
}

TEST_CASE("front end: bodies beyond the memory budget of all connections get 503 unread") {
  Server s([](AdmissionServerOptions& options) { options.max_buffered_body_bytes = 1024 * 1024; });
  // A webhook body is charged 6 times its size (read buffer, the handler's copy, the parse): one
  // connection holds 600 KiB of the 1 MiB budget with a 100 KiB body (not sent yet).
  auto holder = s.connect();
  REQUIRE(holder->ok());
  holder->send("POST /allow HTTP/1.1\r\nHost: x\r\nContent-Length: 102400\r\n\r\n{");
  auto deadline = std::chrono::steady_clock::now() + 2s;
  auto client = s.connect();
  REQUIRE(client->ok());
  std::this_thread::sleep_for(100ms);  // the holder's head is read by now
  client->send("POST /allow HTTP/1.1\r\nHost: x\r\nContent-Length: 102400\r\n\r\n");
  auto response = client->read_response();
  CHECK(response.substr(0, response.find("\r\n")) == "HTTP/1.1 503 Service Unavailable");
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="memory_budget"})") == 1);
  // Small bodies still fit; once the holder is gone its share is free again.
  CHECK(s.review() == "HTTP/1.1 200 OK");
  holder.reset();
  while (s.metric("vscaler_webhook_open_connections") > 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  auto again = s.connect();
  REQUIRE(again->ok());
  again->send("POST /allow HTTP/1.1\r\nHost: x\r\nContent-Length: 102400\r\n\r\n" +
              std::string(102400, ' '));
  response = again->read_response();
  CHECK(response.substr(0, response.find("\r\n")) == "HTTP/1.1 400 Bad Request");  // not JSON
}

TEST_CASE("front end: heads beyond their first 4 KiB count against the memory budget") {
  // Never-answered connections hold their TLS buffers (~50 KiB) in the budget's first half: four
  // of them here. A head never finished adds its buffer beyond 4 KiB: with 60 KiB of headers
  // one such connection fills most of the half, so the next one makes room by evicting it (or
  // is refused, 503) and at most two stay open; with small heads all four do.
  Server s([](AdmissionServerOptions& options) {
    options.max_buffered_body_bytes = 8 * vscaler::net::tls::Stream::kBufferBytes;
    options.event_loops = 1;
  });
  auto held_with = [&](const std::string& head) {
    std::vector<std::unique_ptr<RawTlsClient>> holders;
    for (int i = 0; i < 12; ++i) {
      holders.push_back(s.connect());
      REQUIRE(holders.back()->ok());
      REQUIRE(holders.back()->send(head));
      std::this_thread::sleep_for(20ms);  // read by the server before the next one
    }
    return holders;
  };
  auto open = [&] { return s.metric("vscaler_webhook_open_connections"); };
  auto small = held_with("POST /allow HTTP/1.1\r\nHost: x\r\n");
  CHECK(vscaler::testing::eventually([&] { return open() == 4; }, 5s));
  small.clear();
  CHECK(vscaler::testing::eventually([&] { return open() == 0; }, 5s));
  // Those refused linger up to 2 s for their client to read the answer, then go.
  const std::string fat_head =
      "POST /allow HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(60 * 1024, 'a') + "\r\n";
  auto fat = held_with(fat_head);
  CHECK(vscaler::testing::eventually([&] { return open() <= 2; }, 5s));
  // Gone, they hold nothing: reviews are served again.
  fat.clear();
  CHECK(vscaler::testing::eventually([&] { return open() == 0; }, 5s));
  CHECK(s.review() == "HTTP/1.1 200 OK");
}

TEST_CASE("front end: connections' TLS buffers count against the budget; a newcomer makes room") {
  // Each connection in its handshake or a request holds OpenSSL's buffers (~50 KiB), charged to
  // the budget's first half until it was answered once: a budget of eight holds four never
  // answered. The fifth evicts the never-served one due first, as at the connection cap, and its
  // body fits in the other half; a connection idle for idle_buffer_release frees its buffers and
  // its share, and once answered it may take the second half.
  Server s([](AdmissionServerOptions& options) {
    options.max_buffered_body_bytes = 8 * vscaler::net::tls::Stream::kBufferBytes;
    options.event_loops = 1;
    options.idle_buffer_release = 50ms;
  });
  auto open = [&] { return s.metric("vscaler_webhook_open_connections"); };
  auto evicted = [&] {
    return s.metric(R"(vscaler_webhook_rejected_total{reason="evicted_at_capacity"})");
  };
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(connect_from("127.0.0.2", s.server->port()));  // in their handshakes
    REQUIRE(held.back() >= 0);
    std::this_thread::sleep_for(20ms);
  }
  CHECK(vscaler::testing::eventually([&] { return open() == 4; }));
  CHECK(s.review() == "HTTP/1.1 200 OK");
  CHECK(evicted() == 1);
  CHECK(closed_by_peer_within(held[0], 2s));           // the oldest went
  CHECK_FALSE(closed_by_peer_within(held[3], 200ms));  // the newest stays
  for (int fd : held) ::close(fd);
  // Served and idle past idle_buffer_release, a connection holds no share: four more fit.
  auto served = s.connect();
  REQUIRE(served->ok());
  served->send(review_request("/allow", "u1", 10));
  CHECK(served->read_response().rfind("HTTP/1.1 200", 0) == 0);
  CHECK(vscaler::testing::eventually([&] { return open() == 1; }));
  std::this_thread::sleep_for(1s);  // 20 times idle_buffer_release
  std::vector<std::unique_ptr<RawTlsClient>> more;
  for (int i = 0; i < 4; ++i) {
    more.push_back(s.connect());
    REQUIRE(more.back()->ok());
    REQUIRE(more.back()->send("P"));  // a request begun: charged until its deadline
  }
  CHECK(evicted() == 1);
  // The first half is full of them; the answered connection is charged again past it, and
  // nobody is evicted or refused for it.
  served->send(review_request("/allow", "u2", 10));
  CHECK(served->read_response().rfind("HTTP/1.1 200", 0) == 0);
  CHECK(evicted() == 1);
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="memory_budget"})") == 0);
  CHECK(open() == 5);
}

TEST_CASE("front end: bodies and connections' buffers together stay within one budget") {
  // Never-answered connections hold half of it (four TLS buffers of eight); a body charged more
  // than the other half is refused, one charged less is read, though the new connection it
  // comes on was never answered either and its head arrived with the body.
  constexpr std::size_t kUnit = vscaler::net::tls::Stream::kBufferBytes;
  Server s([](AdmissionServerOptions& options) {
    options.max_buffered_body_bytes = 8 * kUnit;
    options.event_loops = 1;
  });
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(connect_from("127.0.0.2", s.server->port()));  // in their handshakes
    REQUIRE(held.back() >= 0);
  }
  CHECK(vscaler::testing::eventually(
      [&] { return s.metric("vscaler_webhook_open_connections") == 4; }));
  // A webhook body is charged 6 times its size.
  auto post = [&](std::size_t charged) {
    auto client = s.connect();  // makes room for itself: the half stays full
    REQUIRE(client->ok());
    const std::size_t length = charged / 6;
    client->send("POST /allow HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(length) +
                 "\r\n\r\n" + std::string(length, ' '));
    auto answer = client->read_response();
    return answer.substr(0, answer.find("\r\n"));
  };
  CHECK(post(5 * kUnit) == "HTTP/1.1 503 Service Unavailable");
  CHECK(post(3 * kUnit) == "HTTP/1.1 400 Bad Request");  // read, and not JSON
  for (int fd : held) ::close(fd);
}

TEST_CASE("front end: a record begun on a connection idle past its buffer release is charged") {
  // Idle, a connection frees its TLS buffers and its share; the start of a record reallocates
  // them (and a record never finished keeps them): it is charged before that read, so the
  // stalled handshakes after it must each make room, evicting connections that hold a share,
  // not the idle one due first that holds none (which would leave the newcomer refused).
  Server s([](AdmissionServerOptions& options) {
    options.max_buffered_body_bytes = 8 * vscaler::net::tls::Stream::kBufferBytes;
    options.event_loops = 1;
    options.idle_buffer_release = 50ms;
    options.keep_alive_timeout = 5s;  // the idle ones are due before a handshake's 10 s
  });
  auto idle = s.connect();
  REQUIRE(idle->ok());
  std::this_thread::sleep_for(500ms);  // 10 times idle_buffer_release: released, uncharged
  std::vector<std::unique_ptr<RawTlsClient>> begun;
  for (int i = 0; i < 4; ++i) {
    begun.push_back(s.connect());
    REQUIRE(begun.back()->ok());
  }
  std::this_thread::sleep_for(1s);  // 20 times idle_buffer_release: all four released
  // Application data, 16 KiB announced, 3 bytes sent.
  const unsigned char record_start[] = {0x17, 0x03, 0x03, 0x40, 0x00, 'a', 'b', 'c'};
  for (const auto& client : begun) {
    REQUIRE(::write(client->fd(), record_start, sizeof record_start) ==
            static_cast<ssize_t>(sizeof record_start));
  }
  std::this_thread::sleep_for(200ms);
  std::vector<int> newcomers;
  for (int i = 0; i < 4; ++i) {
    newcomers.push_back(connect_from("127.0.0.2", s.server->port()));
    REQUIRE(newcomers.back() >= 0);
  }
  CHECK(vscaler::testing::eventually([&] {
    return s.metric(R"(vscaler_webhook_rejected_total{reason="evicted_at_capacity"})") == 4;
  }));
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="memory_budget"})") == 0);
  for (int fd : newcomers) ::close(fd);
}

TEST_CASE("front end: connections answered once and stalled mid-record give up their share") {
  // A client answered once (a 404 will do) may charge the whole budget, and one holding half a
  // TLS record keeps its buffers past the idle release: 40 such connections fill a budget of
  // 40, though each sends another byte of its record more often than the release. Waiting so
  // for twice the release, they are closed to make room: for the next request of a connection
  // answered before (the API server's kept-alive one, charged again after its release: one for
  // its buffers, one for its body), then for a newcomer, which may use only the budget's first
  // half (19 more; 20 when the kept-alive connection has not freed its buffers yet). Then 40
  // quiet ones, behind 260 idle connections due before them that hold nothing, are found too.
  constexpr std::size_t kUnits = 40;
  constexpr std::size_t kIdle = 260;
  Server s([](AdmissionServerOptions& options) {
    options.max_buffered_body_bytes = kUnits * vscaler::net::tls::Stream::kBufferBytes;
    options.event_loops = 1;
    options.idle_buffer_release = 50ms;
  });
  // `count` connections answered once, 15 at a time (a newcomer may use only the first half of
  // the budget, and an answered connection holds its buffers until its release).
  auto answered = [&](std::size_t count) {
    std::vector<std::unique_ptr<RawTlsClient>> clients;
    for (std::size_t i = 0; i < count; ++i) {
      clients.push_back(s.connect());
      REQUIRE(clients.back()->ok());
      REQUIRE(clients.back()->send(review_request("/allow", "u" + std::to_string(i), 10)));
      REQUIRE(clients.back()->read_response().rfind("HTTP/1.1 200", 0) == 0);
      if (i % 15 == 14) std::this_thread::sleep_for(60ms);
    }
    std::this_thread::sleep_for(200ms);  // 4 times idle_buffer_release: released, uncharged
    return clients;
  };
  // Application data, 16 KiB announced, 3 bytes sent: charged again before the read, and kept,
  // since OpenSSL cannot free buffers holding a record begun.
  auto begin_records = [](const std::vector<std::unique_ptr<RawTlsClient>>& clients) {
    const unsigned char record_start[] = {0x17, 0x03, 0x03, 0x40, 0x00, 'a', 'b', 'c'};
    for (const auto& client : clients) {
      REQUIRE(::write(client->fd(), record_start, sizeof record_start) ==
              static_cast<ssize_t>(sizeof record_start));
    }
  };
  auto evicted = [&] {
    return s.metric(R"(vscaler_webhook_rejected_total{reason="evicted_at_capacity"})");
  };
  auto open = [&] { return s.metric("vscaler_webhook_open_connections"); };
  auto api_server = answered(1);
  auto idle = answered(kIdle);

  auto trickling = answered(kUnits);
  begin_records(trickling);
  std::atomic<bool> more{true};
  std::thread trickle([&] {  // a byte every 20 ms
    while (more.load()) {
      for (const auto& client : trickling) ::send(client->fd(), "d", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(20ms);
    }
  });
  std::this_thread::sleep_for(500ms);  // 5 times the 100 ms they may wait
  CHECK(evicted() == 0);
  CHECK(open() == 1 + kIdle + kUnits);
  // The kept-alive connection's next request: stalled connections make room for it.
  REQUIRE(api_server[0]->send(review_request("/allow", "api-2", 10)));
  CHECK(api_server[0]->read_response().rfind("HTTP/1.1 200", 0) == 0);
  CHECK(evicted() == 2);
  CHECK(s.review() == "HTTP/1.1 200 OK");
  CHECK(evicted() >= 2 + 19);
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="memory_budget"})") == 0);
  more.store(false);
  trickle.join();
  // Only stalled connections went: the idle ones and the kept-alive one are all open.
  CHECK(vscaler::testing::eventually([&] { return open() == 1 + kIdle + kUnits - evicted(); }));
  int closed = 0;  // closed by the server already: their end of file is there
  for (const auto& client : trickling) closed += closed_by_peer_within(client->fd(), 10ms) ? 1 : 0;
  CHECK(closed == evicted());
  trickling.clear();
  REQUIRE(vscaler::testing::eventually([&] { return open() == 1 + kIdle; }));

  // Quiet ones, due after the idle connections: the kept-alive one's next request finds them.
  const double before = evicted();
  auto quiet = answered(kUnits);
  begin_records(quiet);
  std::this_thread::sleep_for(500ms);
  REQUIRE(api_server[0]->send(review_request("/allow", "api-3", 10)));
  CHECK(api_server[0]->read_response().rfind("HTTP/1.1 200", 0) == 0);
  CHECK(evicted() == before + 2);
  CHECK(open() == 1 + kIdle + kUnits - 2);
}

TEST_CASE("front end: a malformed head is answered 400 and the connection closed") {
  Server s([](AdmissionServerOptions&) {});
  auto client = s.connect();
  REQUIRE(client->ok());
  client->send("POST /allow HTTP/9\r\n\r\n");
  auto response = client->read_response();
  CHECK(response.substr(0, response.find("\r\n")) == "HTTP/1.1 400 Bad Request");
  CHECK(response.find("malformed request line") != std::string::npos);
  CHECK(client->read_response().empty());
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="bad_request"})") == 1);
}

TEST_CASE("http: query parameters of a request target (the API server's ?timeout=)") {
  using vscaler::net::http::query_parameter;
  CHECK(query_parameter("/mutate-deployments?timeout=2s", "timeout") == "2s");
  CHECK(query_parameter("/p?a=1&timeout=10s&b", "timeout") == "10s");
  CHECK(query_parameter("/p?a=1&b", "b") == "");
  CHECK_FALSE(query_parameter("/p?timeoutx=2s", "timeout").has_value());
  CHECK_FALSE(query_parameter("/p", "timeout").has_value());
  CHECK_FALSE(query_parameter("/p?", "timeout").has_value());
}

TEST_CASE("front end: what a response leaves to free is freed after it is written") {
  // The payload's destructor waits until the client holds the answer: freed before the write,
  // it would wait in vain (and record that); freed after it, it sees the answer arrive.
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    int answered = 0;
    int freed_after_answer = 0;
    int freed_before_answer = 0;
  };
  auto shared = std::make_shared<Shared>();
  struct Payload {
    Payload(std::shared_ptr<Shared> shared_state, int served_number)
        : shared(std::move(shared_state)), number(served_number) {}
    Payload(const Payload&) = delete;
    Payload& operator=(const Payload&) = delete;
    std::shared_ptr<Shared> shared;
    int number;
    ~Payload() {
      std::unique_lock lock(shared->mutex);
      bool seen = shared->changed.wait_for(lock, 2s, [&] { return shared->answered >= number; });
      ++(seen ? shared->freed_after_answer : shared->freed_before_answer);
      shared->changed.notify_all();
    }
  };
  int served = 0;
  auto serve = [&](vscaler::net::Request& request) {
    http::Response response{200, http::kText, "ok\n", {}, false, nullptr};
    response.free_after_write = std::make_shared<Payload>(shared, ++served);
    (void)request;
    return response;
  };
  Registry registry;
  vscaler::net::FrontEndOptions options = one_of_each(registry);
  // Both paths: served on the loop thread (/quick) and by a worker (/worker).
  vscaler::net::FrontEnd front_end(
      nullptr, options, serve,
      [](const http::RequestHead&, int, vscaler::net::Clock::time_point) {},
      [](const vscaler::net::Request& request) { return request.head.target == "/quick"; });
  auto port = front_end.start();
  REQUIRE(port.ok());
  httplib::Client client("127.0.0.1", *port);
  client.set_keep_alive(true);
  int number = 0;
  for (const char* path : {"/quick", "/worker", "/quick", "/worker"}) {
    auto result = client.Post(path, "{}", "application/json");
    REQUIRE(result);
    CHECK(result->body == "ok\n");
    std::unique_lock lock(shared->mutex);
    shared->answered = ++number;
    shared->changed.notify_all();
    // Freed by now (bounded: the payload waits 2 s at most).
    CHECK(shared->changed.wait_for(lock, 5s, [&] {
      return shared->freed_after_answer + shared->freed_before_answer == number;
    }));
  }
  front_end.stop(1s);
  CHECK(shared->freed_after_answer == 4);
  CHECK(shared->freed_before_answer == 0);
}

TEST_CASE("front end: a queued body keeps its share of the budget until its job ends") {
  // One worker held by the first request; the second waits in the queue with its body. Both
  // connections are cut at their request deadline: the budget must still count both bodies
  // (the jobs hold them), and the queued one, whose deadline passed, is dropped unserved.
  Gate gate;
  std::atomic<int> served{0};
  auto serve = [&](vscaler::net::Request&) {
    ++served;
    gate.hold();
    return http::Response{200, http::kText, "ok\n", {}, false, nullptr};
  };
  Registry registry;
  std::atomic<std::size_t> buffered{0};
  vscaler::net::FrontEndOptions options = one_of_each(registry);
  options.buffered = &buffered;
  options.limits.request_timeout = 500ms;
  vscaler::net::FrontEnd front_end(
      nullptr, options, serve,
      [](const http::RequestHead&, int, vscaler::net::Clock::time_point) {});
  auto port = front_end.start();
  REQUIRE(port.ok());
  constexpr std::size_t kBody = 100000;
  const std::string request =
      "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n" +
      std::string(kBody, 'a');
  auto send_all = [](int fd, const std::string& data) {
    for (std::size_t sent = 0; sent < data.size();) {
      ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  };
  int first = vscaler::testing::connect_local(*port);
  REQUIRE(first >= 0);
  REQUIRE(send_all(first, request));
  REQUIRE(gate.wait_entered(1));
  int second = vscaler::testing::connect_local(*port);
  REQUIRE(second >= 0);
  REQUIRE(send_all(second, request));
  CHECK(vscaler::testing::eventually([&] { return buffered.load() == 2 * kBody; }, 2s));
  CHECK(closed_by_peer_within(first, 2s));
  CHECK(closed_by_peer_within(second, 2s));
  ::close(first);
  ::close(second);
  CHECK(buffered.load() == 2 * kBody);  // closed connections, bodies still held
  gate.release();
  CHECK(vscaler::testing::eventually([&] { return buffered.load() == 0; }, 5s));
  CHECK(served.load() == 1);
  auto text = registry.render();
  CHECK(text.find("vscaler_webhook_rejected_total{reason=\"expired_in_queue\"} 1\n") !=
        std::string::npos);
  front_end.stop(1s);
}
