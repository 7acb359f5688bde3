// The kubeconfig and in-cluster loaders: every supported field, file references relative to the
// kubeconfig, merging of $KUBECONFIG lists, and each malformed case failing with a message that
// names the file and the field.
#include "kube/config.h"

#include <doctest/doctest.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "test/unit/support/temp_dir.h"

using namespace vscaler::kube;
namespace fs = std::filesystem;

namespace {

// A self-signed certificate and its key, made in memory so no private key lives in the tree.
struct Pem {
  std::string cert;
  std::string key;
};

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<size_t>(size));
  BIO_free(bio);
  return text;
}

Pem make_cert(const char* common_name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  REQUIRE(key != nullptr);
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_set_pubkey(cert, key);
  REQUIRE(X509_sign(cert, key, EVP_sha256()) > 0);
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, cert);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  Pem pem{bio_text(cert_bio), bio_text(key_bio)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return pem;
}

const Pem& ca() {
  static const Pem pem = make_cert("test-ca");
  return pem;
}
const Pem& client() {
  static const Pem pem = make_cert("test-client");
  return pem;
}
const Pem& other() {
  static const Pem pem = make_cert("other");
  return pem;
}

std::string base64(const std::string& data, bool pad = true) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    unsigned n = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8) |
                 static_cast<unsigned char>(data[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (i + 1 == data.size()) {
    unsigned n = static_cast<unsigned char>(data[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    if (pad) out += "==";
  } else if (i + 2 == data.size()) {
    unsigned n = (static_cast<unsigned char>(data[i]) << 16) |
                 (static_cast<unsigned char>(data[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    if (pad) out += "=";
  }
  return out;
}

using vscaler::testing::TempDir;

// A complete kubeconfig with embedded data; `user` and `cluster` bodies can be replaced.
std::string kubeconfig(const std::string& cluster_body, const std::string& user_body,
                       const std::string& extra = "") {
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: c1\n  cluster:\n" + cluster_body +
         "users:\n- name: u1\n  user:\n" + user_body +
         "contexts:\n- name: ctx1\n  context: {cluster: c1, user: u1, namespace: team-a}\n"
         "- name: ctx2\n  context: {cluster: c1, user: u1}\n"
         "current-context: ctx1\n" +
         extra;
}

std::string data_cluster() {
  return "    server: https://127.0.0.1:6443\n    certificate-authority-data: " +
         base64(ca().cert) + "\n";
}
std::string data_user() {
  return "    client-certificate-data: " + base64(client().cert) +
         "\n    client-key-data: " + base64(client().key) + "\n    token: abc.def\n";
}

// Loads `text` as a kubeconfig and expects a failure whose message contains each fragment.
void expect_failure(const std::string& text, std::initializer_list<const char*> fragments,
                    const std::string& context = "") {
  TempDir dir;
  std::string path = dir.write("config", text);
  auto config = load_kubeconfig(path, context);
  REQUIRE_FALSE(config.ok());
  CHECK_MESSAGE(config.error().find(path) != std::string::npos, config.error());
  for (const char* fragment : fragments) {
    CHECK_MESSAGE(config.error().find(fragment) != std::string::npos, config.error());
  }
}

// Sets or clears environment variables for one test case and restores them afterwards.
struct EnvOverride {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  void set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      setenv(name.c_str(), value, 1);
    } else {
      unsetenv(name.c_str());
    }
  }
  ~EnvOverride() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }
};

}  // namespace

TEST_CASE("kubeconfig with embedded data: every field lands in ClientConfig") {
  TempDir dir;
  std::string path = dir.write("config", kubeconfig(data_cluster(), data_user()));
  auto config = load_kubeconfig(path);
  REQUIRE_MESSAGE(config.ok(), config.error());
  CHECK(config->server == "https://127.0.0.1:6443");
  CHECK(config->ca_pem == ca().cert);
  CHECK(config->client_cert_pem == client().cert);
  CHECK(config->client_key_pem == client().key);
  CHECK(config->token == "abc.def");
  CHECK(config->token_file.empty());
  CHECK_FALSE(config->insecure_skip_tls_verify);
  CHECK(config->default_namespace == "team-a");
  CHECK(config->source.find("context ctx1") != std::string::npos);
}

TEST_CASE("a named context wins over current-context; no namespace means default") {
  TempDir dir;
  std::string path = dir.write("config", kubeconfig(data_cluster(), data_user()));
  auto config = load_kubeconfig(path, "ctx2");
  REQUIRE_MESSAGE(config.ok(), config.error());
  CHECK(config->default_namespace == "default");
  CHECK(config->source.find("context ctx2") != std::string::npos);
}

TEST_CASE("file references are read relative to the kubeconfig's folder") {
  TempDir dir;
  dir.write("pki/ca.crt", ca().cert);
  dir.write("pki/client.crt", client().cert);
  dir.write("pki/client.key", client().key);
  dir.write("token", "file-token\n");
  std::string path = dir.write(
      "sub/../config", kubeconfig("    server: https://k8s.example:443/prefix\n"
                                  "    certificate-authority: pki/ca.crt\n"
                                  "    tls-server-name: api.internal\n",
                                  "    client-certificate: " + dir.file("pki/client.crt") +
                                      "\n    client-key: pki/client.key\n    tokenFile: token\n"));
  auto config = load_kubeconfig(path);
  REQUIRE_MESSAGE(config.ok(), config.error());
  CHECK(config->server == "https://k8s.example:443/prefix");
  CHECK(config->ca_pem == ca().cert);
  CHECK(config->client_cert_pem == client().cert);
  CHECK(config->client_key_pem == client().key);
  CHECK(config->token_file == dir.file("sub/../token"));
  CHECK(config->tls_server_name == "api.internal");
}

TEST_CASE("-data fields win over file fields; base64 may be wrapped and unpadded") {
  TempDir dir;
  std::string wrapped = base64(ca().cert);
  for (size_t at = 64; at < wrapped.size(); at += 65) wrapped.insert(at, "\n      ");
  std::string path =
      dir.write("config", kubeconfig("    server: https://127.0.0.1:6443\n"
                                     "    certificate-authority: does-not-exist.crt\n"
                                     "    certificate-authority-data: |\n      " +
                                         wrapped + "\n",
                                     "    token: t\n"));
  auto config = load_kubeconfig(path);
  REQUIRE_MESSAGE(config.ok(), config.error());
  CHECK(config->ca_pem == ca().cert);

  std::string no_padding =
      dir.write("config3", kubeconfig("    server: https://h:1\n    certificate-authority-data: " +
                                          base64(ca().cert, false) + "\n",
                                      "    token: t\n"));
  auto decoded = load_kubeconfig(no_padding);
  REQUIRE_MESSAGE(decoded.ok(), decoded.error());
  CHECK(decoded->ca_pem == ca().cert);
}

TEST_CASE("insecure-skip-tls-verify, and a context without a user") {
  TempDir dir;
  std::string path =
      dir.write("config",
                "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:8080\n"
                "    insecure-skip-tls-verify: true\n"
                "contexts:\n- name: x\n  context: {cluster: c}\n"
                "current-context: x\n");
  auto config = load_kubeconfig(path);
  REQUIRE_MESSAGE(config.ok(), config.error());
  CHECK(config->insecure_skip_tls_verify);
  CHECK(config->server == "http://127.0.0.1:8080");
  CHECK(config->token.empty());
  CHECK(config->client_cert_pem.empty());
}

TEST_CASE("a $KUBECONFIG list merges: first definition wins, missing files are skipped") {
  TempDir dir;
  std::string first = dir.write("a",
                                "clusters:\n- name: c1\n  cluster: {server: https://first:1, "
                                "insecure-skip-tls-verify: true}\n"
                                "users:\n- name: u1\n  user: {token: first}\n");
  std::string second = dir.write(
      "b",
      "clusters:\n- name: c1\n  cluster: {server: https://second:1}\n"
      "- name: c2\n  cluster: {server: https://second:2, insecure-skip-tls-verify: true}\n"
      "contexts:\n- name: x\n  context: {cluster: c1, user: u1}\n"
      "- name: y\n  context: {cluster: c2, user: u1}\n"
      "current-context: x\n");
  std::string third = dir.write("c", "current-context: y\n");
  auto merged = load_kubeconfig_files({first, dir.file("missing"), second, third});
  REQUIRE_MESSAGE(merged.ok(), merged.error());
  CHECK(merged->server == "https://first:1");
  CHECK(merged->token == "first");
  auto named = load_kubeconfig_files({first, second}, "y");
  REQUIRE(named.ok());
  CHECK(named->server == "https://second:2");
  auto none = load_kubeconfig_files({dir.file("missing"), dir.file("m2")});
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().find("missing") != std::string::npos);
}

TEST_CASE("in-cluster: service host and port, token file, CA and namespace from the folder") {
  TempDir dir;
  dir.write("sa/token", "in-cluster-token\n");
  dir.write("sa/ca.crt", ca().cert);
  dir.write("sa/namespace", "vscaler-system");
  EnvOverride env;
  env.set("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  env.set("KUBERNETES_SERVICE_PORT", "443");
  auto config = load_in_cluster(dir.file("sa"));
  REQUIRE_MESSAGE(config.ok(), config.error());
  CHECK(config->server == "https://10.0.0.1:443");
  CHECK(config->token_file == dir.file("sa/token"));
  CHECK(config->ca_pem == ca().cert);
  CHECK(config->default_namespace == "vscaler-system");

  env.set("KUBERNETES_SERVICE_HOST", "fd00::1");
  fs::remove(fs::path(dir.file("sa/namespace")));
  auto v6 = load_in_cluster(dir.file("sa"));
  REQUIRE(v6.ok());
  CHECK(v6->server == "https://[fd00::1]:443");
  CHECK(v6->default_namespace == "default");

  fs::remove(fs::path(dir.file("sa/token")));
  auto no_token = load_in_cluster(dir.file("sa"));
  REQUIRE_FALSE(no_token.ok());
  CHECK(no_token.error().find(dir.file("sa/token")) != std::string::npos);

  dir.write("sa/token", "t");
  dir.write("sa/ca.crt", "not a certificate");
  auto bad_ca = load_in_cluster(dir.file("sa"));
  REQUIRE_FALSE(bad_ca.ok());
  CHECK(bad_ca.error().find("ca.crt") != std::string::npos);

  env.set("KUBERNETES_SERVICE_HOST", nullptr);
  auto outside = load_in_cluster(dir.file("sa"));
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.error().find("KUBERNETES_SERVICE_HOST") != std::string::npos);
}

TEST_CASE("load_default: the flag, else $KUBECONFIG, else in-cluster") {
  TempDir dir;
  std::string a = dir.write("a", kubeconfig("    server: https://flag:1\n"
                                            "    insecure-skip-tls-verify: true\n",
                                            "    token: t\n"));
  std::string b = dir.write("b", kubeconfig("    server: https://env:1\n"
                                            "    insecure-skip-tls-verify: true\n",
                                            "    token: t\n"));
  dir.write("sa/token", "t");
  dir.write("sa/ca.crt", ca().cert);
  EnvOverride env;
  env.set("KUBECONFIG", dir.file("missing").append(":").append(b).c_str());
  env.set("KUBERNETES_SERVICE_HOST", "10.0.0.9");
  env.set("KUBERNETES_SERVICE_PORT", "6443");
  CHECK(load_default(a)->server == "https://flag:1");
  CHECK(load_default("")->server == "https://env:1");
  env.set("KUBECONFIG", nullptr);
  CHECK(load_default("", dir.file("sa"))->server == "https://10.0.0.9:6443");
  env.set("KUBERNETES_SERVICE_HOST", nullptr);
  auto nothing = load_default("", dir.file("sa"));
  REQUIRE_FALSE(nothing.ok());
  CHECK(nothing.error().find("KUBECONFIG is not set") != std::string::npos);
}

TEST_CASE("an exec credential plugin: run at load, relative to the kubeconfig, cluster info") {
  TempDir dir;
  // The plugin echoes what it was given into its token, so the test sees args, env and info.
  dir.script("bin/token.sh",
             "server=$(echo \"$KUBERNETES_EXEC_INFO\" | sed -n "
             "'s/.*\"server\":\"\\([^\"]*\\)\".*/\\1/p')\n"
             "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
             "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"'\"$1-$REGION-$server\"'\","
             "\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}}'\n");
  std::string path = dir.write(
      "config",
      kubeconfig("    server: https://api.example:6443\n    insecure-skip-tls-verify: true\n",
                 "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                 "      command: ./bin/token.sh\n      args: [eks]\n"
                 "      env: [{name: REGION, value: eu-west-1}]\n"
                 "      interactiveMode: Never\n      provideClusterInfo: true\n"));
  auto config = load_kubeconfig(path);
  REQUIRE_MESSAGE(config.ok(), config.error());
  CHECK(config->token == "eks-eu-west-1-https://api.example:6443");
  REQUIRE(config->token_expires.has_value());
  CHECK(config->token_expires->time_since_epoch() ==
        std::chrono::sys_days(std::chrono::year(2030) / 1 / 2).time_since_epoch() +
            std::chrono::hours(3) + std::chrono::minutes(4) + std::chrono::seconds(5));
  REQUIRE(config->exec_plugin != nullptr);
  CHECK(fs::path(config->exec_plugin->command).lexically_normal() ==
        fs::path(dir.file("bin/token.sh")));
  CHECK(config->exec_plugin->interactive_mode == "Never");

  // A plugin answering with a client certificate: the pair is checked like any other.
  dir.write("cert.json",
            "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
            "\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":" +
                nlohmann::json(client().cert).dump() +
                ",\"clientKeyData\":" + nlohmann::json(other().key).dump() + "}}");
  std::string cert_plugin = dir.script("cert.sh", "exec cat \"$(dirname \"$0\")/cert.json\"\n");
  expect_failure(kubeconfig(data_cluster(),
                            "    exec:\n      apiVersion: "
                            "client.authentication.k8s.io/v1beta1\n"
                            "      command: " +
                                cert_plugin + "\n"),
                 {"users[u1].user.exec (its ExecCredential)", "does not belong"});

  // provideClusterInfo with a CA: KUBERNETES_EXEC_INFO carries it as certificate-authority-data.
  std::string info_plugin =
      dir.script("info.sh",
                 "echo \"$KUBERNETES_EXEC_INFO\" > \"$(dirname \"$0\")/info.json\"\n"
                 "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                 "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n");
  auto with_ca = load_kubeconfig(
      dir.write("with-ca", kubeconfig(data_cluster(),
                                      "    exec:\n      apiVersion: "
                                      "client.authentication.k8s.io/v1\n      command: " +
                                          info_plugin +
                                          "\n      interactiveMode: Never\n"
                                          "      provideClusterInfo: true\n")));
  REQUIRE_MESSAGE(with_ca.ok(), with_ca.error());
  auto info = nlohmann::json::parse(dir.read("info.json"));
  CHECK(info["spec"]["cluster"]["server"] == "https://127.0.0.1:6443");
  CHECK(info["spec"]["cluster"]["certificate-authority-data"] == base64(ca().cert));
  CHECK(info["spec"]["interactive"] == false);

  // As client-go: a token given with exec is used and the plugin never runs (here it could not).
  auto both = load_kubeconfig(
      dir.write("both", kubeconfig("    server: https://x\n    insecure-skip-tls-verify: true\n",
                                   "    token: abc\n    exec: {apiVersion: "
                                   "client.authentication.k8s.io/v1, command: "
                                   "vscaler-no-such-plugin, interactiveMode: Never}\n")));
  REQUIRE_MESSAGE(both.ok(), both.error());
  CHECK(both->token == "abc");
  CHECK(both->exec_plugin == nullptr);
}

TEST_CASE("malformed files: each failure names the file and what is wrong") {
  TempDir dir;
  auto missing = load_kubeconfig(dir.file("nope"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find(dir.file("nope") + ": cannot read") == 0);

  expect_failure("clusters: [\n  - name: x\n", {"not valid YAML", "line"});
  expect_failure("- a\n- b\n", {"not a kubeconfig"});
  expect_failure("clusters: {a: 1}\n", {"clusters: must be a list"});
  expect_failure("clusters:\n- cluster: {server: https://x}\n", {"clusters[0].name: missing"});
  expect_failure("clusters:\n- name: c\n", {"clusters[c].cluster: missing"});
  expect_failure("clusters:\n- name: c\n  cluster: [1]\n",
                 {"clusters[c].cluster: must be a mapping"});
  expect_failure("users:\n- name: u\n  user: 5\n", {"users[u].user: must be a mapping"});
  expect_failure("current-context: [a]\n", {"current-context: must be a string"});
}

TEST_CASE("malformed contexts: missing, unknown cluster or user, no current-context") {
  std::string base =
      "clusters:\n- name: c\n  cluster: {server: https://x:1, "
      "insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\n";
  expect_failure(base, {"current-context is not set"});
  expect_failure(base + "current-context: gone\n",
                 {"current-context", "context \"gone\" not found"});
  expect_failure(base + "contexts:\n- name: x\n  context: {user: u}\ncurrent-context: x\n",
                 {"contexts[x].context.cluster: missing"});
  expect_failure(base + "contexts:\n- name: x\n  context: {cluster: nope}\ncurrent-context: x\n",
                 {"contexts[x].context.cluster", "cluster \"nope\" not found"});
  expect_failure(base +
                     "contexts:\n- name: x\n  context: {cluster: c, user: nope}\n"
                     "current-context: x\n",
                 {"contexts[x].context.user", "user \"nope\" not found"});
  TempDir dir;
  std::string path = dir.write("config", base + "contexts:\n- name: x\n  context: {cluster: c}\n");
  auto named = load_kubeconfig(path, "other");
  REQUIRE_FALSE(named.ok());
  CHECK(named.error().find("context \"other\" not found (contexts: x)") != std::string::npos);
}

TEST_CASE("malformed clusters: server, flags, CA data and files") {
  std::string user = "    token: t\n";
  expect_failure(kubeconfig("    insecure-skip-tls-verify: true\n", user),
                 {"clusters[c1].cluster.server: missing"});
  expect_failure(kubeconfig("    server: {a: b}\n", user),
                 {"clusters[c1].cluster.server: must be a string"});
  expect_failure(kubeconfig("    server: ftp://x\n", user),
                 {"clusters[c1].cluster.server", "not an http(s) URL"});
  expect_failure(kubeconfig("    server: https://x\n    insecure-skip-tls-verify: maybe\n", user),
                 {"clusters[c1].cluster.insecure-skip-tls-verify: must be true or false"});
  expect_failure(kubeconfig("    server: https://x\n    insecure-skip-tls-verify: true\n"
                            "    certificate-authority-data: " +
                                base64(ca().cert) + "\n",
                            user),
                 {"clusters[c1].cluster", "insecure-skip-tls-verify and a certificate-authority"});
  expect_failure(kubeconfig("    server: https://x\n    certificate-authority-data: '@@@'\n", user),
                 {"clusters[c1].cluster.certificate-authority-data", "not valid base64"});
  expect_failure(
      kubeconfig("    server: https://x\n    certificate-authority-data: " + base64("hello") + "\n",
                 user),
      {"clusters[c1].cluster.certificate-authority-data", "no PEM certificate"});
  expect_failure(
      kubeconfig("    server: https://x\n    certificate-authority: missing-ca.crt\n", user),
      {"clusters[c1].cluster.certificate-authority", "missing-ca.crt", "cannot read"});
}

TEST_CASE("malformed users: client cert/key pairs, tokens, plugins") {
  std::string cluster = "    server: https://x\n    insecure-skip-tls-verify: true\n";
  expect_failure(
      kubeconfig(cluster, "    client-certificate-data: " + base64(client().cert) + "\n"),
      {"users[u1].user", "client-certificate is set without client-key"});
  expect_failure(kubeconfig(cluster, "    client-key-data: " + base64(client().key) + "\n"),
                 {"users[u1].user", "client-key is set without client-certificate"});
  expect_failure(kubeconfig(cluster, "    client-certificate-data: " + base64(client().cert) +
                                         "\n    client-key-data: " + base64(other().key) + "\n"),
                 {"users[u1].user.client-key-data", "does not belong to the certificate"});
  expect_failure(kubeconfig(cluster, "    client-certificate-data: " + base64(client().cert) +
                                         "\n    client-key-data: " + base64("garbage") + "\n"),
                 {"users[u1].user.client-key-data", "no PEM private key"});
  expect_failure(kubeconfig(cluster, "    client-certificate-data: " + base64("garbage") +
                                         "\n    client-key-data: " + base64(client().key) + "\n"),
                 {"users[u1].user.client-certificate-data", "no PEM certificate"});
  expect_failure(kubeconfig(cluster, "    client-certificate: nope.crt\n    client-key: k\n"),
                 {"users[u1].user.client-certificate", "nope.crt"});
  expect_failure(kubeconfig(cluster, "    tokenFile: no-such-token\n"),
                 {"users[u1].user.tokenFile", "no-such-token", "cannot read"});
  expect_failure(kubeconfig(cluster, "    token: [a]\n"),
                 {"users[u1].user.token: must be a string"});
  expect_failure(kubeconfig(cluster, "    exec: {command: aws}\n"),
                 {"users[u1].user.exec.apiVersion", "client.authentication.k8s.io/v1"});
  expect_failure(kubeconfig(cluster,
                            "    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, "
                            "command: aws}\n"),
                 {"users[u1].user.exec.apiVersion", "v1alpha1", "removed"});
  expect_failure(kubeconfig(cluster, "    exec: {apiVersion: client.authentication.k8s.io/v1}\n"),
                 {"users[u1].user.exec.command: missing"});
  expect_failure(kubeconfig(cluster,
                            "    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, "
                            "interactiveMode: Sometimes}\n"),
                 {"users[u1].user.exec.interactiveMode", "Never, IfAvailable, Always"});
  expect_failure(kubeconfig(cluster,
                            "    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, "
                            "args: [get-token, {a: b}]}\n"),
                 {"users[u1].user.exec.args[1]: must be a string"});
  expect_failure(kubeconfig(cluster,
                            "    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, "
                            "env: [{value: x}]}\n"),
                 {"users[u1].user.exec.env[0].name"});
  expect_failure(
      kubeconfig(cluster,
                 "    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}\n"),
      {"users[u1].user.exec.interactiveMode: missing", "requires"});
  expect_failure(kubeconfig(cluster,
                            "    exec: {apiVersion: client.authentication.k8s.io/v1, "
                            "command: vscaler-no-such-plugin, installHint: see the docs, "
                            "interactiveMode: Never}\n"),
                 {"users[u1].user.exec", "cannot run vscaler-no-such-plugin", "see the docs"});
  expect_failure(kubeconfig(cluster, "    auth-provider: {name: gcp}\n"),
                 {"users[u1].user.auth-provider", "not supported", "exec plugin"});
  expect_failure(kubeconfig(cluster, "    username: a\n    password: b\n"),
                 {"users[u1].user.username/password", "basic authentication"});

  TempDir dir;
  dir.write("empty-token", "\n");
  std::string path = dir.write("config", kubeconfig(cluster, "    tokenFile: empty-token\n"));
  auto empty = load_kubeconfig(path);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().find("users[u1].user.tokenFile") != std::string::npos);
  CHECK(empty.error().find("is empty") != std::string::npos);
}
