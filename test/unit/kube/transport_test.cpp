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

#include "test/unit/support/local_http_server.h"

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

  // Three callers, one connection: the first holds it until its read times out (800 ms), the
  // second then holds it as long. Before, the third waited for both (about 2.4 s in all); now
  // it gives up at 800 ms and the slowest, the second, returns at about 1.6 s.
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
  CHECK(slowest < 2000ms);
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
