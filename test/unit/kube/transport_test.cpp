// PooledTransport against a plain-HTTP local server whose every answer takes 1 s: a caller waiting
// for a connection from a busy pool gives up at its request timeout instead of queueing behind
// every earlier caller.
#include "kube/transport.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using vscaler::kube::ClientConfig;
using vscaler::kube::ErrorKind;
using vscaler::kube::HttpRequest;
using vscaler::kube::Transport;

namespace {

// A plain-HTTP server on 127.0.0.1 whose GET `path` answers "{}" after `delay`.
class SlowServer {
 public:
  void route(const std::string& path, std::chrono::milliseconds delay) {
    server_.Get(path, [delay](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(delay);
      res.set_content("{}", "application/json");
    });
  }
  // Starts serving; returns the config of a client for it.
  ClientConfig start(std::chrono::milliseconds request_timeout, int max_connections) {
    int port = server_.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    listener_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);  // httplib 0.11: no signal
    ClientConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port);
    config.request_timeout = request_timeout;
    config.max_connections = max_connections;
    return config;
  }
  ~SlowServer() {
    server_.stop();
    if (listener_.joinable()) listener_.join();
  }

 private:
  httplib::Server server_;
  std::thread listener_;
};

}  // namespace

TEST_CASE("a caller of a busy pool waits for a connection at most its request timeout") {
  SlowServer server;
  server.route("/api", 1s);
  ClientConfig config = server.start(500ms, 1);
  auto transport = Transport::create(config);
  REQUIRE(transport.ok());

  // Three callers, one connection: the first holds it until its read times out (500 ms), the
  // second then holds it as long. Before, the third waited for both (about 1.5 s in all).
  constexpr int kCallers = 3;
  std::vector<std::chrono::milliseconds> took(kCallers);
  std::vector<std::string> errors(kCallers);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
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
  CHECK(slowest < 1200ms);
  CHECK(std::any_of(errors.begin(), errors.end(), [](const std::string& message) {
    return message.find("no connection to the API server became free") != std::string::npos;
  }));
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
