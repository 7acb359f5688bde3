// A started admission server on loopback for the webhook tests: its own CA, certificate
// directory and registry, options tweaked per test, and paths that answer "allowed".
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "metrics/registry.h"
#include "test/unit/webhook/tls_fixture.h"
#include "webhook/server.h"

namespace vscaler::testing {

/// An AdmissionServer on 127.0.0.1 (a free port) whose `paths` each allow every review, plus
/// what `routes` registers.
struct StartedServer {
  TestCa ca;
  TempDir dir;
  metrics::Registry registry;
  std::unique_ptr<net::CertWatcher> certs;
  std::unique_ptr<webhook::AdmissionServer> server;

  explicit StartedServer(const std::function<void(webhook::AdmissionServerOptions&)>& tweak,
                         const std::vector<std::string>& paths = {"/allow"},
                         const std::function<void(webhook::AdmissionServer&)>& routes = {}) {
    PemPair pair = ca.issue(7);
    write_file(dir.file("tls.crt"), pair.cert);
    write_file(dir.file("tls.key"), pair.key);
    net::CertWatcherOptions cert_options;
    cert_options.cert_dir = dir.path();
    cert_options.registry = &registry;
    certs = std::make_unique<net::CertWatcher>(cert_options);
    certs->start();
    REQUIRE(certs->loaded());
    webhook::AdmissionServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.registry = &registry;
    tweak(options);
    server = std::make_unique<webhook::AdmissionServer>(*certs, options);
    for (const auto& path : paths) {
      server->handle(path, [](const webhook::AdmissionRequest&) {
        return webhook::AdmissionResponse::allow();
      });
    }
    if (routes) routes(*server);
    REQUIRE(server->start().ok());
  }
  ~StartedServer() {
    server->stop();
    certs->stop();
  }
  StartedServer(const StartedServer&) = delete;
  StartedServer& operator=(const StartedServer&) = delete;
};

}  // namespace vscaler::testing
