// Credential plugins: the ExecCredential reader (every field, every malformed answer, no message
// quoting the answer) and real runs of small shell-script plugins (args, env, KUBERNETES_EXEC_INFO,
// stdin, descriptors and signals not inherited, exit status, a missing command with its install
// hint, the time and byte bounds).
#include "kube/exec_plugin.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test/unit/support/eventually.h"
#include "test/unit/support/temp_dir.h"

using namespace vscaler::kube;
using vscaler::testing::eventually;
using vscaler::testing::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr const char* kV1 = "client.authentication.k8s.io/v1";

std::string credential(const std::string& status) {
  return R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":)" +
         status + "}";
}

void expect_error(const Result<ExecCredential>& result, std::initializer_list<const char*> parts) {
  REQUIRE_FALSE(result.ok());
  for (const char* part : parts) {
    CHECK_MESSAGE(result.error().find(part) != std::string::npos, result.error());
  }
}

// What the file at `path` holds ("" when it cannot be read).
std::string dir_read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ExecPlugin plugin_for(const std::string& command) {
  ExecPlugin plugin;
  plugin.api_version = kV1;
  plugin.command = command;
  plugin.where = "kubeconfig: users[u1].user.exec";
  return plugin;
}

}  // namespace

TEST_CASE("an ExecCredential gives a token, or a client certificate, and when it expires") {
  auto token = parse_exec_credential(
      credential(R"({"token":"abc","expirationTimestamp":"2026-12-06T18:00:00Z"})"), kV1);
  REQUIRE(token.ok());
  CHECK(token->token == "abc");
  REQUIRE(token->expires.has_value());
  CHECK(token->expires->time_since_epoch() ==
        std::chrono::sys_days(std::chrono::year(2026) / 12 / 6).time_since_epoch() +
            std::chrono::hours(18));

  auto cert = parse_exec_credential(
      credential(R"({"clientCertificateData":"CERT","clientKeyData":"KEY"})"), kV1);
  REQUIRE(cert.ok());
  CHECK(cert->token.empty());
  CHECK(cert->client_cert_pem == "CERT");
  CHECK(cert->client_key_pem == "KEY");
  CHECK_FALSE(cert->expires.has_value());

  auto beta = parse_exec_credential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",)"
      R"("status":{"token":"t"}})",
      "client.authentication.k8s.io/v1beta1");
  CHECK(beta.ok());
}

TEST_CASE("a malformed ExecCredential names the field and never quotes the answer") {
  const std::string secret = "s3cr3t-token";
  expect_error(parse_exec_credential("not json " + secret, kV1), {"not a JSON object"});
  expect_error(parse_exec_credential("[1]", kV1), {"not a JSON object"});
  expect_error(parse_exec_credential(R"({"apiVersion":"client.authentication.k8s.io/v1",)"
                                     R"("kind":"Other","status":{"token":"t"}})",
                                     kV1),
               {"kind is not ExecCredential"});
  expect_error(parse_exec_credential(R"({"apiVersion":"client.authentication.k8s.io/v1beta1",)"
                                     R"("kind":"ExecCredential","status":{"token":"t"}})",
                                     kV1),
               {"apiVersion is not client.authentication.k8s.io/v1"});
  expect_error(parse_exec_credential(R"({"apiVersion":"client.authentication.k8s.io/v1",)"
                                     R"("kind":"ExecCredential"})",
                                     kV1),
               {"status is missing"});
  expect_error(parse_exec_credential(credential("{}"), kV1), {"neither a token nor"});
  expect_error(parse_exec_credential(credential(R"({"token":7})"), kV1),
               {"status.token must be a string"});
  expect_error(parse_exec_credential(credential(R"({"clientCertificateData":"C"})"), kV1),
               {"clientCertificateData without clientKeyData"});
  expect_error(parse_exec_credential(credential(R"({"clientKeyData":"K"})"), kV1),
               {"clientKeyData without clientCertificateData"});
  expect_error(
      parse_exec_credential(credential(R"({"token":"t","expirationTimestamp":"tomorrow"})"), kV1),
      {"status.expirationTimestamp", "RFC 3339"});
  auto quoted = parse_exec_credential(credential(R"({"token":")" + secret + R"(","x":})"), kV1);
  REQUIRE_FALSE(quoted.ok());
  CHECK(quoted.error().find(secret) == std::string::npos);
}

