// ClientConfig: how to reach and authenticate to the API server, loaded from a kubeconfig file
// (as kubectl reads it) or from the in-cluster service account. Every failure names the file and
// the field, so a broken deployment says what to fix.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "kube/exec_plugin.h"

namespace vscaler::kube {

/// Everything the transport needs to talk to one API server as one identity.
struct ClientConfig {
  /// "https://host:port", optionally with a path prefix ("https://proxy/k8s/clusters/c1").
  std::string server;
  /// PEM certificates trusted to sign the API server's certificate. Empty means the system trust
  /// store; when set, only these are trusted (the system store is not consulted).
  std::string ca_pem;
  /// PEM client certificate (optionally followed by intermediates) and its PEM private key.
  std::string client_cert_pem;
  std::string client_key_pem;
  /// A fixed bearer token; ignored when token_file is set.
  std::string token;
  /// A file holding the bearer token; re-read whenever it changes on disk, because projected
  /// service-account tokens are rotated by the kubelet while the process runs.
  std::string token_file;
  /// A credential plugin (a kubeconfig user's `exec`): run by the loader for the first token or
  /// client certificate, and by the transport again for a token once it expires or the API
  /// server answers 401. Null for every other way of authenticating.
  std::shared_ptr<const ExecPlugin> exec_plugin;
  /// When the plugin's token expires (its expirationTimestamp); none: at the first 401.
  std::optional<base::TimeMillis> token_expires;
  /// Skip verification of the server certificate (kubeconfig insecure-skip-tls-verify).
  bool insecure_skip_tls_verify = false;
  /// The name to verify the server certificate against instead of the URL's host
  /// (kubeconfig tls-server-name).
  std::string tls_server_name;
  /// Namespace of the context (or of the service account); "default" when none is given.
  std::string default_namespace = "default";
  /// Where this configuration came from ("kubeconfig /x (context y)", "in-cluster"), for messages.
  std::string source;
  /// TCP connect plus TLS handshake limit.
  std::chrono::milliseconds connect_timeout{10'000};
  /// Longest wait for an ordinary (non-watch) response; a list of thousands of objects on a busy
  /// server can take many seconds.
  std::chrono::milliseconds request_timeout{60'000};
  /// Largest body of an ordinary (non-watch) response, decompressed: a longer answer fails with
  /// kDecode (whatever its status) and its connection is dropped, instead of the process growing
  /// until it is OOM-killed (a page of a list is a few MB; the chart's memory limit is 256 MiB).
  /// Watches bound each event instead (WatchOptions::max_event_bytes).
  std::size_t max_response_bytes = 64 * 1024 * 1024;
  /// Most connections used for ordinary requests at once (one request per connection at a time);
  /// further concurrent callers wait. Watches use their own connections on top.
  int max_connections = 16;
  /// Sent as User-Agent; shows up in the API server's audit log and metrics.
  std::string user_agent = "vscaler/" VSCALER_VERSION;
};

/// Loads a kubeconfig file: the context named `context`, or the file's current-context when
/// empty. Supports clusters' server, certificate-authority(-data), insecure-skip-tls-verify and
/// tls-server-name; users' client-certificate(-data), client-key(-data), token, tokenFile and exec
/// (credential plugins, run once here: a plugin that fails fails the load); contexts' namespace.
/// Relative file paths are relative to the kubeconfig's folder. auth-provider (removed from
/// kubectl in 1.26) and basic authentication are rejected with a message saying so.
Result<ClientConfig> load_kubeconfig(const std::string& path, const std::string& context = "");

/// Like load_kubeconfig for a list of files merged as kubectl merges $KUBECONFIG: the first file
/// that defines a name (cluster, user, context, current-context) wins; missing files are skipped
/// unless all are missing.
Result<ClientConfig> load_kubeconfig_files(const std::vector<std::string>& paths,
                                           const std::string& context = "");

/// Where a pod's service-account credentials are mounted.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Loads the in-cluster configuration: the server from KUBERNETES_SERVICE_HOST and
/// KUBERNETES_SERVICE_PORT, and token (as token_file, re-read on rotation), ca.crt and namespace
/// from `service_account_dir` (a parameter so tests can point it elsewhere).
Result<ClientConfig> load_in_cluster(const std::string& service_account_dir = kServiceAccountDir);

/// What the operator does at startup: the --kubeconfig flag if given, else $KUBECONFIG (a
/// colon-separated list) if set, else the in-cluster service account. `context` picks a context
/// of the kubeconfig (empty: its current-context); with the service account it is an error.
Result<ClientConfig> load_default(const std::string& kubeconfig_flag,
                                  const std::string& service_account_dir = kServiceAccountDir,
                                  const std::string& context = "");

}  // namespace vscaler::kube
