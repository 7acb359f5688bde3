// A plain-HTTP httplib server on 127.0.0.1 for unit tests that talk to a stand-in for the API
// server through the real kube::Client and transport. Register routes on server(), then start().
#pragma once

#include <doctest/doctest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

#include "kube/client.h"
#include "kube/config.h"

namespace vscaler::testing {

class LocalHttpServer {
 public:
  LocalHttpServer() = default;
  ~LocalHttpServer() { stop(); }
  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  /// Where routes are registered, before start().
  httplib::Server& server() { return server_; }
  /// Binds a free port and serves on a thread of its own.
  void start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    listener_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib 0.11 has no readiness signal.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  /// Stops serving (handlers still running finish first); idempotent.
  void stop() {
    server_.stop();
    if (listener_.joinable()) listener_.join();
  }
  /// A client configuration for this server.
  kube::ClientConfig config() const {
    kube::ClientConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port_);
    return config;
  }
  /// A client of this server.
  kube::Client client() const {
    auto client = kube::Client::connect(config());
    REQUIRE(client.ok());
    return *client;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread listener_;
};

}  // namespace vscaler::testing