TEST_CASE("a plugin runs with its args, its env over ours and KUBERNETES_EXEC_INFO") {
  TempDir dir;
  ::setenv("VSCALER_EXEC_TEST_KEPT", "kept", 1);
  ::setenv("VSCALER_EXEC_TEST_REPLACED", "ours", 1);
  std::string out = dir.file("seen");
  ExecPlugin plugin = plugin_for(dir.script(
      "plugin.sh", "echo \"$@\" > '" + out +
                       "'\n"
                       "echo \"$VSCALER_EXEC_TEST_KEPT $VSCALER_EXEC_TEST_REPLACED $EXTRA\" >> '" +
                       out +
                       "'\n"
                       "echo \"$KUBERNETES_EXEC_INFO\" >> '" +
                       out +
                       "'\n"
                       "read line && echo \"stdin: $line\" >> '" +
                       out +
                       "'\n"
                       "echo '" +
                       credential(R"({"token":"from-plugin"})") + "'\n"));
  plugin.args = {"eks", "get-token", "--cluster-name", "a b"};
  plugin.env = {{"VSCALER_EXEC_TEST_REPLACED", "theirs"}, {"EXTRA", "x=y"}};
  plugin.cluster_json = R"({"server":"https://api:6443"})";
  auto result = run_exec_plugin(plugin);
  ::unsetenv("VSCALER_EXEC_TEST_KEPT");
  ::unsetenv("VSCALER_EXEC_TEST_REPLACED");
  REQUIRE_MESSAGE(result.ok(), result.error());
  CHECK(result->token == "from-plugin");
  std::istringstream seen(dir.read("seen"));
  std::string args, env, info, rest;
  std::getline(seen, args);
  std::getline(seen, env);
  std::getline(seen, info);
  std::getline(seen, rest);
  CHECK(args == "eks get-token --cluster-name a b");
  CHECK(env == "kept theirs x=y");
  auto parsed = nlohmann::json::parse(info);
  CHECK(parsed["apiVersion"] == kV1);
  CHECK(parsed["kind"] == "ExecCredential");
  CHECK(parsed["spec"]["cluster"]["server"] == "https://api:6443");
  // The test's stdin is no terminal: the plugin may not prompt, and reads /dev/null.
  CHECK(parsed["spec"]["interactive"] == false);
  CHECK(rest.empty());
}

TEST_CASE("a plugin inherits no descriptor of ours, none of our signal dispositions, no mask") {
  TempDir dir;
  int leaked = ::open("/dev/null", O_RDONLY);  // without O_CLOEXEC, as httplib's sockets are
  REQUIRE(leaked > 2);
  auto previous = std::signal(SIGPIPE, SIG_IGN);  // as vscaler runs
  sigset_t blocked;
  sigset_t before;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);  // as main() blocks it for its signal thread
  REQUIRE(::pthread_sigmask(SIG_BLOCK, &blocked, &before) == 0);
  std::string out = dir.file("seen");
  auto plugin = plugin_for(dir.script(
      "plugin.sh", "[ -e /proc/$$/fd/" + std::to_string(leaked) + " ] && echo open > '" + out +
                       "' || echo closed > '" + out + "'\ngrep SigIgn /proc/$$/status >> '" + out +
                       "'\necho '" + credential(R"({"token":"t"})") + "'\n"));
  auto result = run_exec_plugin(plugin);
  // The mask, seen by a plugin that is no shell (sh clears its own mask as it starts).
  auto python = plugin_for("python3");
  python.args = {"-c",
                 "import sys\n"
                 "mask = [l for l in open('/proc/self/status') if l.startswith('SigBlk')][0]\n"
                 "open(sys.argv[1], 'a').write(mask)\n"
                 "print('" +
                     credential(R"({"token":"t"})") + "')",
                 out};
  auto masked = run_exec_plugin(python);
  REQUIRE_MESSAGE(masked.ok(), masked.error());
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  std::signal(SIGPIPE, previous);
  ::close(leaked);
  REQUIRE_MESSAGE(result.ok(), result.error());
  std::istringstream seen(dir.read("seen"));
  std::string fd, ignored, blocked_line;
  std::getline(seen, fd);
  std::getline(seen, ignored);
  std::getline(seen, blocked_line);
  CHECK(fd == "closed");
  // SigIgn is a hexadecimal mask; SIGPIPE (13) is bit 12.
  auto mask = std::stoull(ignored.substr(ignored.find_first_of("0123456789abcdef")), nullptr, 16);
  CHECK_MESSAGE((mask & (1ULL << (SIGPIPE - 1))) == 0, ignored);
  auto blocked_mask =
      std::stoull(blocked_line.substr(blocked_line.find_first_of("0123456789abcdef")), nullptr, 16);
  CHECK_MESSAGE(blocked_mask == 0, blocked_line);
}

