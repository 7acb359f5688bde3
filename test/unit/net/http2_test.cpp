// HTTP/2 on the admission front end, driven by a real HTTP/2 client (curl, built with nghttp2):
// ALPN picks h2, many requests share one connection as concurrent streams, every one is
// answered with the handler's review, a declared body over the limit gets 413 on its stream,
// and HTTP/1.1 clients are served as before; sessions that carried a stream and then hold half a
// TLS record give up their share of the memory budget. Then the session alone, fed by an nghttp2
// client through memory with the clock in the test's hands: streams answered before their request
// is complete are reset and freed, deadlines do not slide with traffic, and the decoded headers of
// one connection have a budget.
#include <doctest/doctest.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net/http2_session.h"
#include "test/unit/webhook/started_server.h"
#include "test/unit/webhook/tls_fixture.h"
#include "webhook/server.h"

using vscaler::metrics::Registry;
using vscaler::net::CertWatcher;
using vscaler::net::CertWatcherOptions;
using vscaler::testing::PemPair;
using vscaler::testing::TempDir;
using vscaler::testing::TestCa;
using vscaler::testing::write_file;
using vscaler::webhook::AdmissionRequest;
using vscaler::webhook::AdmissionResponse;
using vscaler::webhook::AdmissionServer;
using vscaler::webhook::AdmissionServerOptions;

