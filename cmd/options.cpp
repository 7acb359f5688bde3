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
  --metrics-secure      serve /metrics over HTTPS (the --cert-dir certificate) to callers whose
                        bearer token may get /metrics (TokenReview + SubjectAccessReview;
                        ClusterRole vscaler-metrics-reader); default false: plain HTTP
  --health-addr ADDR    /healthz and /readyz (default :8081)
  --dashboard-addr ADDR the read-only dashboard, /dashboard and /dashboard.json (default
                        127.0.0.1:8082: reach it with kubectl port-forward; "" turns it off)
  --webhook-client-ca-file FILE
                        the webhook accepts only clients with a certificate this CA (PEM)
                        signed: the API server's, from its AdmissionConfiguration
                        kubeConfigFile (default: any client)
  --webhook-max-buffered-bytes QUANTITY
                        request body bytes the webhook holds at once; beyond it new bodies get
                        503 before they are read (default 64Mi)
  --resync-period DUR   safety-net resync period, jittered (default 60s)
  --workers N           concurrent reconciles (default 4)
  --namespace NS        watch and manage one namespace only (default: all)
  --log-level LEVEL     debug, info, warn or error (default info); JSON lines on stderr
  --leader-elect        take part in leader election for the Lease "vscaler": every replica
                        serves the webhooks and reconciles hints, only the holder runs the resync
                        (default false: this process is the only replica and always leads)
  --leader-election-namespace NS
                        where the Lease lives (default: the pod's namespace, from $POD_NAMESPACE
                        or the service account, else vscaler-system)
  --recommender-interval DUR
                        how often usage is sampled and recommendations computed, on the
                        leader (default 1m; 0 turns recommendations off)
  --checkpoint-interval DUR
                        how often the usage histories are checkpointed (default 10m)
  --cpu-histogram-decay-half-life DUR
                        a CPU sample this much older weighs half as much (default 24h)
  --memory-histogram-decay-half-life DUR
                        the same for memory peaks (default 24h)
  --memory-aggregation-interval DUR
                        memory keeps one peak per interval of this length (default 24h)
  --memory-aggregation-interval-count N
                        how many such intervals a history spans; a container without samples
                        for that long is forgotten (default 8)
  --min-update-interval DUR
                        least time between two recommendation-driven template patches of one
                        workload (default 10m)
  --in-recommendation-bounds-eviction-lifetime-threshold DUR
                        in-place modes: a pod running this long is resized when its requests
                        are over 10 % from the target, even within the bounds (default 12h)
  --evict-after-oom-threshold DUR
                        in-place modes: a pod OOM-killed this soon after its start is resized
                        at once (default 10m)
  --round-cpu-millicores N
                        published CPU values round up to a multiple of N millicores (default 1)
  --round-memory-bytes QUANTITY
                        published memory values round up to a multiple of this (default 1Mi)
  --recommendation-margin-fraction F
                        added to every bound as a fraction of it (default 0.15)
  --pod-recommendation-min-cpu-millicores F
  --pod-recommendation-min-memory-mb F
                        the least a pod is recommended, shared by its containers (default 25
                        millicores and 250 MiB)
  --oom-bump-up-ratio F
  --oom-min-bump-up-bytes F
                        an OOM kill counts as a memory peak of max(used x F, used + bytes)
                        (default 1.2 and 104857600)
  --container-recommendation-max-allowed-cpu QUANTITY
  --container-recommendation-max-allowed-memory QUANTITY
                        the most any container is recommended unless its scaler's maxAllowed
                        says otherwise (default: no cap but the largest node's allocatable)
  --prometheus-address URL
                        a scaler without a checkpoint starts from its pods' history in this
                        Prometheus (http:// or https://; default: none)
  --history-length DUR  how far back that history reaches (default 8d)
  --history-resolution DUR
                        the step of its range queries (default 1h)
  --prometheus-cadvisor-job-name NAME
                        the job label of the cAdvisor series (default kubernetes-cadvisor)
  --container-pod-name-label NAME
  --container-name-label NAME
  --container-namespace-label NAME
                        their pod, container and namespace label names (default pod,
                        container, namespace)
  --prometheus-timeout DUR
                        the longest one query may take (default 10s)
  --prometheus-ca-file FILE
                        PEM CA certificates trusted for an https address (default: the system's)
  --prometheus-bearer-token-file FILE
                        a bearer token sent to Prometheus, re-read when it changes
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

// A decimal number flag within [min, max], whole bounds (VPA's estimator flags; "1e8" is
// taken, a sign, hex or "inf" is not).
kube::Result<double> parse_number(const std::string& flag, const std::string& value, long long min,
                                  long long max) {
  double result = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(result) ||
      result < static_cast<double>(min) || result > static_cast<double>(max)) {
    return kube::fail(flag + ": must be a number from " + std::to_string(min) + " to " +
                      std::to_string(max) + ", got \"" + value + "\"");
  }
  return result;
}

// A positive quantity flag; `whole` also requires a whole number (bytes).
kube::Result<kube::Quantity> parse_quantity_flag(const std::string& flag, const std::string& value,
                                                 bool whole) {
  auto parsed = kube::Quantity::parse(value);
  if (!parsed.ok()) return kube::fail(flag + ": " + parsed.error());
  if (!(parsed->nanos() > 0) || (whole && parsed->nanos() % 1'000'000'000 != 0)) {
    return kube::fail(flag + ": must be a positive " + (whole ? "whole " : "") +
                      "quantity (like 1Mi or 2), got \"" + value + "\"");
  }
  return *parsed;
}

}  // namespace

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
  // A Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*.
  auto label = [](std::string& field, const char* flag) {
    return Setter([&field, flag](const std::string& value) -> kube::Result<kube::Unit> {
      bool valid = !value.empty() && !(value[0] >= '0' && value[0] <= '9');
      for (char c : value) {
        valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '_');
      }
      if (!valid) {
        return kube::fail(std::string(flag) + ": \"" + value +
                          "\" is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)");
      }
      field = value;
      return kube::Unit{};
    });
  };
  auto duration = [](std::chrono::milliseconds& field, const char* flag, bool zero_allowed) {
    return Setter(
        [&field, flag, zero_allowed](const std::string& value) -> kube::Result<kube::Unit> {
          auto parsed = parse_duration(value);
          if (!parsed.ok()) return kube::fail(std::string(flag) + ": " + parsed.error());
          if (parsed->count() < 0 || (!zero_allowed && parsed->count() == 0)) {
            return kube::fail(std::string(flag) + ": must be " +
                              (zero_allowed ? "zero or positive" : "positive") + ", got \"" +
                              value + "\"");
          }
          field = *parsed;
          return kube::Unit{};
        });
  };
  auto number = [](double& field, const char* flag, long long min, long long max) {
    return Setter([&field, flag, min, max](const std::string& value) -> kube::Result<kube::Unit> {
      auto parsed = parse_number(flag, value, min, max);
      if (!parsed.ok()) return kube::fail(parsed.error());
      field = *parsed;
      return kube::Unit{};
    });
  };
  const std::map<std::string, Setter, std::less<>> flags = {
      {"--kubeconfig", text(options.kubeconfig)},
      {"--cert-dir", text(options.cert_dir)},
      {"--namespace", text(options.namespace_)},
      {"--leader-election-namespace",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         if (value.empty()) return kube::fail("--leader-election-namespace: must not be empty");
         options.leader_election_namespace = value;
         return kube::Unit{};
       }},
      {"--leader-elect",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         if (value != "true" && value != "false") {
           return kube::fail("--leader-elect: must be true or false, got \"" + value + "\"");
         }
         options.leader_elect = value == "true";
         return kube::Unit{};
       }},
      {"--metrics-addr", address(options.metrics_addr, "--metrics-addr")},
      {"--metrics-secure",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         if (value != "true" && value != "false") {
           return kube::fail("--metrics-secure: must be true or false, got \"" + value + "\"");
         }
         options.metrics_secure = value == "true";
         return kube::Unit{};
       }},
      {"--health-addr", address(options.health_addr, "--health-addr")},
      {"--dashboard-addr",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         if (value.empty()) {
           options.dashboard_addr.clear();
           return kube::Unit{};
         }
         return address(options.dashboard_addr, "--dashboard-addr")(value);
       }},
      {"--webhook-client-ca-file", text(options.webhook_client_ca_file)},
      {"--webhook-max-buffered-bytes",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto budget = parse_quantity_flag("--webhook-max-buffered-bytes", value, true);
         if (!budget.ok()) return kube::fail(budget.error());
         auto bytes = budget->nanos() / 1'000'000'000;
         if (bytes < 48 * 1024 * 1024 || bytes > kube::Int128(1) << 40) {
           // A body is charged 6 times its size (read, copied, parsed): below 48Mi the largest
           // allowed review, 7 MiB, could never be served.
           return kube::fail(
               "--webhook-max-buffered-bytes: must be between 48Mi (one 7 MiB review, read and "
               "parsed, fits) and 1Ti, got \"" +
               value + "\"");
         }
         options.webhook_max_buffered_bytes = static_cast<std::size_t>(bytes);
         return kube::Unit{};
       }},
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
      // The recommender's durations: Go durations; the interval may be 0 (off), the others
      // must be positive.
      {"--recommender-interval",
       duration(options.recommender_interval, "--recommender-interval", true)},
      {"--checkpoint-interval",
       duration(options.checkpoint_interval, "--checkpoint-interval", false)},
      {"--cpu-histogram-decay-half-life",
       duration(options.cpu_histogram_decay_half_life, "--cpu-histogram-decay-half-life", false)},
      {"--memory-histogram-decay-half-life", duration(options.memory_histogram_decay_half_life,
                                                      "--memory-histogram-decay-half-life", false)},
      {"--memory-aggregation-interval",
       duration(options.memory_aggregation_interval, "--memory-aggregation-interval", false)},
      {"--memory-aggregation-interval-count",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto count = parse_int("--memory-aggregation-interval-count", value, 1, 10'000);
         if (!count.ok()) return kube::fail(count.error());
         options.memory_aggregation_interval_count = static_cast<int>(*count);
         return kube::Unit{};
       }},
      {"--min-update-interval",
       duration(options.min_update_interval, "--min-update-interval", true)},
      {"--in-recommendation-bounds-eviction-lifetime-threshold",
       duration(options.in_bounds_lifetime_threshold,
                "--in-recommendation-bounds-eviction-lifetime-threshold", false)},
      {"--evict-after-oom-threshold",
       duration(options.evict_after_oom_threshold, "--evict-after-oom-threshold", false)},
      {"--round-cpu-millicores",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto step = parse_int("--round-cpu-millicores", value, 1, 1'000'000);
         if (!step.ok()) return kube::fail(step.error());
         options.round_cpu_millicores = *step;
         return kube::Unit{};
       }},
      {"--round-memory-bytes",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto step = parse_quantity_flag("--round-memory-bytes", value, true);
         if (!step.ok()) return kube::fail(step.error());
         if (step->nanos() / 1'000'000'000 > kube::Int128(1) << 40) {
           return kube::fail("--round-memory-bytes: at most 1Ti, got \"" + value + "\"");
         }
         options.round_memory_bytes = static_cast<std::int64_t>(step->nanos() / 1'000'000'000);
         return kube::Unit{};
       }},
      {"--recommendation-margin-fraction",
       number(options.recommendation_margin_fraction, "--recommendation-margin-fraction", 0, 10)},
      {"--pod-recommendation-min-cpu-millicores",
       number(options.pod_min_cpu_millicores, "--pod-recommendation-min-cpu-millicores", 0,
              1'000'000)},
      {"--pod-recommendation-min-memory-mb",
       number(options.pod_min_memory_mb, "--pod-recommendation-min-memory-mb", 0, 1'000'000)},
      {"--oom-bump-up-ratio", number(options.oom_bump_up_ratio, "--oom-bump-up-ratio", 1, 100)},
      {"--oom-min-bump-up-bytes",
       number(options.oom_min_bump_up_bytes, "--oom-min-bump-up-bytes", 0, 1'000'000'000'000)},
      {"--container-recommendation-max-allowed-cpu",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto cap = parse_quantity_flag("--container-recommendation-max-allowed-cpu", value, false);
         if (!cap.ok()) return kube::fail(cap.error());
         options.max_allowed_cpu = *cap;
         return kube::Unit{};
       }},
      {"--container-recommendation-max-allowed-memory",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto cap =
             parse_quantity_flag("--container-recommendation-max-allowed-memory", value, true);
         if (!cap.ok()) return kube::fail(cap.error());
         options.max_allowed_memory = *cap;
         return kube::Unit{};
       }},
      {"--prometheus-address",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         // Credentials in the address would be logged and written into status messages (and
         // are checked first: the message below repeats the value).
         const std::size_t scheme = value.find("://");
         const std::size_t authority = scheme == std::string::npos ? 0 : scheme + 3;
         const std::size_t authority_end = value.find_first_of("/?#", authority);
         if (value
                 .substr(authority, authority_end == std::string::npos ? std::string::npos
                                                                       : authority_end - authority)
                 .find('@') != std::string::npos) {
           return kube::fail(
               "--prometheus-address: credentials in the URL (user:password@host) are not "
               "supported, they would be logged; use --prometheus-bearer-token-file");
         }
         if (!value.empty() && value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
           return kube::fail("--prometheus-address: must be an http:// or https:// URL, got \"" +
                             value + "\"");
         }
         options.prometheus.address = value;
         return kube::Unit{};
       }},
      {"--history-length",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         // VPA writes it as Prometheus does, in days ("8d"); Go's units work too ("192h").
         std::size_t digits = 0;
         while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
         std::chrono::milliseconds days{0};
         std::string rest = value;
         if (digits > 0 && digits < 5 && digits < value.size() && value[digits] == 'd') {
           days = std::chrono::hours(24) * std::stoi(value.substr(0, digits));
           rest = value.substr(digits + 1);
         }
         std::chrono::milliseconds total = days;
         if (!rest.empty() || days.count() == 0) {
           auto parsed = parse_duration(rest);
           if (!parsed.ok()) return kube::fail("--history-length: " + parsed.error());
           total += *parsed;
         }
         if (total.count() <= 0) {
           return kube::fail("--history-length: must be positive, got \"" + value + "\"");
         }
         options.prometheus.history_length = total;
         return kube::Unit{};
       }},
      {"--history-resolution",
       [&](const std::string& value) -> kube::Result<kube::Unit> {
         auto step = parse_duration(value);
         if (!step.ok()) return kube::fail("--history-resolution: " + step.error());
         if (step->count() < 1'000 || step->count() % 1'000 != 0) {
           return kube::fail("--history-resolution: must be whole seconds, at least 1s, got \"" +
                             value + "\"");
         }
         options.prometheus.resolution = *step;
         return kube::Unit{};
       }},
      {"--prometheus-cadvisor-job-name", text(options.prometheus.job)},
      {"--container-pod-name-label",
       label(options.prometheus.pod_label, "--container-pod-name-label")},
      {"--container-name-label",
       label(options.prometheus.container_label, "--container-name-label")},
      {"--container-namespace-label",
       label(options.prometheus.namespace_label, "--container-namespace-label")},
      {"--prometheus-timeout", duration(options.prometheus.timeout, "--prometheus-timeout", false)},
      {"--prometheus-ca-file", text(options.prometheus.ca_file)},
      {"--prometheus-bearer-token-file", text(options.prometheus.bearer_token_file)},
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
    // Boolean flags: alone means true (--leader-elect=false too).
    if (arg == "--leader-elect") {
      options.leader_elect = true;
      continue;
    }
    if (arg == "--metrics-secure") {
      options.metrics_secure = true;
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