TEST_CASE("a plugin that fails, is missing, hangs or floods says so") {
  TempDir dir;
  auto failing = plugin_for(dir.script("fail.sh", "echo 'no credentials' >&2\nexit 3\n"));
  expect_error(run_exec_plugin(failing),
               {"users[u1].user.exec", "fail.sh", "exited with status 3", "stderr"});

  auto missing = plugin_for("vscaler-no-such-plugin");
  missing.install_hint = "install it with: brew install vscaler-no-such-plugin";
  expect_error(run_exec_plugin(missing),
               {"cannot run vscaler-no-such-plugin", "No such file", "brew install"});
  // There but not executable: the hint (how to install it) would mislead.
  auto unrunnable = plugin_for(dir.write("not-executable.sh", "#!/bin/sh\n"));
  unrunnable.install_hint = "brew install";
  auto refused = run_exec_plugin(unrunnable);
  expect_error(refused, {"cannot run", "Permission denied"});
  CHECK(refused.error().find("brew install") == std::string::npos);

  auto hanging = plugin_for(dir.script("hang.sh", "exec sleep 30\n"));
  hanging.timeout = std::chrono::milliseconds(300);
  auto started = std::chrono::steady_clock::now();
  expect_error(run_exec_plugin(hanging), {"did not finish within 300 ms", "killed"});
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));

  // Its answer written and stdout closed, a plugin that does not exit is killed all the same.
  auto lingering = plugin_for(dir.script(
      "linger.sh", "echo '" + credential(R"({"token":"t"})") + "'\nexec >&-\nexec sleep 30\n"));
  lingering.timeout = std::chrono::milliseconds(300);
  started = std::chrono::steady_clock::now();
  expect_error(run_exec_plugin(lingering), {"did not finish within 300 ms"});
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));

  // What a plugin started is killed with it (a wrapper script's child holding stdout).
  std::string grandchild = dir.file("grandchild.pid");
  auto wrapper =
      plugin_for(dir.script("wrapper.sh", "sleep 30 &\necho $! > '" + grandchild + "'\nwait\n"));
  wrapper.timeout = std::chrono::milliseconds(300);
  expect_error(run_exec_plugin(wrapper), {"did not finish within 300 ms"});
  int pid = std::atoi(dir.read("grandchild.pid").c_str());
  REQUIRE(pid > 0);
  // Gone, or a zombie waiting for the reaper it was handed to.
  CHECK(eventually([&] {
    std::string stat = dir_read_file("/proc/" + std::to_string(pid) + "/stat");
    return stat.empty() || stat.find(") Z ") != std::string::npos;
  }));

  auto flooding = plugin_for(dir.script("flood.sh", "exec yes\n"));
  flooding.max_output_bytes = 64 * 1024;
  expect_error(run_exec_plugin(flooding), {"wrote more than 65536 bytes"});

  auto garbage = plugin_for(dir.script("garbage.sh", "echo 'token: abc'\n"));
  expect_error(run_exec_plugin(garbage), {"users[u1].user.exec", "not a JSON object"});

  auto always = plugin_for(dir.script("ok.sh", "echo '" + credential(R"({"token":"t"})") + "'\n"));
  always.interactive_mode = "Always";
  if (::isatty(STDIN_FILENO) == 0) {
    expect_error(run_exec_plugin(always), {"interactiveMode is Always", "not a terminal"});
  }
}
