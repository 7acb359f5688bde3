#include "kube/config.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/log.h"
#include "base/time.h"
#include "kube/base64.h"
#include "kube/tls.h"

namespace vscaler::kube {
namespace {

// Kubeconfigs and service-account files are small; a bigger file is a mistake, not a config.
constexpr std::streamsize kMaxFileSize = 16 * 1024 * 1024;

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(path + ": cannot read: " + std::strerror(errno));
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<std::streamsize>(text.size()) > kMaxFileSize) {
      return fail(path + ": larger than 16 MiB, not a credentials file");
    }
  }
  if (in.bad()) return fail(path + ": read failed: " + std::strerror(errno));
  return text;
}

std::string trim(std::string text) {
  auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!text.empty() && is_space(text.back())) text.pop_back();
  size_t start = 0;
  while (start < text.size() && is_space(text[start])) ++start;
  return text.substr(start);
}

// Standard base64 as Go's encoding/json decodes []byte fields: newlines are ignored; padding
// may be left out. OpenSSL's EVP_DecodeBlock does the decoding; what it does not check (padding
// only at the end, a length no encoder makes) is checked here, with messages saying which.
Result<std::string> decode_base64(std::string_view text) {
  std::string body;
  body.reserve(text.size());
  size_t padding = 0;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return fail("not valid base64 (data after '=')");
    body.push_back(c);
  }
  if (padding > 2 || body.size() % 4 == 1) return fail("not valid base64 (truncated)");
  const size_t added = (4 - body.size() % 4) % 4;  // EVP_DecodeBlock wants whole quantums
  body.append(added, '=');
  std::string out(body.size() / 4 * 3, '\0');
  int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(body.data()),
                                static_cast<int>(body.size()));
  if (decoded < 0) return fail("not valid base64 (unexpected character)");
  // EVP_DecodeBlock counts the padding as zero bytes.
  out.resize(static_cast<size_t>(decoded) - added);
  return out;
}

std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string resolve_path(const std::string& file, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return directory_of(file) + "/" + path;
}

// A named entry (cluster, user or context) and the file that defined it, for relative paths and
// for messages.
struct Entry {
  YAML::Node body;
  std::string file;
  std::string where;  // "clusters[name].cluster"
};

struct MergedConfig {
  std::map<std::string, Entry> clusters;
  std::map<std::string, Entry> users;
  std::map<std::string, Entry> contexts;
  std::string current_context;
  std::string current_context_file;
};

// Reads an optional string field; a present non-string value is an error.
Result<std::string> string_field(const Entry& entry, const char* key) {
  YAML::Node node = entry.body[key];
  if (!node.IsDefined() || node.IsNull()) return std::string();
  if (!node.IsScalar()) {
    return fail(entry.file + ": " + entry.where + "." + key + ": must be a string");
  }
  return node.Scalar();
}

Result<bool> bool_field(const Entry& entry, const char* key) {
  YAML::Node node = entry.body[key];
  if (!node.IsDefined() || node.IsNull()) return false;
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return fail(entry.file + ": " + entry.where + "." + key + ": must be true or false");
  }
  return value;
}

// A list of strings (exec.args); absent is empty.
Result<std::vector<std::string>> string_list(const Entry& entry, const char* key) {
  std::vector<std::string> out;
  YAML::Node node = entry.body[key];
  if (!node.IsDefined() || node.IsNull()) return out;
  if (!node.IsSequence())
    return fail(entry.file + ": " + entry.where + "." + key + ": must be a list");
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar()) {
      return fail(entry.file + ": " + entry.where + "." + key + "[" + std::to_string(i) +
                  "]: must be a string");
    }
    out.push_back(node[i].Scalar());
  }
  return out;
}

