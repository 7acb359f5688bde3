// The TLS admission server over real TLS on 127.0.0.1: valid reviews answered, hostile input
// refused one case at a time while a client keeps sending valid reviews (none of which may fail),
// certificate rotation without a failed request, and a prompt stop.
#include "webhook/server.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "test/unit/webhook/tls_fixture.h"

using namespace std::chrono_literals;
using vscaler::metrics::Registry;
using vscaler::net::CertWatcher;
using vscaler::net::CertWatcherOptions;
using vscaler::testing::closed_by_peer_within;
using vscaler::testing::connect_local;
using vscaler::testing::fingerprint_of;
using vscaler::testing::PemPair;
using vscaler::testing::RawTlsClient;
using vscaler::testing::replace_file;
using vscaler::testing::TempDir;
using vscaler::testing::TestCa;
using vscaler::testing::write_file;
using vscaler::webhook::AdmissionRequest;
using vscaler::webhook::AdmissionResponse;
using vscaler::webhook::AdmissionServer;
using vscaler::webhook::AdmissionServerOptions;
using vscaler::webhook::HandlerOptions;
using vscaler::webhook::Projection;
using json = nlohmann::json;

namespace {

std::string read_data(const std::string& name) {
  std::ifstream file(std::string(VSCALER_TEST_DATA_DIR) + "/webhook/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

const std::string& review_body() {
  static const std::string body = read_data("deployment-update-review.json");
  return body;
}

// A certificate directory laid out as the kubelet writes a Secret volume:
// tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/.
class SecretVolume {
 public:
  explicit SecretVolume(const std::string& root) : root_(root) {}

  // Publishes a new pair the way the kubelet's atomic writer does: a new timestamped
  // directory, a new ..data symlink renamed over the old one, the old directory removed.
  void publish(const PemPair& pair) {
    std::string dir = "..2026_11_29_18_00_00." + std::to_string(++version_);
    std::filesystem::create_directory(root_ + "/" + dir);
    write_file(root_ + "/" + dir + "/tls.crt", pair.cert);
    write_file(root_ + "/" + dir + "/tls.key", pair.key);
    std::filesystem::create_symlink(dir, root_ + "/..data_tmp");
    std::filesystem::rename(root_ + "/..data_tmp", root_ + "/..data");
    if (!current_.empty()) std::filesystem::remove_all(root_ + "/" + current_);
    current_ = dir;
    for (const char* name : {"tls.crt", "tls.key"}) {
      if (!std::filesystem::is_symlink(root_ + "/" + name)) {
        std::filesystem::create_symlink(std::string("..data/") + name, root_ + "/" + name);
      }
    }
  }

 private:
  std::string root_;
  std::string current_;
  int version_ = 0;
};

// A started server with a CA, a certificate directory and its own metrics registry.
struct Fixture {
  TestCa ca;
  TempDir dir;
  Registry registry;
  PemPair pair = ca.issue(100);
  std::unique_ptr<SecretVolume> volume;
  std::unique_ptr<CertWatcher> certs;
  std::unique_ptr<AdmissionServer> server;
  std::string ca_file = dir.file("ca.crt");

  explicit Fixture(std::function<void(AdmissionServerOptions&)> tweak = {},
                   bool secret_volume = false) {
    std::filesystem::create_directory(dir.file("certs"));
    if (secret_volume) {
      volume = std::make_unique<SecretVolume>(dir.file("certs"));
      volume->publish(pair);
    } else {
      write_file(dir.file("certs/tls.crt"), pair.cert);
      write_file(dir.file("certs/tls.key"), pair.key);
    }
    write_file(ca_file, ca.cert_pem());
    CertWatcherOptions cert_options;
    cert_options.cert_dir = dir.file("certs");
    cert_options.poll_interval = 100ms;
    cert_options.registry = &registry;
    certs = std::make_unique<CertWatcher>(cert_options);
    certs->start();
    REQUIRE(certs->loaded());

    AdmissionServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.workers = 16;
    options.request_timeout = 1500ms;
    options.registry = &registry;
    if (tweak) tweak(options);
    server = std::make_unique<AdmissionServer>(*certs, options);
    server->handle("/mutate-deployments", [](const AdmissionRequest& request) {
      AdmissionResponse response;
      if (request.operation == vscaler::webhook::Operation::kUpdate) {
        response.patch = json::array(
            {{{"op", "add"},
              {"path", "/spec/template/spec/containers/0/resources"},
              {"value",
               request.object["spec"]["template"]["spec"]["containers"][0]["resources"]}}});
      }
      return response;
    });
    HandlerOptions projected;
    projected.projection = *Projection::parse({"/metadata/name"});
    server->handle(
        "/validate-verticalscalers",
        [](const AdmissionRequest& request) {
          if (request.object.value("metadata", json::object()).value("name", "") == "throw") {
            throw std::runtime_error("secret detail that must not reach the client");
          }
          if (request.object.value("metadata", json::object()).value("name", "") == "bad-patch") {
            AdmissionResponse response;
            response.patch = json::array({{{"op", "add"}, {"path", "no-slash"}}});
            return response;
          }
          return AdmissionResponse::deny(422, "spec.deploymentName: Required value", "Invalid");
        },
        projected);
    auto started = server->start();
    REQUIRE_MESSAGE(started.ok(), (started.ok() ? "" : started.error()));
    REQUIRE(server->port() > 0);
  }

  ~Fixture() {
    server->stop();
    certs->stop();
  }

  std::unique_ptr<httplib::SSLClient> client(bool keep_alive = true) const {
    auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", server->port());
    client->set_ca_cert_path(ca_file);
    client->enable_server_certificate_verification(true);
    client->set_keep_alive(keep_alive);
    client->set_tcp_nodelay(true);
    client->set_connection_timeout(5, 0);
    client->set_read_timeout(5, 0);
    return client;
  }

  double metric(const std::string& sample) const {
    auto text = registry.render();
    auto at = text.find("\n" + sample + " ");
    if (at == std::string::npos) return 0;
    return std::stod(text.substr(at + sample.size() + 2));
  }
};

// Sends valid reviews on its own keep-alive connection until stopped; every one must succeed.
class ValidTraffic {
 public:
  explicit ValidTraffic(const Fixture& fixture, bool keep_alive = true)
      : thread_([this, &fixture, keep_alive] {
          auto client = fixture.client(keep_alive);
          while (!stop_.load()) {
            auto result = client->Post("/mutate-deployments", review_body(), "application/json");
            bool good = result && result->status == 200 &&
                        result->body.find("\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\"") !=
                            std::string::npos;
            (good ? ok_ : failed_).fetch_add(1);
            if (!good) {
              std::lock_guard lock(mutex_);
              last_error_ = result ? "status " + std::to_string(result->status)
                                   : httplib::to_string(result.error());
            }
          }
        }) {}
  ~ValidTraffic() { stop(); }

  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int ok() const { return ok_.load(); }
  int failed() const { return failed_.load(); }
  std::string last_error() {
    std::lock_guard lock(mutex_);
    return last_error_;
  }
  // Waits until `count` more reviews have been answered (proof the server still serves).
  bool advances(int count = 5, std::chrono::milliseconds timeout = 5s) const {
    int target = ok_.load() + count;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (ok_.load() < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(2ms);
    }
    return ok_.load() >= target;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  std::mutex mutex_;
  std::string last_error_;
  std::thread thread_;
};

std::string headers(const std::string& extra, const std::string& path = "/mutate-deployments") {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         extra + "\r\n";
}

std::string status_line(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string body_of(const std::string& response) {
  auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

}  // namespace

TEST_CASE(
    "server: valid reviews are answered with the uid echoed, patch encoded, metrics counted") {
  Fixture fixture;
  auto client = fixture.client();
  for (int i = 0; i < 3; ++i) {
    auto result = client->Post("/mutate-deployments?timeout=2s", review_body(), "application/json");
    REQUIRE(result);
    CHECK_MESSAGE(result->status == 200, result->body);
    CHECK(result->get_header_value("Content-Type") == "application/json");
    auto review = json::parse(result->body);
    CHECK(review["apiVersion"] == "admission.k8s.io/v1");
    CHECK(review["kind"] == "AdmissionReview");
    CHECK(review["response"]["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");
    CHECK(review["response"]["allowed"] == true);
    CHECK(review["response"]["patchType"] == "JSONPatch");
  }
  // A validating handler with a projection; a denial carries its status.
  auto scaler = json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
    "request":{"uid":"v-1","operation":"CREATE","object":{"metadata":{"name":"web"},"spec":{}}}})");
  auto result = client->Post("/validate-verticalscalers", scaler.dump(), "application/json");
  REQUIRE(result);
  CHECK(result->status == 200);
  auto review = json::parse(result->body);
  CHECK(review["response"]["allowed"] == false);
  CHECK(review["response"]["status"]["code"] == 422);

  // A review just under the 7 MiB limit is read and answered like any other.
  auto big = json::parse(review_body());
  big["request"]["object"]["metadata"]["annotations"]["big"] =
      std::string(7 * 1024 * 1024 - review_body().size() - 200, 'x');
  auto big_body = big.dump();
  REQUIRE(big_body.size() <= 7 * 1024 * 1024);
  auto big_result = client->Post("/mutate-deployments", big_body, "application/json");
  REQUIRE(big_result);
  CHECK(big_result->status == 200);

  CHECK(
      fixture.metric(
          R"(controller_runtime_webhook_requests_total{webhook="/mutate-deployments",code="200"})") ==
      4);
  CHECK(fixture.metric(
            R"(controller_runtime_webhook_latency_seconds_count{webhook="/mutate-deployments"})") ==
        4);
  CHECK(
      fixture.metric(
          R"(controller_runtime_webhook_requests_total{webhook="/validate-verticalscalers",code="200"})") ==
      1);
  CHECK(fixture.metric("vscaler_webhook_open_connections") == 1);
}

TEST_CASE("server: hostile input, one case at a time, while valid reviews keep being answered") {
  Fixture fixture;
  ValidTraffic traffic(fixture);
  REQUIRE(traffic.advances());
  auto client = fixture.client();

  // Malformed JSON, not a review, 100k-deep JSON: 400 with a message.
  {
    auto result = client->Post("/mutate-deployments", "{\"apiVersion\":", "application/json");
    REQUIRE(result);
    CHECK(result->status == 400);
    CHECK(result->body.starts_with("bad AdmissionReview: malformed JSON"));
    CHECK(traffic.advances());

    result = client->Post("/mutate-deployments",
                          R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"})",
                          "application/json");
    REQUIRE(result);
    CHECK(result->status == 400);
    CHECK(result->body.find("expected admission.k8s.io/v1") != std::string::npos);

    result = client->Post("/mutate-deployments",
                          R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                          R"("request":{"operation":"CREATE"}})",
                          "application/json");
    REQUIRE(result);
    CHECK(result->status == 400);
    CHECK(result->body == "bad AdmissionReview: request.uid is missing or empty\n");

    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    result = client->Post("/mutate-deployments", deep, "application/json");
    REQUIRE(result);
    CHECK(result->status == 400);
    CHECK(result->body.find("deeper than 128 levels") != std::string::npos);

    result = client->Post("/mutate-deployments", review_body(), "text/yaml");
    REQUIRE(result);
    CHECK(result->status == 400);
    CHECK(
        fixture.metric(
            R"(controller_runtime_webhook_requests_total{webhook="/mutate-deployments",code="400"})") ==
        5);
    CHECK(traffic.advances());
  }

  // A 10 MB body: 413 as soon as the headers are read, the body never read, the connection
  // closed after the answer.
  {
    RawTlsClient raw(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, fixture.ca.cert_pem());
    REQUIRE_MESSAGE(raw.ok(), raw.error());
    REQUIRE(raw.send(headers("Content-Length: 10485760\r\n")));
    REQUIRE(raw.send(std::string(64 * 1024, ' ')));
    auto response = raw.read_response();
    CHECK(status_line(response) == "HTTP/1.1 413 Payload Too Large");
    CHECK(body_of(response) ==
          "the request body of 10485760 bytes exceeds the limit of 7340032 bytes\n");
    CHECK(raw.read_response().empty());  // closed, the rest of the body never parsed
    CHECK(fixture.metric(R"(vscaler_webhook_rejected_total{reason="body_too_large"})") == 1);
    CHECK(
        fixture.metric(
            R"(controller_runtime_webhook_requests_total{webhook="/mutate-deployments",code="413"})") ==
        1);
    CHECK(traffic.advances());
  }
  // The same with Expect: 100-continue: refused before the client sends the body.
  {
    RawTlsClient raw(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, fixture.ca.cert_pem());
    REQUIRE(raw.ok());
    REQUIRE(raw.send(headers("Content-Length: 10485760\r\nExpect: 100-continue\r\n")));
    CHECK(status_line(raw.read_response()) == "HTTP/1.1 413 Payload Too Large");
    CHECK(fixture.metric(R"(vscaler_webhook_rejected_total{reason="body_too_large"})") == 2);
  }
  // A chunked body and a POST without Content-Length: refused before any byte of body is read.
  {
    RawTlsClient raw(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, fixture.ca.cert_pem());
    REQUIRE(raw.ok());
    REQUIRE(raw.send(headers("Transfer-Encoding: chunked\r\n")));
    REQUIRE(raw.send("10000\r\n" + std::string(0x10000, 'x') + "\r\n"));
    auto response = raw.read_response();
    CHECK(status_line(response) == "HTTP/1.1 411 Length Required");
    CHECK(raw.read_response().empty());
    CHECK(fixture.metric(R"(vscaler_webhook_rejected_total{reason="chunked"})") == 1);

    RawTlsClient lengthless(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION,
                            fixture.ca.cert_pem());
    REQUIRE(lengthless.ok());
    REQUIRE(lengthless.send(headers("") + "{\"apiVersion\":"));
    CHECK(status_line(lengthless.read_response()) == "HTTP/1.1 411 Length Required");
    RawTlsClient bad_length(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION,
                            fixture.ca.cert_pem());
    REQUIRE(bad_length.ok());
    REQUIRE(bad_length.send(headers("Content-Length: 5\r\nContent-Length: 6\r\n") + "hello!"));
    CHECK(status_line(bad_length.read_response()) == "HTTP/1.1 400 Bad Request");
    CHECK(traffic.advances());
  }
  // Unknown path: 404; another method on a webhook path: 405; the server keeps serving.
  {
    auto result = client->Post("/mutate-pods", review_body(), "application/json");
    REQUIRE(result);
    CHECK(result->status == 404);
    result = client->Get("/mutate-deployments");
    REQUIRE(result);
    CHECK(result->status == 405);
    CHECK(result->get_header_value("Allow") == "POST");
    result = client->Get("/");
    REQUIRE(result);
    CHECK(result->status == 404);
    CHECK(traffic.advances());
  }
  // A handler exception: 500 without its message; an invalid patch: dropped, with a warning.
  {
    auto review = json::parse(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
      "request":{"uid":"t-1","operation":"CREATE","object":{"metadata":{"name":"throw"}}}})");
    auto result = client->Post("/validate-verticalscalers", review.dump(), "application/json");
    REQUIRE(result);
    CHECK(result->status == 500);
    CHECK(result->body == "internal error\n");
    CHECK(result->get_header_value("EXCEPTION_WHAT").empty());
    review["request"]["object"]["metadata"]["name"] = "bad-patch";
    result = client->Post("/validate-verticalscalers", review.dump(), "application/json");
    REQUIRE(result);
    CHECK(result->status == 200);
    auto answer = json::parse(result->body)["response"];
    CHECK_FALSE(answer.contains("patch"));
    CHECK(answer["warnings"].size() == 1);
  }
  // A client that sends a byte a second: cut off at the request deadline (1.5 s here), while
  // the valid traffic carries on.
  {
    RawTlsClient slow(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION,
                      fixture.ca.cert_pem());
    REQUIRE(slow.ok());
    std::string request = headers("Content-Length: 2\r\n") + "{}";
    auto start = std::chrono::steady_clock::now();
    bool cut = false;
    for (char byte : request) {
      if (!slow.send(std::string(1, byte))) {
        cut = true;
        break;
      }
      if (closed_by_peer_within(slow.fd(), 1000ms)) {
        cut = true;
        break;
      }
      if (std::chrono::steady_clock::now() - start > 8s) break;
    }
    auto elapsed = std::chrono::steady_clock::now() - start;
    CHECK(cut);
    CHECK(elapsed >= 1400ms);
    CHECK(elapsed < 4s);
    CHECK(fixture.metric(R"(vscaler_webhook_rejected_total{reason="request_timeout"})") == 1);
    CHECK(traffic.advances());
  }
  // A connection that never starts its handshake: cut at the same deadline.
  {
    int fd = connect_local(fixture.server->port());
    REQUIRE(fd >= 0);
    auto start = std::chrono::steady_clock::now();
    CHECK(closed_by_peer_within(fd, 5s));
    CHECK(std::chrono::steady_clock::now() - start < 4s);
    ::close(fd);
    CHECK(traffic.advances());
  }
  // Plain HTTP on the TLS port: no HTTP answer, the connection closed.
  {
    int fd = connect_local(fixture.server->port());
    REQUIRE(fd >= 0);
    std::string request = headers("Content-Length: 2\r\n") + "{}";
    REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
    char buffer[512];
    std::string received;
    pollfd entry{fd, POLLIN, 0};
    while (::poll(&entry, 1, 3000) > 0) {
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      received.append(buffer, static_cast<std::size_t>(n));
    }
    CHECK(received.find("HTTP/1.1") == std::string::npos);
    ::close(fd);
    CHECK(traffic.advances());
  }
  // TLS 1.0 and 1.1 handshakes fail; 1.2 and 1.3 succeed (with the same permissive client).
  {
    RawTlsClient tls10(fixture.server->port(), TLS1_VERSION, TLS1_VERSION);
    CHECK_FALSE(tls10.ok());
    RawTlsClient tls11(fixture.server->port(), TLS1_1_VERSION, TLS1_1_VERSION);
    CHECK_FALSE(tls11.ok());
    CHECK(tls11.error().find("protocol version") != std::string::npos);
    RawTlsClient tls12(fixture.server->port(), TLS1_2_VERSION, TLS1_2_VERSION,
                       fixture.ca.cert_pem());
    CHECK(tls12.ok());
    RawTlsClient tls13(fixture.server->port(), TLS1_3_VERSION, TLS1_3_VERSION,
                       fixture.ca.cert_pem());
    CHECK(tls13.ok());
    CHECK(fixture.metric("vscaler_webhook_tls_handshake_errors_total") >= 3);
    CHECK(traffic.advances());
  }

  traffic.stop();
  CHECK_MESSAGE(traffic.failed() == 0, traffic.last_error());
  CHECK(traffic.ok() > 20);
  MESSAGE("valid reviews answered during the hostile cases: " << traffic.ok());
}

TEST_CASE("server: byte floods are cut at the header and body budgets") {
  Fixture fixture;
  {
    // A request line that never ends: httplib would buffer it without limit.
    RawTlsClient raw(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, fixture.ca.cert_pem());
    REQUIRE(raw.ok());
    bool broken = !raw.send("POST /" + std::string(4 * 1024 * 1024, 'a'));
    CHECK((broken || closed_by_peer_within(raw.fd(), 3s)));
    CHECK(fixture.metric(R"(vscaler_webhook_rejected_total{reason="headers_too_large"})") == 1);
  }
  {
    // Endless small headers.
    RawTlsClient raw(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, fixture.ca.cert_pem());
    REQUIRE(raw.ok());
    std::string many = "POST /mutate-deployments HTTP/1.1\r\n";
    for (int i = 0; i < 40000; ++i) many += "X-Filler-" + std::to_string(i) + ": y\r\n";
    bool broken = !raw.send(many);
    CHECK((broken || closed_by_peer_within(raw.fd(), 3s)));
    CHECK(fixture.metric(R"(vscaler_webhook_rejected_total{reason="headers_too_large"})") == 2);
  }
  {
    // A body longer than its Content-Length, sent as fast as possible: the declared 7 MiB are
    // read and answered (400: not JSON), the rest is read as the next request's headers and cut
    // at their budget.
    RawTlsClient raw(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, fixture.ca.cert_pem());
    REQUIRE(raw.ok());
    bool broken =
        !raw.send(headers("Content-Length: 7340032\r\n") + std::string(12 * 1024 * 1024, ' '));
    CHECK((broken || closed_by_peer_within(raw.fd(), 5s)));
    CHECK(fixture.metric(R"(vscaler_webhook_rejected_total{reason="headers_too_large"})") == 3);
  }
  auto result = fixture.client()->Post("/mutate-deployments", review_body(), "application/json");
  REQUIRE(result);
  CHECK(result->status == 200);
}

TEST_CASE("server: stop() closes idle keep-alive connections at once and frees the port") {
  std::unique_ptr<Fixture> fixture = std::make_unique<Fixture>();
  auto client = fixture->client();
  REQUIRE(client->Post("/mutate-deployments", review_body(), "application/json"));
  auto start = std::chrono::steady_clock::now();
  fixture->server->stop();
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK_FALSE(fixture->server->running());
  fixture->server->stop();  // idempotent
}

TEST_CASE("server: binding a port in use fails with a message") {
  Fixture first;
  TempDir dir;
  Registry registry;
  CertWatcherOptions cert_options;
  cert_options.cert_dir = dir.path();  // empty: no certificate, which binding does not need
  cert_options.registry = &registry;
  CertWatcher certs(cert_options);
  AdmissionServerOptions options;
  options.host = "127.0.0.1";
  options.port = first.server->port();
  options.registry = &registry;
  AdmissionServer second(certs, options);
  auto started = second.start();
  REQUIRE_FALSE(started.ok());
  CHECK(started.error().find("cannot listen on 127.0.0.1:") != std::string::npos);
}

TEST_CASE("server: without a certificate handshakes fail; once one appears they succeed") {
  TestCa ca;
  TempDir dir;
  Registry registry;
  CertWatcherOptions cert_options;
  cert_options.cert_dir = dir.path();
  cert_options.poll_interval = 50ms;
  cert_options.registry = &registry;
  CertWatcher certs(cert_options);
  certs.start();
  AdmissionServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.registry = &registry;
  AdmissionServer server(certs, options);
  server.handle("/mutate-deployments",
                [](const AdmissionRequest&) { return AdmissionResponse::allow(); });
  REQUIRE(server.start().ok());
  {
    RawTlsClient early(server.port(), TLS1_2_VERSION, TLS1_3_VERSION, ca.cert_pem());
    CHECK_FALSE(early.ok());
  }
  auto pair = ca.issue(9);
  write_file(dir.file("tls.key"), pair.key);
  write_file(dir.file("tls.crt"), pair.cert);
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!certs.loaded() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  RawTlsClient later(server.port(), TLS1_2_VERSION, TLS1_3_VERSION, ca.cert_pem());
  CHECK_MESSAGE(later.ok(), later.error());
  CHECK(later.peer_fingerprint() == fingerprint_of(pair.cert));
  server.stop();
}

TEST_CASE("server: certificate rotation drops no request; a broken pair keeps the old one") {
  Fixture fixture({}, /*secret_volume=*/true);
  // Two keep-alive clients and one that handshakes for every request.
  ValidTraffic steady(fixture);
  ValidTraffic steady_too(fixture);
  ValidTraffic handshaking(fixture, /*keep_alive=*/false);
  REQUIRE(steady.advances());
  REQUIRE(handshaking.advances());

  auto served = [&] {
    RawTlsClient probe(fixture.server->port(), TLS1_2_VERSION, TLS1_3_VERSION,
                       fixture.ca.cert_pem());
    return probe.ok() ? probe.peer_fingerprint() : "handshake failed: " + probe.error();
  };
  auto wait_for = [&](const std::string& fingerprint) {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (served() != fingerprint && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    return served() == fingerprint;
  };
  CHECK(served() == fingerprint_of(fixture.pair.cert));

  // 1. The kubelet's ..data symlink swap.
  auto second = fixture.ca.issue(200);
  fixture.volume->publish(second);
  CHECK(wait_for(fingerprint_of(second.cert)));
  CHECK(handshaking.advances());

  // 2. Plain files renamed over the symlinks, key first: for a moment the key does not match
  // the certificate; that state must never be served.
  auto third = fixture.ca.issue(300);
  replace_file(fixture.dir.file("certs/tls.key"), third.key);
  std::this_thread::sleep_for(250ms);  // let a poll see the mismatched pair
  CHECK(served() == fingerprint_of(second.cert));
  replace_file(fixture.dir.file("certs/tls.crt"), third.cert);
  CHECK(wait_for(fingerprint_of(third.cert)));
  CHECK(handshaking.advances());

  // 3. Broken pairs: a key of another certificate, then garbage, then a missing key. The old
  // pair keeps serving throughout.
  auto generation = fixture.certs->generation();
  auto other = fixture.ca.issue(400);
  write_file(fixture.dir.file("certs/tls.crt"), other.cert);  // key is still third's
  std::this_thread::sleep_for(400ms);
  CHECK(served() == fingerprint_of(third.cert));
  write_file(fixture.dir.file("certs/tls.crt"), "-----BEGIN CERTIFICATE-----\ngarbage\n");
  std::this_thread::sleep_for(400ms);
  CHECK(served() == fingerprint_of(third.cert));
  std::filesystem::remove(fixture.dir.file("certs/tls.key"));
  std::this_thread::sleep_for(400ms);
  CHECK(served() == fingerprint_of(third.cert));
  CHECK(fixture.certs->generation() == generation);
  CHECK(fixture.metric(R"(vscaler_serving_cert_reloads_total{result="failure"})") >= 3);
  CHECK(handshaking.advances());

  // 4. A good pair again is picked up.
  write_file(fixture.dir.file("certs/tls.key"), other.key);
  write_file(fixture.dir.file("certs/tls.crt"), other.cert);
  CHECK(wait_for(fingerprint_of(other.cert)));

  steady.stop();
  steady_too.stop();
  handshaking.stop();
  CHECK_MESSAGE(steady.failed() == 0, steady.last_error());
  CHECK_MESSAGE(steady_too.failed() == 0, steady_too.last_error());
  CHECK_MESSAGE(handshaking.failed() == 0, handshaking.last_error());
  MESSAGE("requests during rotation: " << steady.ok() + steady_too.ok() << " keep-alive, "
                                       << handshaking.ok() << " with a new handshake each");
}
