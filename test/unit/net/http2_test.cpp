// HTTP/2 on the admission front end, driven by a real HTTP/2 client (curl, built with nghttp2):
// ALPN picks h2, many requests share one connection as concurrent streams, every one is
// answered with the handler's review, a declared body over the limit gets 413 on its stream,
// and HTTP/1.1 clients are served as before.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

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