// users[].user.exec as client-go reads it; `config` gives the cluster (for provideClusterInfo).
Result<ExecPlugin> exec_plugin_of(const Entry& user, const ClientConfig& config) {
  Entry exec{user.body["exec"], user.file, user.where + ".exec"};
  const std::string at = exec.file + ": " + exec.where;
  if (!exec.body.IsMap()) return fail(at + ": must be a mapping");
  ExecPlugin plugin;
  plugin.where = at;
  auto api_version = string_field(exec, "apiVersion");
  if (!api_version) return fail(api_version.error());
  if (*api_version != "client.authentication.k8s.io/v1" &&
      *api_version != "client.authentication.k8s.io/v1beta1") {
    return fail(at + ".apiVersion: \"" + *api_version +
                "\" is not client.authentication.k8s.io/v1 or /v1beta1 (v1alpha1 was removed in "
                "Kubernetes 1.24; newer versions of the plugin speak v1)");
  }
  plugin.api_version = *api_version;
  auto command = string_field(exec, "command");
  if (!command) return fail(command.error());
  if (command->empty()) return fail(at + ".command: missing");
  // client-go: a relative path with a separator is relative to the kubeconfig's folder; a bare
  // name is looked up in PATH.
  plugin.command =
      command->find('/') == std::string::npos ? *command : resolve_path(exec.file, *command);
  auto args = string_list(exec, "args");
  if (!args) return fail(args.error());
  plugin.args = std::move(*args);
  YAML::Node env = exec.body["env"];
  if (env.IsDefined() && !env.IsNull()) {
    if (!env.IsSequence()) return fail(at + ".env: must be a list of {name, value}");
    for (size_t i = 0; i < env.size(); ++i) {
      Entry item{env[i], exec.file, exec.where + ".env[" + std::to_string(i) + "]"};
      if (!item.body.IsMap())
        return fail(at + ".env[" + std::to_string(i) + "]: must be a mapping");
      auto name = string_field(item, "name");
      if (!name) return fail(name.error());
      if (name->empty() || name->find('=') != std::string::npos) {
        return fail(at + ".env[" + std::to_string(i) + "].name: missing or holding '='");
      }
      auto value = string_field(item, "value");
      if (!value) return fail(value.error());
      plugin.env.emplace_back(std::move(*name), std::move(*value));
    }
  }
  auto hint = string_field(exec, "installHint");
  if (!hint) return fail(hint.error());
  plugin.install_hint = trim(*hint);
  auto mode = string_field(exec, "interactiveMode");
  if (!mode) return fail(mode.error());
  if (mode->empty() && plugin.api_version == "client.authentication.k8s.io/v1") {
    // As kubectl: v1 makes it required (v1beta1 defaults to IfAvailable).
    return fail(at +
                ".interactiveMode: missing; client.authentication.k8s.io/v1 requires Never, "
                "IfAvailable or Always");
  }
  if (!mode->empty()) {
    if (*mode != "Never" && *mode != "IfAvailable" && *mode != "Always") {
      return fail(at + ".interactiveMode: \"" + *mode +
                  "\" is not one of Never, IfAvailable, Always");
    }
    plugin.interactive_mode = *mode;
  }
  auto provide = bool_field(exec, "provideClusterInfo");
  if (!provide) return fail(provide.error());
  if (*provide) {
    nlohmann::json cluster = {{"server", config.server}};
    if (!config.tls_server_name.empty()) cluster["tls-server-name"] = config.tls_server_name;
    if (config.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!config.ca_pem.empty())
      cluster["certificate-authority-data"] = base64_encode(config.ca_pem);
    plugin.cluster_json = cluster.dump();
  }
  return plugin;
}

// Adds the entries of one section ("clusters", with bodies under "cluster") of one file.
Result<Unit> merge_section(const YAML::Node& root, const std::string& file, const char* section,
                           const char* body_key, std::map<std::string, Entry>& into) {
  YAML::Node list = root[section];
  if (!list.IsDefined() || list.IsNull()) return Unit{};
  if (!list.IsSequence()) return fail(file + ": " + section + ": must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    YAML::Node item = list[i];
    std::string at = std::string(section) + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) return fail(file + ": " + at + ": must be a mapping");
    YAML::Node name = item["name"];
    if (!name.IsDefined() || !name.IsScalar() || name.Scalar().empty()) {
      return fail(file + ": " + at + ".name: missing");
    }
    std::string where = std::string(section) + "[" + name.Scalar() + "]." + body_key;
    YAML::Node body = item[body_key];
    if (!body.IsDefined() || body.IsNull()) {
      return fail(file + ": " + where + ": missing");
    }
    if (!body.IsMap()) return fail(file + ": " + where + ": must be a mapping");
    // The first file (and the first entry) that defines a name wins, as in kubectl.
    into.emplace(name.Scalar(), Entry{body, file, where});
  }
  return Unit{};
}