namespace {

std::string read_data(const std::string& name) {
  std::ifstream file(std::string(VSCALER_TEST_DATA_DIR) + "/webhook/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A started server on loopback answering /mutate-deployments with "allowed", and the files
// curl reads (the CA, a recorded review).
struct Server : vscaler::testing::StartedServer {
  explicit Server(std::size_t max_body_bytes = 7 * 1024 * 1024,
                  std::chrono::milliseconds request_timeout = std::chrono::milliseconds(10000))
      : StartedServer(
            [&](AdmissionServerOptions& options) {
              options.max_body_bytes = max_body_bytes;
              options.request_timeout = request_timeout;
            },
            {"/mutate-deployments"}) {
    write_file(dir.file("ca.crt"), ca.cert_pem());
    write_file(dir.file("review.json"), read_data("deployment-update-review.json"));
  }

  std::string url() const {
    return "https://127.0.0.1:" + std::to_string(server->port()) + "/mutate-deployments";
  }

  // Runs curl with `arguments` against this server; its standard output.
  std::string curl(const std::string& arguments) const {
    std::string command = "curl -sS --cacert " + dir.file("ca.crt") +
                          " -H 'Content-Type: application/json' --data-binary @" +
                          dir.file("review.json") + " " + arguments + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    REQUIRE(pipe);
    std::string out;
    char buffer[4096];
    while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
    return out;
  }
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("http2: ALPN selects h2 and the review is answered on its stream") {
  Server server;
  std::string out = server.curl("--http2 -o /dev/null -w '%{http_version} %{http_code}\\n' " +
                                server.url() + "?timeout=2s");
  CHECK(out == "2 200\n");
  std::string body = server.curl("--http2 " + server.url());
  CHECK(body.find("\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\"") != std::string::npos);
  CHECK(body.find("\"allowed\":true") != std::string::npos);
}

TEST_CASE("http2: 40 concurrent requests share one connection, every one answered") {
  Server server;
  std::string urls;
  for (int i = 0; i < 40; ++i) urls += " " + server.url();
  // --parallel multiplexes transfers onto one HTTP/2 connection; num_connects counts the
  // connections each transfer had to open.
  std::string out =
      server.curl("--http2 --parallel --parallel-max 40 -o /dev/null -o /dev/null" +
                  std::string(" -w '%{http_version} %{http_code} %{num_connects}\\n'") + urls);
  CHECK(count(out, "2 200 ") == 40);
  std::size_t opened = count(out, " 1\n");
  CHECK(opened >= 1);
  CHECK(opened <= 2);  // one, or two when curl raced its first connection
}

TEST_CASE("http2: a declared body over the limit is refused with 413, the connection serves on") {
  Server server(1024);
  std::string out = server.curl("--http2 -o /dev/null -w '%{http_code}\\n' " + server.url());
  CHECK(out == "413\n");
}

TEST_CASE("http2: an HTTP/1.1 client is still served over HTTP/1.1") {
  Server server;
  std::string out =
      server.curl("--http1.1 -o /dev/null -w '%{http_version} %{http_code}\\n' " + server.url());
  CHECK(out == "1.1 200\n");
}

TEST_CASE("http2: a stream sending its body a trickle at a time is reset at its deadline") {
  Server server(7 * 1024 * 1024, std::chrono::milliseconds(1000));
  auto start = std::chrono::steady_clock::now();
  // 100 bytes/s of a ~20 KB review would take minutes; the stream's deadline is one second.
  std::string out =
      server.curl("--http2 --limit-rate 100 -o /dev/null -w '%{http_code}\\n' " + server.url());
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < std::chrono::seconds(8));
  CHECK(out.find("200") == std::string::npos);
  // The connection itself is not poisoned: the next client is served.
  CHECK(server.curl("--http2 -o /dev/null -w '%{http_code}\\n' " + server.url()) == "200\n");
}

namespace {

using vscaler::net::Clock;
using vscaler::net::Http2Session;

// An HTTP/2 client of nghttp2 alone; Link below carries its bytes to and from a session.
class H2Client {
 public:
  // What the client saw of one stream.
  struct Seen {
    int status = 0;
    bool reset = false;
    std::uint32_t reset_code = 0;
    bool closed = false;
  };

  // `initial_window` 0: the server may send no DATA (a client that does not read).
  explicit H2Client(std::uint32_t initial_window = 65535) {
    nghttp2_session_callbacks* callbacks = nullptr;
    REQUIRE(nghttp2_session_callbacks_new(&callbacks) == 0);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
    REQUIRE(nghttp2_session_client_new(&session_, callbacks, this) == 0);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, initial_window}};
    REQUIRE(nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1) == 0);
  }
  ~H2Client() { nghttp2_session_del(session_); }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  // Opens a POST stream with `headers`, ending it (no body) when `end` is set; its id.
  std::int32_t post(const std::vector<std::pair<std::string, std::string>>& headers, bool end) {
    std::vector<std::pair<std::string, std::string>> fields = {{":method", "POST"},
                                                               {":scheme", "https"},
                                                               {":authority", "127.0.0.1"},
                                                               {":path", "/mutate-deployments"}};
    fields.insert(fields.end(), headers.begin(), headers.end());
    std::vector<nghttp2_nv> nva;
    for (auto& [name, value] : fields) {
      nva.push_back({reinterpret_cast<std::uint8_t*>(name.data()),
                     reinterpret_cast<std::uint8_t*>(value.data()), name.size(), value.size(),
                     NGHTTP2_NV_FLAG_NONE});
    }
    std::int32_t id =
        nghttp2_submit_headers(session_, end ? NGHTTP2_FLAG_END_STREAM : NGHTTP2_FLAG_NONE, -1,
                               nullptr, nva.data(), nva.size(), nullptr);
    REQUIRE(id > 0);
    return id;
  }
  // Queues a PING (traffic that is no request).
  void ping() { REQUIRE(nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr) == 0); }

  // What the client has to send.
  std::string take() {
    std::string out;
    while (true) {
      const std::uint8_t* data = nullptr;
      auto n = nghttp2_session_mem_send(session_, &data);
      REQUIRE(n >= 0);
      if (n == 0) return out;
      out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
  }
  // Feeds what the server sent.
  void give(const std::string& bytes) {
    auto used = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    REQUIRE(used == static_cast<ssize_t>(bytes.size()));
  }

  std::map<std::int32_t, Seen> seen;

 private:
  static H2Client& of(void* self) { return *static_cast<H2Client*>(self); }
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t, void* self) {
    if (std::string_view(reinterpret_cast<const char*>(name), name_length) == ":status") {
      of(self).seen[frame->hd.stream_id].status =
          std::stoi(std::string(reinterpret_cast<const char*>(value), value_length));
    }
    return 0;
  }
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self) {
    if (frame->hd.type == NGHTTP2_RST_STREAM) {
      auto& seen = of(self).seen[frame->hd.stream_id];
      seen.reset = true;
      seen.reset_code = frame->rst_stream.error_code;
    }
    return 0;
  }
  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t, void* self) {
    of(self).seen[stream_id].closed = true;
    return 0;
  }

  nghttp2_session* session_ = nullptr;
};

