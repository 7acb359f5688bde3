// Helpers of the front end's tests over real TLS on loopback (front_end_test.cpp,
// front_end_budget_test.cpp): a started admission server answering POST /allow, raw connections
// from a chosen loopback address, padded reviews, quick routes, and a gate that keeps workers busy.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "net/front_end.h"
#include "net/http.h"
#include "test/unit/webhook/started_server.h"
#include "test/unit/webhook/tls_fixture.h"
#include "webhook/server.h"

namespace vscaler::testing::front_end {

using namespace std::chrono_literals;
using vscaler::metrics::Registry;
using vscaler::testing::closed_by_peer_within;
using vscaler::testing::RawTlsClient;
using vscaler::webhook::AdmissionRequest;
using vscaler::webhook::AdmissionResponse;
using vscaler::webhook::AdmissionServer;
using vscaler::webhook::AdmissionServerOptions;
namespace http = vscaler::net::http;

// A front end on a free loopback port with one worker and one event loop, counting into
// `registry`.
inline vscaler::net::FrontEndOptions one_of_each(Registry& registry) {
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
inline int connect_from(const char* source, int port) {
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
inline std::string review_request(const std::string& path, const std::string& uid,
                                  std::size_t pad) {
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
inline void quick_route(AdmissionServer& server, const std::string& path) {
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

}  // namespace vscaler::testing::front_end