Result<Unit> merge_file(const std::string& file, const std::string& text, MergedConfig& merged) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return fail(file + ": not valid YAML (line " + std::to_string(e.mark.line + 1) + "): " + e.msg);
  }
  if (root.IsNull() || !root.IsDefined()) return Unit{};  // an empty file is an empty config
  if (!root.IsMap()) return fail(file + ": not a kubeconfig (the top level must be a mapping)");
  try {
    if (auto r = merge_section(root, file, "clusters", "cluster", merged.clusters); !r) {
      return fail(r.error());
    }
    if (auto r = merge_section(root, file, "users", "user", merged.users); !r) {
      return fail(r.error());
    }
    if (auto r = merge_section(root, file, "contexts", "context", merged.contexts); !r) {
      return fail(r.error());
    }
    YAML::Node current = root["current-context"];
    if (current.IsDefined() && !current.IsNull()) {
      if (!current.IsScalar()) return fail(file + ": current-context: must be a string");
      if (merged.current_context.empty() && !current.Scalar().empty()) {
        merged.current_context = current.Scalar();
        merged.current_context_file = file;
      }
    }
  } catch (const YAML::Exception& e) {
    return fail(file + ": malformed kubeconfig: " + e.msg);
  }
  return Unit{};
}

// Reads one piece of TLS data: the -data field (base64) wins over the file field, as in kubectl.
// `label` receives a description of where it came from, for later messages.
Result<std::string> pem_field(const Entry& entry, const char* data_key, const char* file_key,
                              std::string& label) {
  auto data = string_field(entry, data_key);
  if (!data) return fail(data.error());
  if (!data->empty()) {
    label = entry.file + ": " + entry.where + "." + data_key;
    auto decoded = decode_base64(*data);
    if (!decoded) return fail(label + ": " + decoded.error());
    return std::move(*decoded);
  }
  auto path = string_field(entry, file_key);
  if (!path) return fail(path.error());
  if (path->empty()) return std::string();
  std::string resolved = resolve_path(entry.file, *path);
  label = entry.file + ": " + entry.where + "." + file_key + " (" + resolved + ")";
  auto text = read_text_file(resolved);
  if (!text) return fail(entry.file + ": " + entry.where + "." + file_key + ": " + text.error());
  return std::move(*text);
}

