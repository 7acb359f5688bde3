// Health, readiness and metrics endpoints over plain HTTP, and listen-address parsing.
#include "net/health_server.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <stdexcept>

#include "net/http.h"

using vscaler::metrics::parse_listen_address;
using vscaler::metrics::Registry;
using vscaler::net::HealthServer;

TEST_CASE("health: listen addresses are read the way Go reads them") {
  auto all = parse_listen_address(":8080");
  REQUIRE(all.ok());
  CHECK(all->host.empty());
  CHECK(all->port == 8080);
  auto local = parse_listen_address("127.0.0.1:0");
  REQUIRE(local.ok());
  CHECK(local->host == "127.0.0.1");
  CHECK(local->port == 0);
  auto v6 = parse_listen_address("[::1]:8081");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(parse_listen_address("localhost:9090")->host == "localhost");

  CHECK(parse_listen_address("8080").error() ==
        "listen address \"8080\": expected host:port, e.g. :8080");
  CHECK_FALSE(parse_listen_address(":").ok());
  CHECK_FALSE(parse_listen_address(":65536").ok());
  CHECK_FALSE(parse_listen_address(":80a").ok());
  CHECK_FALSE(parse_listen_address("::1:80").ok());
  CHECK_FALSE(parse_listen_address("[::1:80").ok());
}

TEST_CASE("health: /healthz always, /readyz follows the checks, /metrics renders the registry") {
  std::atomic<bool> synced{false};
  std::atomic<bool> certificate{false};
  HealthServer server("127.0.0.1:0");
  server.add_readiness_check("informer", [&] { return synced.load(); });
  server.add_readiness_check("certificate", [&] { return certificate.load(); });
  REQUIRE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());

  auto healthz = client.Get("/healthz");
  REQUIRE(healthz);
  CHECK(healthz->status == 200);
  CHECK(healthz->body == "ok");

  auto readyz = client.Get("/readyz");
  REQUIRE(readyz);
  CHECK(readyz->status == 503);
  CHECK(readyz->body == "[-]informer failed\n[-]certificate failed\nreadyz check failed\n");
  synced = true;
  readyz = client.Get("/readyz");
  REQUIRE(readyz);
  CHECK(readyz->status == 503);
  CHECK(readyz->body == "[+]informer ok\n[-]certificate failed\nreadyz check failed\n");
  certificate = true;
  readyz = client.Get("/readyz");
  REQUIRE(readyz);
  CHECK(readyz->status == 200);
  CHECK(readyz->body == "ok");
  readyz = client.Get("/readyz?verbose");
  REQUIRE(readyz);
  CHECK(readyz->body == "[+]informer ok\n[+]certificate ok\nreadyz check passed\n");

  // /metrics is not served until a registry is exposed.
  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 404);
  Registry registry;
  registry.counter("vscaler_webhook_enqueued_total", "Keys enqueued.").get().inc(3);
  server.expose_metrics(registry);
  metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 200);
  CHECK(metrics->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(metrics->body ==
        "# HELP vscaler_webhook_enqueued_total Keys enqueued.\n"
        "# TYPE vscaler_webhook_enqueued_total counter\n"
        "vscaler_webhook_enqueued_total 3\n");

  CHECK(client.Get("/nothing")->status == 404);
  server.stop();
  server.stop();
}

TEST_CASE("health: a check that throws counts as not ready, and is counted") {
  Registry registry;
  HealthServer server("127.0.0.1:0", registry);
  server.add_readiness_check("broken", []() -> bool { throw std::runtime_error("boom"); });
  REQUIRE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto readyz = client.Get("/readyz");
  REQUIRE(readyz);
  CHECK(readyz->status == 503);
  CHECK(readyz->body.find("[-]broken failed") != std::string::npos);
  // Swallowed before: now logged and counted, once per failed evaluation.
  CHECK(registry.render().find(R"(vscaler_health_errors_total{what="readiness_check"} 1)") !=
        std::string::npos);
}

TEST_CASE("health: only bodiless GET and HEAD are served; bodies are never read") {
  HealthServer server("127.0.0.1:0");
  REQUIRE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  // A body is refused before it is read, whatever the method.
  auto post = client.Post("/healthz", std::string(1024, 'x'), "text/plain");
  REQUIRE(post);
  CHECK(post->status == 413);
  // Another method without a body: 405, naming the allowed ones.
  auto bodiless = client.Post("/healthz", std::string(), "text/plain");
  REQUIRE(bodiless);
  CHECK(bodiless->status == 405);
  CHECK(bodiless->get_header_value("Allow") == "GET, HEAD");
  // A chunked upload is refused before any of it is read.
  auto chunked = client.Post(
      "/metrics",
      [](size_t offset, httplib::DataSink& sink) {
        if (offset < 1024 * 1024) {
          std::string chunk(4096, 'x');
          sink.write(chunk.data(), chunk.size());
        } else {
          sink.done();
        }
        return true;
      },
      "text/plain");
  if (chunked) CHECK(chunked->status == 411);
  auto head = client.Head("/healthz");
  REQUIRE(head);
  CHECK(head->status == 200);
  // The server still answers.
  CHECK(client.Get("/healthz")->status == 200);
}

TEST_CASE("health: all interfaces, and a port in use reported") {
  HealthServer any(":0");
  REQUIRE(any.start().ok());
  httplib::Client client("127.0.0.1", any.port());
  auto healthz = client.Get("/healthz");
  REQUIRE(healthz);
  CHECK(healthz->status == 200);

  HealthServer clash("127.0.0.1:" + std::to_string(any.port()));
  auto started = clash.start();
  REQUIRE_FALSE(started.ok());
  CHECK(started.error().starts_with("cannot listen on 127.0.0.1:"));

  HealthServer bad("nonsense");
  CHECK_FALSE(bad.start().ok());
}

