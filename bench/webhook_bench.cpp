// webhook_bench: what one admission review costs vscaler.
//  1. Parsing a ~22 KB Deployment UPDATE review: the codec (simdjson, whole objects and with the
//     projection a Deployment handler uses) against nlohmann_json's parse.
//  2. The TLS admission server with a trivial allow handler, driven over TLS keep-alive by 1 and
//     4 client connections on the same machine: reviews/s and p50/p99 latency.
// Usage: webhook_bench [--seconds N] [--connections 1,4] [--review PATH]
// The last lines are machine-readable ("webhook_bench key=value ...") for bench/run.sh.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "bench/per_call.h"
#include "net/cert_watcher.h"
#include "test/unit/webhook/tls_fixture.h"
#include "webhook/admission.h"
#include "webhook/deployment_handler.h"
#include "webhook/server.h"

namespace {

using Clock = std::chrono::steady_clock;
using vscaler::bench::per_call_us;
using vscaler::webhook::AdmissionRequest;
using vscaler::webhook::AdmissionResponse;
using vscaler::webhook::ParseOptions;
using vscaler::webhook::Projection;

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::cerr << "cannot read " << path << "\n";
    std::exit(2);
  }
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

struct LoadResult {
  double rate = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  long failures = 0;
  long requests = 0;
};

// `connections` keep-alive clients, each sending `body` back to back for `seconds` after a short
// warm-up; latency is measured per request on the client.
LoadResult drive(int port, const std::string& ca_file, const std::string& path,
                 const std::string& body, int connections, double seconds) {
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(connections));
  std::vector<long> failures(static_cast<std::size_t>(connections), 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      httplib::SSLClient client("127.0.0.1", port);
      client.set_ca_cert_path(ca_file);
      client.enable_server_certificate_verification(true);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(10, 0);
      auto& mine = latencies[static_cast<std::size_t>(c)];
      mine.reserve(200000);
      while (!stop.load(std::memory_order_relaxed)) {
        auto start = Clock::now();
        auto result = client.Post(path, body, "application/json");
        std::chrono::duration<double, std::milli> elapsed = Clock::now() - start;
        if (!result || result->status != 200) {
          ++failures[static_cast<std::size_t>(c)];
          continue;
        }
        if (measuring.load(std::memory_order_relaxed)) mine.push_back(elapsed.count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // handshakes, caches, pools
  measuring.store(true);
  auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring.store(false);
  std::chrono::duration<double> elapsed = Clock::now() - start;
  stop.store(true);
  for (auto& thread : threads) thread.join();

  std::vector<double> all;
  LoadResult result;
  for (std::size_t c = 0; c < latencies.size(); ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    result.failures += failures[c];
  }
  std::sort(all.begin(), all.end());
  result.requests = static_cast<long>(all.size());
  result.rate = static_cast<double>(all.size()) / elapsed.count();
  if (!all.empty()) {
    result.p50_ms = all[all.size() / 2];
    result.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  return result;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  std::vector<int> connections = {1, 4};
  std::string review_path = (std::filesystem::path(__FILE__).parent_path().parent_path() / "test" /
                             "data" / "webhook" / "deployment-update-review.json")
                                .string();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--seconds") {
      seconds = std::stod(argv[i + 1]);
    } else if (flag == "--connections") {
      connections = parse_list(argv[i + 1]);
    } else if (flag == "--review") {
      review_path = argv[i + 1];
    } else {
      std::cerr << "usage: webhook_bench [--seconds N] [--connections 1,4] [--review PATH]\n";
      return 2;
    }
  }
  vscaler::log::set_level("warn");
  std::string body = read_file(review_path);

  // 1. Parsing.
  // What the Deployment handler reads (name, namespace and the pod template), as it ships.
  const Projection* projection = &vscaler::webhook::DeploymentHandler::projection();
  ParseOptions projected;
  projected.projection = projection;
  double whole_us = per_call_us(2000, [&] {
    auto parsed = vscaler::webhook::parse_review(body);
    if (!parsed) std::abort();
  });
  double projected_us = per_call_us(2000, [&] {
    auto parsed = vscaler::webhook::parse_review(body, projected);
    if (!parsed) std::abort();
  });
  double nlohmann_us = per_call_us(300, [&] {
    auto parsed = nlohmann::json::parse(body);
    if (parsed.empty()) std::abort();
  });
  std::printf("review: %zu bytes (%s)\n", body.size(),
              std::filesystem::path(review_path).filename().c_str());
  std::printf(
      "parse per review: codec whole %.1f us, codec projected %.1f us, "
      "nlohmann_json %.1f us\n",
      whole_us, projected_us, nlohmann_us);

  // 2. The server.
  vscaler::testing::TestCa ca;
  vscaler::testing::TempDir dir;
  auto pair = ca.issue(1);
  vscaler::testing::write_file(dir.file("tls.crt"), pair.cert);
  vscaler::testing::write_file(dir.file("tls.key"), pair.key);
  vscaler::testing::write_file(dir.file("ca.crt"), ca.cert_pem());
  vscaler::metrics::Registry registry;
  vscaler::net::CertWatcherOptions cert_options;
  cert_options.cert_dir = dir.path();
  cert_options.registry = &registry;
  vscaler::net::CertWatcher certs(cert_options);
  if (!certs.reload()) return 1;
  vscaler::webhook::AdmissionServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.workers = 16;
  options.registry = &registry;
  vscaler::webhook::AdmissionServer server(certs, options);
  auto allow = [](const AdmissionRequest&) { return AdmissionResponse::allow(); };
  vscaler::webhook::HandlerOptions with_projection;
  with_projection.projection = *projection;
  server.handle("/mutate-deployments", allow, with_projection);
  server.handle("/whole", allow);
  if (auto started = server.start(); !started) {
    std::cerr << started.error() << "\n";
    return 1;
  }

  std::printf("\n%-28s %5s %12s %9s %9s %8s\n", "server (allow handler)", "conns", "reviews/s",
              "p50 ms", "p99 ms", "failed");
  std::vector<std::string> lines;
  for (const auto& [path, label] :
       {std::pair<std::string, std::string>{"/mutate-deployments", "projected objects"},
        std::pair<std::string, std::string>{"/whole", "whole objects"}}) {
    for (int count : connections) {
      auto result = drive(server.port(), dir.file("ca.crt"), path, body, count, seconds);
      std::printf("%-28s %5d %12.0f %9.3f %9.3f %8ld\n", label.c_str(), count, result.rate,
                  result.p50_ms, result.p99_ms, result.failures);
      char line[256];
      std::snprintf(line, sizeof line,
                    "webhook_bench objects=%s connections=%d reviews_per_second=%.0f p50_ms=%.3f "
                    "p99_ms=%.3f failures=%ld",
                    path == "/whole" ? "whole" : "projected", count, result.rate, result.p50_ms,
                    result.p99_ms, result.failures);
      lines.emplace_back(line);
    }
  }
  server.stop();
  std::printf("\n");
  std::printf(
      "webhook_bench parse_whole_us=%.1f parse_projected_us=%.1f parse_nlohmann_us=%.1f "
      "review_bytes=%zu\n",
      whole_us, projected_us, nlohmann_us, body.size());
  for (const auto& line : lines) std::printf("%s\n", line.c_str());
  return 0;
}