// A server session with the webhook's limits, its own budget counter and metrics; the requests
// it hands to workers are kept (a worker holding them).
struct Link {
  Registry registry;
  std::atomic<std::size_t> buffered{0};
  vscaler::net::ConnectionEnv env;
  std::vector<vscaler::net::Request> dispatched;
  const Clock::time_point t0 = Clock::now();
  std::unique_ptr<Http2Session> server;

  Link() {
    env.limits.request_timeout = std::chrono::seconds(10);
    env.limits.write_timeout = std::chrono::seconds(10);
    env.rejected = &registry.counter("test_rejected_total", "Refused.", {"reason"});
    env.refused = [](const vscaler::net::http::RequestHead&, int, Clock::time_point) {};
    env.dispatch = [this](std::uint64_t, vscaler::net::Request request) {
      dispatched.push_back(std::move(request));
      return true;
    };
    env.buffered = &buffered;
    env.buffer_budget = 64 << 20;
    server = std::make_unique<Http2Session>(1, env, t0);
    REQUIRE(server->ok());
  }

  // Carries bytes both ways until neither side has more to send.
  void pump(H2Client& client, Clock::time_point now) {
    for (int turn = 0; turn < 100; ++turn) {
      std::string up = client.take();
      if (!up.empty()) REQUIRE(server->receive(up, now));
      std::string down;
      REQUIRE(server->flush(down, now));
      if (!down.empty()) client.give(down);
      if (up.empty() && down.empty()) return;
    }
    FAIL("the link never went quiet");
  }

  double rejected(const std::string& reason) const {
    std::string sample = "test_rejected_total{reason=\"" + reason + "\"} ";
    auto text = registry.render();
    auto at = text.find(sample);
    return at == std::string::npos ? 0 : std::stod(text.substr(at + sample.size()));
  }
};

}  // namespace

TEST_CASE("http2 session: streams answered before their request is complete are reset and freed") {
  // The reproduced attack in small: HEADERS without END_STREAM declaring a body over the limit,
  // each padded with headers. Answered 413 at once; nghttp2 alone would keep every such stream
  // (and its decoded headers) for as long as the client stays quiet.
  Link link;
  H2Client client;
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 50; ++i) {
    ids.push_back(client.post({{"content-length", "99999999"},
                               {"x-pad-1", std::string(4000, 'a')},
                               {"x-pad-2", std::string(4000, 'a')}},
                              /*end=*/false));
  }
  link.pump(client, link.t0);
  for (auto id : ids) {
    CAPTURE(id);
    CHECK(client.seen[id].status == 413);
    CHECK_FALSE(client.seen[id].reset);  // a client may first read its answer and stop
  }
  // A moment later, the streams the client has not ended are reset with NO_ERROR.
  auto grace = link.t0 + Http2Session::kEarlyAnswerGrace;
  CHECK(link.server->deadline() == grace);
  CHECK(link.server->expire(grace));
  link.pump(client, grace);
  for (auto id : ids) {
    CAPTURE(id);
    CHECK(client.seen[id].reset);
    CHECK(client.seen[id].reset_code == NGHTTP2_NO_ERROR);  // the 413 stands
  }
  CHECK(link.server->idle());  // nothing held
  CHECK(link.buffered.load() == 0);
  CHECK(link.rejected("body_too_large") == 50);
  // The connection serves on.
  auto id = client.post({}, /*end=*/true);
  link.pump(client, link.t0);
  REQUIRE(link.dispatched.size() == 1);
  CHECK(link.dispatched[0].stream == id);
}

