#include "cmd/options.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>

#include "base/log.h"
#include "metrics/listen_address.h"

namespace vscaler::cmd {

const char* const kUsage = R"(vscaler )" VSCALER_VERSION
                           R"( - keeps Deployments' container resources as VerticalScalers declare

Usage: vscaler [flags]

Flags:
  --kubeconfig PATH     kubeconfig to use (default $KUBECONFIG, else the in-cluster service account)
  --webhook-port PORT   TLS admission server port (default 9443)
  --cert-dir DIR        directory holding tls.crt and tls.key, reloaded when they change
                        (default /tmp/k8s-webhook-server/serving-certs)
  --metrics-addr ADDR   Prometheus metrics at /metrics (default :8080)
  --health-addr ADDR    /healthz and /readyz (default :8081)
  --resync-period DUR   safety-net resync period, jittered (default 60s)
  --workers N           concurrent reconciles (default 4)
  --namespace NS        watch and manage one namespace only (default: all)
  --log-level LEVEL     debug, info, warn or error (default info); JSON lines on stderr
  --version             print the version and exit
  --help                print this help and exit
)";

namespace {

kube::Result<int> parse_int(const std::string& flag, const std::string& value, int min, int max) {
  int result = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (error != std::errc() || end != value.data() + value.size() || result < min || result > max) {
    return kube::fail(flag + ": must be an integer from " + std::to_string(min) + " to " +
                      std::to_string(max) + ", got \"" + value + "\"");
  }
  return result;
}

}  // namespace

kube::Result<std::chrono::milliseconds> parse_duration(const std::string& text) {
  static const std::map<std::string, double, std::less<>> kUnits = {
      {"ms", 1.0}, {"s", 1000.0}, {"m", 60'000.0}, {"h", 3'600'000.0}};
  if (text.empty()) return kube::fail("empty duration");
  double total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t start = pos;
    while (pos < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.'))
      ++pos;
    if (pos == start) return kube::fail("invalid duration \"" + text + "\" (e.g. 60s, 500ms, 1m)");
    double number = 0;
    try {
      number = std::stod(text.substr(start, pos - start));
    } catch (const std::exception&) {
      return kube::fail("invalid duration \"" + text + "\"");
    }
    std::size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    auto unit = kUnits.find(std::string_view(text).substr(unit_start, pos - unit_start));
    if (unit == kUnits.end()) {
      return kube::fail("invalid duration \"" + text + "\": unit must be ms, s, m or h");
    }
    total += number * unit->second;
  }
  if (total > 1e12) return kube::fail("duration \"" + text + "\" is too long");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total)));
}

kube::Result<Options> parse_options(const std::vector<std::string>& args) {
  Options options;
  using Setter = std::function<kube::Result<kube::Unit>(const std::string&)>;
  auto text = [](std::string& field) {
    return Setter([&field](const std::string& value) -> kube::Result<kube::Unit> {
      field = value;
      return kube::Unit{};
    });
  };
  auto address = [](std::string& field, const char* flag) {
    return Setter([&field, flag](const std::string& value) -> kube::Result<kube::Unit> {
      auto parsed = metrics::parse_listen_address(value);
      if (!parsed.ok()) return kube::fail(std::string(flag) + ": " + parsed.error());
      field = value;
      return kube::Unit{};
    });
  };
  const std::map<std::string, Setter, std::less<>> flags = {
      {"--kubeconfig", text(options.kubeconfig)},
      {"--cert-dir", text(options.cert_dir)},
      {"--namespace", text(options.namespace_)},
      {"--metrics-addr", address(options.metrics_addr, "--metrics-addr")},
      {"--health-addr", address(options.health_addr, "--health-addr")},
      {"--webhook-port",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto port = parse_int("--webhook-port", value, 0, 65535);
         if (!port.ok()) return kube::fail(port.error());
         options.webhook_port = *port;
         return kube::Unit{};
       }},
      {"--workers",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto workers = parse_int("--workers", value, 1, 1024);
         if (!workers.ok()) return kube::fail(workers.error());
         options.workers = *workers;
         return kube::Unit{};
       }},
      {"--resync-period",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto period = parse_duration(value);
         if (!period.ok()) return kube::fail("--resync-period: " + period.error());
         if (period->count() < 100) return kube::fail("--resync-period: must be at least 100ms");
         options.resync_period = *period;
         return kube::Unit{};
       }},
      {"--log-level",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         if (value != "debug" && value != "info" && value != "warn" && value != "error") {
           return kube::fail("--log-level: must be debug, info, warn or error, got \"" + value +
                             "\"");
         }
         options.log_level = value;
         return kube::Unit{};
       }},
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (arg == "--version") {
      options.version = true;
      continue;
    }
    std::string value;
    bool has_value = false;
    if (auto equals = arg.find('='); equals != std::string::npos && arg.rfind("--", 0) == 0) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
      has_value = true;
    }
    auto flag = flags.find(arg);
    if (flag == flags.end()) return kube::fail("unknown flag \"" + arg + "\" (see --help)");
    if (!has_value) {
      if (i + 1 >= args.size()) return kube::fail(arg + ": needs a value");
      value = args[++i];
    }
    auto set = flag->second(value);
    if (!set.ok()) return kube::fail(set.error());
  }
  return options;
}

}  // namespace vscaler::cmd
