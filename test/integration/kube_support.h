// Helpers shared by the kube/ integration tests: the client for the control plane the runner
// started ($KUBECONFIG), throwaway namespaces, kubectl, waiting, and a private second control
// plane for tests that need other API server flags.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "kube/client.h"
#include "kube/config.h"

namespace kube_test {

using namespace vscaler::kube;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

/// An environment variable the runner must set (KUBECONFIG, KUBECTL, VSCALER_CLUSTER_DIR).
inline std::string required_env(const char* name) {
  const char* value = std::getenv(name);
  REQUIRE_MESSAGE((value && *value), name << " is not set: run through test/run.sh integration");
  return value;
}

/// The runner's admin configuration.
inline ClientConfig admin_config() {
  auto config = load_kubeconfig(required_env("KUBECONFIG"));
  REQUIRE_MESSAGE(config.ok(), (config.ok() ? "" : config.error()));
  return *config;
}

inline Client make_client(const ClientConfig& config) {
  auto client = Client::connect(config);
  REQUIRE_MESSAGE(client.ok(), (client.ok() ? "" : client.error()));
  return *client;
}

inline Client admin_client() {
  return make_client(admin_config());
}

/// Runs a shell command; returns its standard output; fails the test on a non-zero exit.
inline std::string sh(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  int status = ::pclose(pipe);
  REQUIRE_MESSAGE(status == 0, "command failed: " << command);
  return out;
}

inline std::string kubectl(const std::string& args) {
  return sh("KUBECONFIG='" + required_env("KUBECONFIG") + "' '" + required_env("KUBECTL") + "' " +
            args);
}

/// A name unique to this process and call.
inline std::string unique_name(const std::string& prefix) {
  static std::mt19937 random(static_cast<unsigned>(::getpid()) ^
                             static_cast<unsigned>(Clock::now().time_since_epoch().count()));
  static const char* kChars = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string name = prefix + "-";
  for (int i = 0; i < 6; ++i) name += kChars[random() % 36];
  return name;
}

/// Creates a namespace for one test; deletes it (and asks for its ConfigMaps to go) at the end.
/// There is no namespace controller in the local control plane, so the objects are deleted
/// explicitly.
struct TestNamespace {
  Client client;
  std::string name;
  explicit TestNamespace(Client c, const std::string& prefix = "kube-it")
      : client(std::move(c)), name(unique_name(prefix)) {
    auto created = client.create(
        resources::kNamespaces, "",
        json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
    REQUIRE_MESSAGE(created.ok(), (created.ok() ? "" : created.error().to_string()));
  }
  ~TestNamespace() {
    HttpRequest request;
    request.method = "DELETE";
    request.target = resources::kConfigMaps.path(name);
    (void)client.call(request);
    (void)client.remove(resources::kNamespaces, "", name);
  }
};

inline json config_map(const std::string& name, json data = json::object(),
                       json labels = json::object()) {
  return json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"labels", std::move(labels)}}},
              {"data", std::move(data)}};
}

/// Polls `condition` every 50 ms until it holds or `timeout` passes; returns whether it held.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A private control plane started with test/cluster/up.sh in its own folder (other API server
/// flags); always stopped by the destructor, also when the test fails.
struct PrivateControlPlane {
  std::string dir;
  explicit PrivateControlPlane(const std::string& apiserver_args) {
    dir = (std::filesystem::temp_directory_path() / unique_name("vscaler-kube-private")).string();
    std::string log = dir + ".up.log";
    std::string command = "VSCALER_CLUSTER_DIR='" + dir + "' VSCALER_APISERVER_ARGS='" +
                          apiserver_args + "' '" VSCALER_SOURCE_DIR "/test/cluster/up.sh' >'" +
                          log + "' 2>&1";
    int status = std::system(command.c_str());
    if (status != 0) {
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      stop();
      FAIL("the private control plane did not start: " << text);
    }
    std::filesystem::remove(log);
  }
  ~PrivateControlPlane() { stop(); }
  void stop() {
    if (dir.empty()) return;
    std::string command = "VSCALER_CLUSTER_DIR='" + dir +
                          "' '" VSCALER_SOURCE_DIR "/test/cluster/down.sh' >/dev/null 2>&1";
    (void)std::system(command.c_str());
    std::filesystem::remove(dir + ".up.log");
    dir.clear();
  }
  std::string kubeconfig() const { return dir + "/kubeconfig"; }
  int etcd_port() const {
    std::ifstream in(dir + "/etcd.port");
    int port = 0;
    in >> port;
    return port;
  }
};

}  // namespace kube_test