TEST_CASE("http2 session: stream deadlines are fixed; an answer the client does not take ends") {
  Link link;
  H2Client client(/*initial_window=*/0);  // it never lets the server send DATA
  auto id = client.post({}, /*end=*/true);
  link.pump(client, link.t0);
  REQUIRE(link.dispatched.size() == 1);
  CHECK(link.server->deadline() == link.t0 + link.env.limits.request_timeout);

  auto answered = link.t0 + std::chrono::seconds(1);
  link.server->respond(id, {200, "text/plain", std::string(100, 'x'), {}, false, nullptr},
                       answered);
  link.pump(client, answered);
  CHECK(client.seen[id].status == 200);  // the HEADERS went, the DATA cannot
  CHECK_FALSE(link.server->idle());
  auto written_by = answered + link.env.limits.write_timeout;
  CHECK(link.server->deadline() == written_by);
  // Traffic that is no answer moves nothing.
  client.ping();
  link.pump(client, answered + std::chrono::seconds(5));
  CHECK(link.server->deadline() == written_by);
  CHECK(link.server->expire(written_by - std::chrono::milliseconds(1)));
  CHECK_FALSE(client.seen[id].reset);

  // Past it the stream is reset, and gone once the reset is sent.
  CHECK(link.server->expire(written_by));
  link.pump(client, written_by);
  CHECK(client.seen[id].reset);
  CHECK(client.seen[id].reset_code == NGHTTP2_CANCEL);
  CHECK(link.server->idle());
  CHECK(link.rejected("write_timeout") == 1);

  // A reset that cannot even be sent (the socket is full: nothing is flushed) ends the
  // connection a write timeout later.
  auto second = client.post({}, /*end=*/true);
  link.pump(client, written_by);
  link.server->respond(second, {200, "text/plain", std::string(100, 'x'), {}, false, nullptr},
                       written_by);
  auto reset_at = written_by + link.env.limits.write_timeout;
  CHECK(link.server->expire(reset_at));  // reset, not flushed
  CHECK(link.server->deadline() == reset_at + link.env.limits.write_timeout);
  CHECK_FALSE(link.server->expire(reset_at + link.env.limits.write_timeout));
}

TEST_CASE("http2 session: the decoded headers of one connection have a budget") {
  // 40 streams of ~60 KB of decoded headers each (HPACK sends each 4,000-byte value once):
  // within the per-stream limit, 2.4 MB together. Those past the connection's budget are reset.
  Link link;
  H2Client client;
  std::vector<std::pair<std::string, std::string>> padding;
  for (int i = 0; i < 15; ++i) padding.emplace_back("x-pad", std::string(4000, 'a'));
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(client.post(padding, /*end=*/false));
  link.pump(client, link.t0);
  std::size_t reset = 0;
  for (auto id : ids) reset += client.seen[id].reset ? 1 : 0;
  CHECK(reset >= 40 - Http2Session::kMaxConnectionHeaderBytes / (15 * 4000));
  CHECK(link.rejected("http2_header_budget") == static_cast<double>(reset));
  // What the streams kept is charged to the shared budget, and within the connection's.
  CHECK(link.buffered.load() > 0);
  CHECK(link.buffered.load() <= Http2Session::kMaxConnectionHeaderBytes);
  // An ordinary request still fits.
  auto id = client.post({{"content-type", "application/json"}}, /*end=*/true);
  link.pump(client, link.t0);
  REQUIRE(link.dispatched.size() == 1);
  CHECK(link.dispatched[0].stream == id);
  // The streams still waiting for their bodies are reset at their deadline: nothing is left.
  link.dispatched.clear();  // the worker is done with its request
  CHECK(link.server->expire(link.t0 + link.env.limits.request_timeout));
  link.pump(client, link.t0 + link.env.limits.request_timeout);
  CHECK(link.server->idle());
  CHECK(link.buffered.load() == 0);
}

namespace {

// An HTTP/2 connection over TLS to a started server: the nghttp2 client and its link.
struct TlsSession {
  TlsSession(const vscaler::testing::StartedServer& s)
      : link(s.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, s.ca.cert_pem(), "h2") {}

  // One POST without a body (answered 400: not a review), carried to its answer; its status,
  // 0 when the connection ended first.
  int request() {
    auto id = client.post({{"content-type", "application/json"}}, /*end=*/true);
    if (!link.send(client.take())) return 0;
    char buffer[16384];
    while (client.seen[id].status == 0) {
      int n = SSL_read(link.ssl(), buffer, sizeof buffer);
      if (n <= 0) return 0;
      client.give(std::string(buffer, static_cast<std::size_t>(n)));
      if (std::string up = client.take(); !up.empty() && !link.send(up)) return 0;
    }
    return client.seen[id].status;
  }

