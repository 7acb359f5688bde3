// The admission front end's memory budget (--webhook-max-buffered-bytes) over real TLS on
// loopback: bodies, unfinished heads and connections' TLS buffers held within one budget, room made
// by closing connections never answered or stalled, a queued body's share kept until its job
// ends, and a TLS metrics port holding its connections within a budget of its own.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/front_end.h"
#include "net/health_server.h"
#include "net/http.h"
#include "net/tls.h"
#include "test/unit/net/front_end_fixture.h"
#include "test/unit/support/eventually.h"

// The fixture's namespace brings its helpers and the names they use (RawTlsClient, http, ...).
using namespace vscaler::testing::front_end;

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

TEST_CASE("front end: a head sent whole is never charged, though it is read 4 KiB at a time") {
  // A new connection may fill half the budget: its TLS buffers and 4 KiB of head more. A 12 KiB
  // head in one record is read in three pieces, and only a head whose record has been read to
  // its end is charged (what the buffer holds beyond 4 KiB): the whole one is served, the same
  // head sent in two records waits charged between them and is refused.
  Server s([](AdmissionServerOptions& options) {
    options.max_buffered_body_bytes = 2 * vscaler::net::tls::Stream::kBufferBytes + 8 * 1024;
    options.event_loops = 1;
  });
  const std::string body =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE"}})";
  const std::string head =
      "POST /allow HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(12 * 1024, 'a') +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n";
  auto whole = s.connect();
  REQUIRE(whole->ok());
  REQUIRE(whole->send(head + body));
  auto answer = whole->read_response();
  CHECK(answer.substr(0, answer.find("\r\n")) == "HTTP/1.1 200 OK");
  whole.reset();
  auto split = s.connect();
  REQUIRE(split->ok());
  REQUIRE(split->send(head.substr(0, 12 * 1024)));
  std::this_thread::sleep_for(50ms);  // read and charged before the rest arrives
  split->send(head.substr(12 * 1024) + body);
  answer = split->read_response();
  CHECK(answer.substr(0, answer.find("\r\n")) == "HTTP/1.1 503 Service Unavailable");
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

TEST_CASE("front end: a TLS metrics port holds its connections' buffers within its own budget") {
  // Each TLS connection costs ~50 KiB before it says anything (OpenSSL's buffers); the metrics
  // port allows thousands. Within its budget (half of it for connections never answered) a
  // newcomer closes the oldest silent one, so scrapes still get in, and the webhook port, whose
  // budget is its own, is not touched by any of it.
  constexpr std::size_t kUnit = vscaler::net::tls::Stream::kBufferBytes;
  Server s([](AdmissionServerOptions& options) { options.event_loops = 1; });
  vscaler::net::HealthServer metrics("127.0.0.1:0", s.registry, "metrics");
  metrics.serve_tls(*s.certs);
  metrics.limit_held_bytes(8 * kUnit);
  REQUIRE(metrics.start().ok());
  auto evicted = [&] {
    return s.metric(R"(vscaler_metrics_rejected_total{reason="evicted_at_capacity"})");
  };
  std::vector<int> held;
  for (int i = 0; i < 6; ++i) {
    held.push_back(connect_from("127.0.0.2", metrics.port()));  // in their handshakes
    REQUIRE(held.back() >= 0);
    std::this_thread::sleep_for(20ms);
  }
  CHECK(vscaler::testing::eventually([&] { return evicted() == 2; }));
  CHECK(closed_by_peer_within(held[0], 2s));  // the oldest went first
  CHECK(closed_by_peer_within(held[1], 2s));
  CHECK_FALSE(closed_by_peer_within(held[5], 200ms));
  CHECK(s.metric("vscaler_metrics_open_connections") == 4);
  RawTlsClient scrape(metrics.port(), TLS1_2_VERSION, TLS1_3_VERSION, s.ca.cert_pem());
  REQUIRE(scrape.ok());
  scrape.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(scrape.read_response().rfind("HTTP/1.1 200", 0) == 0);
  CHECK(evicted() == 3);  // the scrape made room for itself
  CHECK(s.review() == "HTTP/1.1 200 OK");
  CHECK(s.metric(R"(vscaler_webhook_rejected_total{reason="evicted_at_capacity"})") == 0);
  for (int fd : held) ::close(fd);
  metrics.stop();
}
