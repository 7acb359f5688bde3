// Client-go credential plugins (a kubeconfig user's `exec`): what EKS (`aws eks get-token`), GKE
// (`gke-gcloud-auth-plugin`), AKS (`kubelogin`) and OIDC helpers put in the kubeconfigs they
// write. The plugin is run as client-go runs it — the kubeconfig's args and env on top of ours,
// KUBERNETES_EXEC_INFO describing the request, stderr passed through, stdin only when it may
// prompt — and its ExecCredential is read from stdout, bounded in bytes and time. Neither the
// output nor the credential ever reaches a log or an error message.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/time.h"

namespace vscaler::kube {

/// A kubeconfig user's `exec` section.
struct ExecPlugin {
  /// client.authentication.k8s.io/v1 or /v1beta1; the ExecCredential must answer in the same.
  std::string api_version;
  /// Run through PATH when it has no "/"; a relative path with one is relative to the
  /// kubeconfig's folder (resolved by the loader).
  std::string command;
  std::vector<std::string> args;
  /// Added to (or replacing in) the process's own environment.
  std::vector<std::pair<std::string, std::string>> env;
  /// Shown when the command cannot be run ("install the AWS CLI: ...").
  std::string install_hint;
  /// Never, IfAvailable or Always: whether the plugin may read the terminal (a prompt for an MFA
  /// code). Always fails where stdin is not a terminal, as in kubectl.
  std::string interactive_mode = "IfAvailable";
  /// Present when provideClusterInfo is true: spec.cluster of KUBERNETES_EXEC_INFO, as JSON.
  std::string cluster_json;
  /// "FILE: users[NAME].user.exec", for messages.
  std::string where;
  /// How long one run may take, to its exit (a prompt included), before the plugin and the
  /// processes it started are killed.
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
  /// Most bytes of stdout read; a longer answer fails.
  std::size_t max_output_bytes = 1024 * 1024;
};

/// What a plugin run gave: a bearer token, or a client certificate and its key (PEM).
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  /// status.expirationTimestamp: run the plugin again from then on; none: valid until a 401.
  std::optional<base::TimeMillis> expires;
};

/// Reads an ExecCredential from a plugin's stdout. The error names the field at fault and never
/// quotes the text (it may hold a credential).
Result<ExecCredential> parse_exec_credential(std::string_view output,
                                             const std::string& api_version);

/// Runs the plugin once and reads its answer. Errors say what to fix: the command not found
/// (with the install hint), a nonzero exit, a timeout, an answer too long or malformed.
Result<ExecCredential> run_exec_plugin(const ExecPlugin& plugin);

}  // namespace vscaler::kube
