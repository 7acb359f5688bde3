// The API server's version (GET /version), for features that depend on it: the in-place modes
// need pods/resize (Kubernetes 1.33).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace vscaler::kube {

/// A Kubernetes version's major and minor numbers.
struct ServerVersion {
  int major = 0;
  int minor = 0;
  /// True from `major`.`minor` on.
  bool at_least(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
};

/// The version in a /version answer ({"major": "1", "minor": "33+", ...}: providers append "+"
/// or more to the minor); nullopt when it is not one.
std::optional<ServerVersion> parse_server_version(const nlohmann::json& answer);

}  // namespace vscaler::kube
