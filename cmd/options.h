// Options: vscaler's command-line flags (DESIGN.md "The process"), parsed and checked before
// anything starts, so a typo fails at once with a message naming the flag.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/result.h"

namespace vscaler::cmd {

/// Every flag with its default.
struct Options {
  std::string kubeconfig;  ///< empty: $KUBECONFIG, else in-cluster
  int webhook_port = 9443;
  std::string cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  std::string metrics_addr = ":8080";
  std::string health_addr = ":8081";
  std::chrono::milliseconds resync_period{60'000};
  int workers = 4;
  std::string namespace_;  ///< empty: all namespaces
  std::string log_level = "info";
  bool help = false;
  bool version = false;
};

/// Parses `--flag value` and `--flag=value` forms. The error names the flag and the bad value.
kube::Result<Options> parse_options(const std::vector<std::string>& args);

/// Parses a Go-style duration: "60s", "2s", "500ms", "1m", "1h30m", "1.5s".
kube::Result<std::chrono::milliseconds> parse_duration(const std::string& text);

/// The --help text.
extern const char* const kUsage;

}  // namespace vscaler::cmd
