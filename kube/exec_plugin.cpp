// Credential plugins: running one (posix_spawn, a pipe read under a deadline) and reading its
// ExecCredential. See the header.
#include "kube/exec_plugin.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

extern char** environ;

namespace vscaler::kube {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A file descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The child, killed (with its process group when it leads one) and reaped unless it was reaped.
struct Child {
  pid_t pid = -1;
  bool leads_group = false;
  ~Child() {
    if (pid <= 0) return;
    if (leads_group) ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  // Waits for the exit until `deadline`; the wait status, or nullopt at the deadline (the
  // destructor kills it). A pidfd makes the wait a poll; kernels before 5.3 have none, and get
  // a look every 10 ms.
  std::optional<int> reap(Clock::time_point deadline) {
    Fd exited{static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
    for (;;) {
      int status = 0;
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done < 0 && errno == EINTR) continue;
      if (done != 0) {  // reaped, or not ours to reap (ECHILD): either way nothing to kill
        pid = -1;
        return done > 0 ? status : 0;
      }
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      if (exited.fd >= 0) {
        pollfd ready{exited.fd, POLLIN, 0};
        ::poll(&ready, 1, static_cast<int>(left.count()));
      } else {
        std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(10)));
      }
    }
  }
};

// The environment the plugin runs with: ours, the kubeconfig's entries in place of ours, and
// KUBERNETES_EXEC_INFO.
std::vector<std::string> plugin_environment(const ExecPlugin& plugin, bool interactive) {
  json info = {{"apiVersion", plugin.api_version},
               {"kind", "ExecCredential"},
               {"spec", {{"interactive", interactive}}}};
  if (!plugin.cluster_json.empty()) {
    info["spec"]["cluster"] = json::parse(plugin.cluster_json, nullptr, false);
  }
  std::vector<std::pair<std::string, std::string>> set = plugin.env;
  set.emplace_back("KUBERNETES_EXEC_INFO", info.dump());
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text = *entry;
    std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [key, value] : set) replaced = replaced || key == name;
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [key, value] : set) out.push_back(key + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& text : strings) out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

// The error of a plugin that ran out of time.
std::string too_slow(const ExecPlugin& plugin) {
  return plugin.where + ": " + plugin.command + " did not finish within " +
         std::to_string(plugin.timeout.count()) + " ms; it was killed";
}

// Reads the child's stdout until EOF, the deadline or the byte bound; the error says which.
Result<std::string> read_output(int fd, const ExecPlugin& plugin, Clock::time_point deadline) {
  std::string output;
  char buffer[16 * 1024];
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return fail(too_slow(plugin));
    pollfd ready{fd, POLLIN, 0};
    int polled = ::poll(&ready, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled < 0) return fail(plugin.where + ": poll: " + std::strerror(errno));
    if (polled == 0) continue;  // the deadline, checked above
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0)
      return fail(plugin.where + ": reading the plugin's output: " + std::strerror(errno));
    if (got == 0) return output;
    output.append(buffer, static_cast<std::size_t>(got));
    if (output.size() > plugin.max_output_bytes) {
      return fail(plugin.where + ": " + plugin.command + " wrote more than " +
                  std::to_string(plugin.max_output_bytes) + " bytes; it was killed");
    }
  }
}

// A status member that must be a string when present.
Result<std::string> status_string(const json& status, const char* key, const std::string& where) {
  auto found = status.find(key);
  if (found == status.end() || found->is_null()) return std::string();
  if (!found->is_string()) return fail(where + ": status." + key + " must be a string");
  return found->get<std::string>();
}

}  // namespace