Result<ClientConfig> build_config(const MergedConfig& merged, const std::string& files,
                                  const std::string& context_name) {
  std::string name = context_name.empty() ? merged.current_context : context_name;
  if (name.empty()) {
    return fail(files + ": no context was asked for and current-context is not set");
  }
  auto context_it = merged.contexts.find(name);
  if (context_it == merged.contexts.end()) {
    std::string known;
    for (const auto& [key, value] : merged.contexts) known += (known.empty() ? "" : ", ") + key;
    std::string origin =
        context_name.empty() ? merged.current_context_file + ": current-context" : files;
    return fail(origin + ": context \"" + name +
                "\" not found (contexts: " + (known.empty() ? "none" : known) + ")");
  }
  const Entry& context = context_it->second;
  auto cluster_name = string_field(context, "cluster");
  if (!cluster_name) return fail(cluster_name.error());
  if (cluster_name->empty()) return fail(context.file + ": " + context.where + ".cluster: missing");
  auto cluster_it = merged.clusters.find(*cluster_name);
  if (cluster_it == merged.clusters.end()) {
    return fail(context.file + ": " + context.where + ".cluster: cluster \"" + *cluster_name +
                "\" not found in clusters");
  }
  const Entry& cluster = cluster_it->second;
  auto user_name = string_field(context, "user");
  if (!user_name) return fail(user_name.error());
  const Entry* user = nullptr;
  if (!user_name->empty()) {
    auto user_it = merged.users.find(*user_name);
    if (user_it == merged.users.end()) {
      return fail(context.file + ": " + context.where + ".user: user \"" + *user_name +
                  "\" not found in users");
    }
    user = &user_it->second;
  }

  ClientConfig config;
  config.source = "kubeconfig " + files + " (context " + name + ")";
  auto ns = string_field(context, "namespace");
  if (!ns) return fail(ns.error());
  if (!ns->empty()) config.default_namespace = *ns;

  auto server = string_field(cluster, "server");
  if (!server) return fail(server.error());
  if (server->empty()) return fail(cluster.file + ": " + cluster.where + ".server: missing");
  if (server->rfind("https://", 0) != 0 && server->rfind("http://", 0) != 0) {
    return fail(cluster.file + ": " + cluster.where + ".server: \"" + *server +
                "\" is not an http(s) URL");
  }
  config.server = *server;
  auto insecure = bool_field(cluster, "insecure-skip-tls-verify");
  if (!insecure) return fail(insecure.error());
  config.insecure_skip_tls_verify = *insecure;
  auto server_name = string_field(cluster, "tls-server-name");
  if (!server_name) return fail(server_name.error());
  config.tls_server_name = *server_name;
  std::string ca_label = "CA";
  auto ca = pem_field(cluster, "certificate-authority-data", "certificate-authority", ca_label);
  if (!ca) return fail(ca.error());
  config.ca_pem = std::move(*ca);
  if (config.insecure_skip_tls_verify && !config.ca_pem.empty()) {
    return fail(cluster.file + ": " + cluster.where +
                ": insecure-skip-tls-verify and a certificate-authority are both set; choose one");
  }

  std::string cert_label = "client certificate", key_label = "client key";
  if (user) {
    if (user->body["auth-provider"].IsDefined() && !user->body["auth-provider"].IsNull()) {
      return fail(user->file + ": " + user->where +
                  ".auth-provider: not supported (kubectl dropped auth-provider plugins in 1.26); "
                  "use the exec plugin that replaced it (gke-gcloud-auth-plugin, kubelogin)");
    }
    if (user->body["username"].IsDefined() || user->body["password"].IsDefined()) {
      return fail(user->file + ": " + user->where +
                  ".username/password: basic authentication is not supported");
    }
    auto cert = pem_field(*user, "client-certificate-data", "client-certificate", cert_label);
    if (!cert) return fail(cert.error());
    config.client_cert_pem = std::move(*cert);
    auto key = pem_field(*user, "client-key-data", "client-key", key_label);
    if (!key) return fail(key.error());
    config.client_key_pem = std::move(*key);
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      return fail(user->file + ": " + user->where + ": " +
                  (config.client_cert_pem.empty()
                       ? "client-key is set without client-certificate"
                       : "client-certificate is set without client-key"));
    }
    auto token = string_field(*user, "token");
    if (!token) return fail(token.error());
    config.token = trim(*token);
    auto token_file = string_field(*user, "tokenFile");
    if (!token_file) return fail(token_file.error());
    if (!token_file->empty()) {
      config.token_file = resolve_path(user->file, *token_file);
      auto text = read_text_file(config.token_file);
      if (!text) return fail(user->file + ": " + user->where + ".tokenFile: " + text.error());
      if (trim(*text).empty()) {
        return fail(user->file + ": " + user->where + ".tokenFile: " + config.token_file +
                    " is empty");
      }
    }
  }
  // As client-go: a token or client certificate given with exec is used, and the plugin never
  // runs (`kubectl --token` over a kubeconfig with a plugin means that token).
  bool static_credential =
      !config.token.empty() || !config.token_file.empty() || !config.client_cert_pem.empty();
  if (user && user->body["exec"].IsDefined() && !user->body["exec"].IsNull() &&
      !static_credential) {
    auto plugin = exec_plugin_of(*user, config);
    if (!plugin) return fail(plugin.error());
    auto credential = run_exec_plugin(*plugin);
    if (!credential) return fail(credential.error());
    config.token = std::move(credential->token);
    config.token_expires = credential->expires;
    config.client_cert_pem = std::move(credential->client_cert_pem);
    config.client_key_pem = std::move(credential->client_key_pem);
    cert_label = key_label = plugin->where + " (its ExecCredential)";
    if (!config.client_cert_pem.empty() && config.token_expires) {
      // The TLS context holds the certificate from start to end: it is not renewed (tokens are).
      log::warn("kube.config",
                "the credential plugin gave a client certificate that expires; it is not renewed, "
                "so restart before then (or use a plugin that gives tokens)",
                {{"plugin", plugin->where}, {"expires", base::rfc3339(*config.token_expires)}});
    }
    config.exec_plugin = std::make_shared<const ExecPlugin>(std::move(*plugin));
  }
  auto material = TlsMaterial::parse(config.ca_pem, config.client_cert_pem, config.client_key_pem,
                                     ca_label, cert_label, key_label);
  if (!material) return fail(material.error());
  return config;
}

}  // namespace

