// The admission front end over real TLS on loopback: the connection limiter and the per-address
// cap, idle connections that hold no worker, deadlines, keep-alive, pipelining, quick handlers,
// and TLS's buffers and suites. Its memory budget: front_end_budget_test.cpp; the HTTP head
// parser: http_test.cpp.
#include "net/front_end.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/connection_limiter.h"
#include "net/http.h"
#include "net/tls.h"
#include "test/unit/net/front_end_fixture.h"
#include "test/unit/support/eventually.h"

using vscaler::net::Admit;
using vscaler::net::ConnectionLimiter;
// The fixture's namespace brings its helpers and the names they use (RawTlsClient, http, ...).
using namespace vscaler::testing::front_end;

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