TEST_CASE("health: stop right after start never hangs, and the server starts again") {
  // start() returns once the listener loop runs, so an immediate stop() always ends it (a stop
  // that came first would be lost and the join would hang).
  for (int round = 0; round < 50; ++round) {
    HealthServer server("127.0.0.1:0");
    REQUIRE(server.start().ok());
    server.stop();
    server.stop();  // idempotent
  }
  HealthServer again("127.0.0.1:0");
  REQUIRE(again.start().ok());
  again.stop();
  REQUIRE(again.start().ok());
  httplib::Client client("127.0.0.1", again.port());
  auto healthz = client.Get("/healthz");
  REQUIRE(healthz);
  CHECK(healthz->status == 200);
}

TEST_CASE("health: a page handler is served with its content type, status and query") {
  HealthServer server("127.0.0.1:0");
  server.add_page("/dashboard", [](const vscaler::net::QueryParams& params) {
    auto it = params.find("namespace");
    std::string ns = it == params.end() ? "all" : it->second;
    return vscaler::net::Page{"text/html; charset=utf-8", "<p>" + ns + "</p>",
                              ns == "missing" ? 404 : 200};
  });
  server.add_page("/boom", [](const vscaler::net::QueryParams&) -> vscaler::net::Page {
    throw std::runtime_error("boom");
  });
  REQUIRE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto page = client.Get("/dashboard");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body == "<p>all</p>");
  CHECK(page->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(page->get_header_value("Content-Security-Policy").starts_with("default-src 'none'"));
  page = client.Get("/dashboard?namespace=shop");
  REQUIRE(page);
  CHECK(page->body == "<p>shop</p>");
  page = client.Get("/dashboard?namespace=missing");
  REQUIRE(page);
  CHECK(page->status == 404);
  auto boom = client.Get("/boom");
  REQUIRE(boom);
  CHECK(boom->status == 500);
  auto post = client.Post("/dashboard", "", "text/plain");
  REQUIRE(post);
  CHECK(post->status == 405);
  page = client.Get("/dashboard?namespace=a%2Db%20c&x");  // percent-decoded
  REQUIRE(page);
  CHECK(page->body == "<p>a-b c</p>");
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(vscaler::net::http::query_parameters("/p?a=1+2&b&&c=%41%zz%4") ==
        Pairs{{"a", "1 2"}, {"b", ""}, {"c", "A%zz%4"}});
  CHECK(vscaler::net::http::query_parameters("/p").empty());
}

TEST_CASE("health: pages bound to loopback answer only a loopback Host (DNS rebinding)") {
  HealthServer server("127.0.0.1:0");
  server.add_page("/dashboard", [](const vscaler::net::QueryParams&) {
    return vscaler::net::Page{"text/html; charset=utf-8", "<p>every tenant</p>", 200};
  });
  REQUIRE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  // A page of rebind.evil.example whose name now resolves to 127.0.0.1 fetches it as its own.
  auto rebound = client.Get("/dashboard", {{"Host", "rebind.evil.example:8082"}});
  REQUIRE(rebound);
  CHECK(rebound->status == 403);
  CHECK(rebound->body.find("every tenant") == std::string::npos);
  for (const char* host : {"localhost:8082", "LocalHost", "127.0.0.1:18082", "[::1]:8082"}) {
    CAPTURE(host);
    auto page = client.Get("/dashboard", {{"Host", host}});
    REQUIRE(page);
    CHECK(page->status == 200);
    CHECK(page->get_header_value("X-Frame-Options") == "DENY");
    CHECK(page->get_header_value("Content-Security-Policy").find("frame-ancestors 'none'") !=
          std::string::npos);
  }
  auto probe = client.Get("/healthz", {{"Host", "10.1.2.3:8082"}});  // probes: any Host
  REQUIRE(probe);
  CHECK(probe->status == 200);

  // Bound to every interface (exposed on purpose, behind a Service): any Host.
  HealthServer exposed(":0");
  exposed.add_page("/dashboard", [](const vscaler::net::QueryParams&) {
    return vscaler::net::Page{"text/html; charset=utf-8", "<p>x</p>", 200};
  });
  REQUIRE(exposed.start().ok());
  httplib::Client other("127.0.0.1", exposed.port());
  auto page = other.Get("/dashboard", {{"Host", "vscaler.example.com"}});
  REQUIRE(page);
  CHECK(page->status == 200);

  using vscaler::net::loopback_host;
  CHECK(loopback_host("127.0.0.1"));
  CHECK(loopback_host("127.10.0.3"));
  CHECK(loopback_host("::1"));
  CHECK(loopback_host("0:0:0:0:0:0:0:1"));
  CHECK(loopback_host("::ffff:127.0.0.1"));
  CHECK(loopback_host("localhost."));
  CHECK(loopback_host("dashboard.localhost"));
  CHECK_FALSE(loopback_host("::ffff:10.0.0.1"));
  CHECK_FALSE(loopback_host("evillocalhost"));
  CHECK_FALSE(loopback_host("127.0.0.1.evil.example"));
  CHECK_FALSE(loopback_host("localhost.evil.example"));
  CHECK_FALSE(loopback_host("128.0.0.1"));
  CHECK_FALSE(loopback_host(""));
}