Result<ClientConfig> load_kubeconfig_files(const std::vector<std::string>& paths,
                                           const std::string& context) {
  MergedConfig merged;
  std::string files;
  size_t found = 0;
  std::string first_error;
  for (const auto& path : paths) {
    if (path.empty()) continue;
    files += (files.empty() ? "" : ":") + path;
    struct stat info {};
    // kubectl skips list entries that do not exist, but a single named file must exist.
    if (paths.size() > 1 && ::stat(path.c_str(), &info) != 0 && errno == ENOENT) {
      if (first_error.empty()) first_error = path + ": cannot read: " + std::strerror(ENOENT);
      continue;
    }
    auto text = read_text_file(path);
    if (!text) return fail(text.error());
    ++found;
    if (auto merged_ok = merge_file(path, *text, merged); !merged_ok) {
      return fail(merged_ok.error());
    }
  }
  if (files.empty()) return fail(std::string("no kubeconfig file was given"));
  if (found == 0) return fail(first_error);
  return build_config(merged, files, context);
}

Result<ClientConfig> load_kubeconfig(const std::string& path, const std::string& context) {
  return load_kubeconfig_files({path}, context);
}

Result<ClientConfig> load_in_cluster(const std::string& service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port) {
    return fail(std::string(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not "
        "running in a pod?)"));
  }
  ClientConfig config;
  std::string host_text = host;
  if (host_text.find(':') != std::string::npos) host_text = "[" + host_text + "]";  // IPv6
  config.server = "https://" + host_text + ":" + port;
  config.source = "in-cluster service account (" + service_account_dir + ")";
  config.token_file = service_account_dir + "/token";
  auto token = read_text_file(config.token_file);
  if (!token) return fail("in-cluster: token: " + token.error());
  if (trim(*token).empty()) return fail("in-cluster: token: " + config.token_file + " is empty");
  std::string ca_path = service_account_dir + "/ca.crt";
  auto ca = read_text_file(ca_path);
  if (!ca) return fail("in-cluster: ca.crt: " + ca.error());
  config.ca_pem = std::move(*ca);
  auto material = TlsMaterial::parse(config.ca_pem, "", "", "in-cluster: " + ca_path);
  if (!material) return fail(material.error());
  // The namespace file is there in every pod, but its absence is no reason to refuse to start.
  if (auto ns = read_text_file(service_account_dir + "/namespace"); ns && !trim(*ns).empty()) {
    config.default_namespace = trim(*ns);
  }
  return config;
}

Result<ClientConfig> load_default(const std::string& kubeconfig_flag,
                                  const std::string& service_account_dir,
                                  const std::string& context) {
  if (!kubeconfig_flag.empty()) return load_kubeconfig(kubeconfig_flag, context);
  const char* env = std::getenv("KUBECONFIG");
  if (env && *env) {
    std::vector<std::string> paths;
    std::stringstream list(env);
    for (std::string path; std::getline(list, path, ':');) {
      if (!path.empty()) paths.push_back(path);
    }
    return load_kubeconfig_files(paths, context);
  }
  if (!context.empty()) {
    return fail("context " + context +
                ": no kubeconfig to take it from (no --kubeconfig given, KUBECONFIG is not set)");
  }
  auto in_cluster = load_in_cluster(service_account_dir);
  if (!in_cluster) {
    return fail("no --kubeconfig given, KUBECONFIG is not set, and " + in_cluster.error());
  }
  return in_cluster;
}

}  // namespace vscaler::kube