  vscaler::testing::RawTlsClient link;
  H2Client client;
  std::string held_back;  // encrypted bytes not sent yet (a record's last ones)
};

}  // namespace

TEST_CASE("http2: sessions answered once and stalled mid-record give up their share") {
  // OpenSSL frees an HTTP/2 session's buffers after each record, but not while a record is
  // half-read: four sessions that carried a stream, then hold a record begun, fill a budget of
  // four for the session's 300 s idle timeout (or for good, sending a record a second). Waiting
  // so for twice the release with no request at a worker, they are closed to make room for a
  // session that asks again (for its buffers, and its headers when the rest is too little).
  constexpr std::size_t kUnit = vscaler::net::tls::Stream::kBufferBytes;
  vscaler::testing::StartedServer s(
      [](AdmissionServerOptions& options) {
        options.max_buffered_body_bytes = 4 * kUnit + 8 * 1024;  // and the open streams' headers
        options.event_loops = 1;
        options.idle_buffer_release = std::chrono::milliseconds(50);
      },
      {"/mutate-deployments"});
  auto answered = [&] {
    auto session = std::make_unique<TlsSession>(s);
    REQUIRE(session->link.ok());
    REQUIRE(session->request() == 400);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return session;
  };
  auto api_server = answered();
  std::vector<std::unique_ptr<TlsSession>> stalled;
  for (int i = 0; i < 4; ++i) stalled.push_back(answered());
  // Application data, 16 KiB announced, 3 bytes sent.
  const unsigned char record_start[] = {0x17, 0x03, 0x03, 0x40, 0x00, 'a', 'b', 'c'};
  auto begin_record = [&](TlsSession& session) {
    ::send(session.link.fd(), record_start, sizeof record_start, MSG_NOSIGNAL);
  };
  // What each stalled session does every 20 ms until `more` is false.
  std::function<void(TlsSession&)> step;
  SUBCASE("a record begun, its bytes trickling in") {
    for (const auto& session : stalled) begin_record(*session);
    step = [](TlsSession& session) { ::send(session.link.fd(), "d", 1, MSG_NOSIGNAL); };
  }
  SUBCASE("whole records (PINGs), each sent with the start of the next") {
    // The records are written to memory and sent by hand, 3 bytes of each held back.
    for (const auto& session : stalled) SSL_set0_wbio(session->link.ssl(), BIO_new(BIO_s_mem()));
    step = [](TlsSession& session) {
      session.client.ping();
      std::string frames = session.client.take();
      REQUIRE(SSL_write(session.link.ssl(), frames.data(), static_cast<int>(frames.size())) > 0);
      BIO* out = SSL_get_wbio(session.link.ssl());
      std::string record(static_cast<std::size_t>(BIO_pending(out)), '\0');
      BIO_read(out, record.data(), static_cast<int>(record.size()));
      std::string now = session.held_back + record.substr(0, record.size() - 3);
      session.held_back = record.substr(record.size() - 3);
      ::send(session.link.fd(), now.data(), now.size(), MSG_NOSIGNAL);
    };
  }
  SUBCASE("a stream opened and never ended, then a record begun") {
    for (const auto& session : stalled) {
      session->client.post({{"content-type", "application/json"}}, /*end=*/false);
      session->link.send(session->client.take());
      begin_record(*session);
    }
    step = [](TlsSession& session) { ::send(session.link.fd(), "d", 1, MSG_NOSIGNAL); };
  }
  std::atomic<bool> more{true};
  std::thread driver([&] {
    while (more.load()) {
      for (const auto& session : stalled) step(*session);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto metric = [&](const std::string& sample) {
    auto text = s.registry.render();
    auto at = text.find("\n" + sample + " ");
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + sample.size() + 2));
  };
  const std::string evicted = R"(vscaler_webhook_rejected_total{reason="evicted_at_capacity"})";
  const std::string refused = R"(vscaler_webhook_rejected_total{reason="memory_budget"})";
  CHECK(metric(evicted) == 0);
  CHECK(api_server->request() == 400);  // read and answered, not refused 503
  CHECK(metric(evicted) >= 1);
  CHECK(metric(refused) == 0);
  more.store(false);
  driver.join();
}