Result<ExecCredential> parse_exec_credential(std::string_view output,
                                             const std::string& api_version) {
  const std::string where = "the plugin's ExecCredential";
  json root = json::parse(output, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return fail(where + " is not a JSON object (" + std::to_string(output.size()) +
                " bytes on stdout)");
  }
  auto text = [&root](const char* key) {
    auto found = root.find(key);
    return found != root.end() && found->is_string() ? found->get<std::string>() : std::string();
  };
  if (text("kind") != "ExecCredential") return fail(where + ": kind is not ExecCredential");
  if (text("apiVersion") != api_version) {
    return fail(where + ": apiVersion is not " + api_version +
                ", the version the kubeconfig asks for");
  }
  auto status = root.find("status");
  if (status == root.end() || !status->is_object()) return fail(where + ": status is missing");
  ExecCredential credential;
  auto token = status_string(*status, "token", where);
  if (!token) return fail(token.error());
  auto cert = status_string(*status, "clientCertificateData", where);
  if (!cert) return fail(cert.error());
  auto key = status_string(*status, "clientKeyData", where);
  if (!key) return fail(key.error());
  credential.token = std::move(*token);
  credential.client_cert_pem = std::move(*cert);
  credential.client_key_pem = std::move(*key);
  if (credential.client_cert_pem.empty() != credential.client_key_pem.empty()) {
    return fail(where + ": status has " +
                (credential.client_cert_pem.empty()
                     ? "clientKeyData without clientCertificateData"
                     : "clientCertificateData without clientKeyData"));
  }
  if (credential.token.empty() && credential.client_cert_pem.empty()) {
    return fail(where + ": status has neither a token nor clientCertificateData/clientKeyData");
  }
  auto expires = status_string(*status, "expirationTimestamp", where);
  if (!expires) return fail(expires.error());
  if (!expires->empty()) {
    auto parsed = base::parse_rfc3339(*expires);
    if (!parsed) return fail(where + ": status.expirationTimestamp: " + parsed.error());
    credential.expires = *parsed;
  }
  return credential;
}

Result<ExecCredential> run_exec_plugin(const ExecPlugin& plugin) {
  const bool terminal = ::isatty(STDIN_FILENO) == 1;
  if (plugin.interactive_mode == "Always" && !terminal) {
    return fail(plugin.where + ": interactiveMode is Always but stdin is not a terminal");
  }
  const bool interactive = plugin.interactive_mode != "Never" && terminal;
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    return fail(plugin.where + ": pipe: " + std::strerror(errno));
  }
  Fd read_end{ends[0]};
  Fd write_end{ends[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.fd, STDOUT_FILENO);
  // stdin is the terminal only when the plugin may prompt; stderr is ours (its messages are the
  // user's to read, as with kubectl).
  if (!interactive) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  // Nothing else of ours reaches the plugin: no other descriptor (API server connections), and
  // the signal state of a fresh process (vscaler ignores SIGPIPE and its threads may block
  // signals, both of which exec would pass on).
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigset_t defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  // A plugin that cannot prompt leads a process group of its own, so that a timeout kills what
  // it started too (a wrapper script's child); one that may prompt stays in the terminal's
  // foreground group, or reading the terminal would stop it.
  if (!interactive) flags |= POSIX_SPAWN_SETPGROUP;  // group 0: the child's own pid
  posix_spawnattr_setflags(&attributes, flags);
  std::vector<std::string> argv_strings{plugin.command};
  argv_strings.insert(argv_strings.end(), plugin.args.begin(), plugin.args.end());
  std::vector<std::string> env_strings = plugin_environment(plugin, interactive);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);
  const Clock::time_point deadline = Clock::now() + plugin.timeout;
  Child child;
  child.leads_group = !interactive;
  int spawned = plugin.command.find('/') == std::string::npos
                    ? ::posix_spawnp(&child.pid, plugin.command.c_str(), &actions, &attributes,
                                     argv.data(), envp.data())
                    : ::posix_spawn(&child.pid, plugin.command.c_str(), &actions, &attributes,
                                    argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    child.pid = -1;
    std::string message =
        plugin.where + ": cannot run " + plugin.command + ": " + std::strerror(spawned);
    // As client-go: the hint is for a command that is not there, not one that cannot run.
    if (spawned == ENOENT && !plugin.install_hint.empty()) {
      message += " (" + plugin.install_hint + ")";
    }
    return fail(message);
  }
  ::close(write_end.fd);  // EOF once the plugin (and whatever it started) is done writing
  write_end.fd = -1;
  auto output = read_output(read_end.fd, plugin, deadline);
  if (!output) return fail(output.error());  // the child is killed on the way out
  // Its stdout closed, the plugin may still run: its exit status counts, within the same time.
  std::optional<int> exit = child.reap(deadline);
  if (!exit) return fail(too_slow(plugin));
  int status = *exit;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail(plugin.where + ": " + plugin.command +
                (WIFEXITED(status) ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                   : std::string(" was killed by a signal")) +
                " (its messages are above, on stderr)");
  }
  auto credential = parse_exec_credential(*output, plugin.api_version);
  if (!credential) return fail(plugin.where + ": " + credential.error());
  return credential;
}

}  // namespace vscaler::kube
