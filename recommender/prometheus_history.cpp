// PrometheusHistory: query building, paged range queries, and the matrix answer parsed.
#include "recommender/prometheus_history.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/log.h"
#include "kube/client.h"
#include "recommender/json_fields.h"

namespace vscaler::recommender {
namespace {

using nlohmann::json;

/// `text` with RE2's special characters escaped (a workload name may hold dots).
std::string regex_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view(".+*?()|[]{}^$\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

/// `text` as a PromQL string literal (double-quoted, backslashes and quotes escaped).
std::string promql_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// "1h", "90s": a duration as PromQL writes it (whole seconds).
std::string promql_duration(Duration d) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
  if (seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds) + "s";
}

/// The series selector shared by both queries.
std::string selector(const PrometheusOptions& options, const TargetWorkload& target) {
  return "{job=" + promql_string(options.job) + ", " + options.namespace_label + "=" +
         promql_string(target.namespace_) + ", " + options.pod_label + "=~" +
         promql_string(pod_name_pattern(target)) + ", " + options.container_label + "!=\"POD\", " +
         options.container_label + "!=\"\"}";
}

std::string read_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return {};
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Seconds since the epoch with millisecond precision, as the HTTP API takes them (a step too,
/// as a duration since the epoch).
std::string unix_seconds(TimePoint t) {
  const std::int64_t millis = to_millis(t);
  std::string out = std::to_string(millis / 1000);
  if (millis % 1000 != 0) {
    std::string fraction = std::to_string(1000 + millis % 1000).substr(1);
    out += "." + fraction;
  }
  return out;
}

/// Nesting an answer may have: a matrix is 6 deep (answer, data, result, series, values, point).
/// Deeper elements are dropped while parsing, so neither the tree's memory nor the recursion of
/// a copy grows with a hostile body's nesting.
constexpr int kMaxAnswerDepth = 16;

/// The query's own timeout for Prometheus: a little under ours, so that Prometheus gives up on a
/// query before vscaler has (and says so), not evaluating on for an answer nobody reads.
std::string prometheus_timeout(std::chrono::milliseconds ours) {
  const auto millis = std::max<std::int64_t>(100, ours.count() * 9 / 10);
  return std::to_string(millis) + "ms";
}

/// The series of `pod`/`container` in `out`, added when absent.
PodSeries& series_of(std::vector<PodSeries>& out, const std::string& pod,
                     const std::string& container) {
  for (PodSeries& series : out) {
    if (series.pod == pod && series.container == container) return series;
  }
  out.push_back(PodSeries{pod, container, {}});
  return out.back();
}

}  // namespace

/// The pattern of a generated name: a prefix as the API server keeps it (cut to 58 characters, so
/// that the name with its 5 random ones fits 63), then the 5. The prefix is `literal`, then
/// `random` characters of [a-z0-9] and a "-" when `random` is not 0 (a ReplicaSet's hash).
static std::string generated_name(std::string_view literal, std::size_t random) {
  constexpr std::size_t kMaxPrefix = 58;  // 63 - 5
  const std::size_t dash = random > 0 ? 1 : 0;
  std::string pattern = regex_escape(literal.substr(0, kMaxPrefix));
  const std::size_t room = kMaxPrefix - std::min(kMaxPrefix, literal.size());
  if (const std::size_t kept = std::min(room, random); kept > 0) {
    pattern += "[a-z0-9]{" + std::to_string(kept) + "}";
  }
  if (dash > 0 && room >= random + dash) pattern += "-";
  return pattern + "[a-z0-9]{5}";
}

std::string pod_name_pattern(const TargetWorkload& target) {
  if (target.kind == "StatefulSet") return regex_escape(target.name) + "-[0-9]+";
  if (target.kind == "DaemonSet") return generated_name(target.name + "-", 0);
  // A Deployment's ReplicaSet is "<name>-<pod-template-hash>" (6 to 10 characters), its pods
  // "<replicaset>-<5>": "web-api-..." is not a pod of "web". A long name's pods have the
  // prefix cut where the hash's length puts the 58th character: one alternative per length.
  const std::string literal = target.name + "-";
  if (literal.size() + 10 + 1 <= 58)
    return regex_escape(target.name) + "-[a-z0-9]{6,10}-[a-z0-9]{5}";
  std::vector<std::string> alternatives;
  for (std::size_t hash = 6; hash <= 10; ++hash) {
    std::string alternative = generated_name(literal, hash);
    if (std::find(alternatives.begin(), alternatives.end(), alternative) == alternatives.end()) {
      alternatives.push_back(std::move(alternative));
    }
  }
  if (alternatives.size() == 1) return alternatives.front();
  std::string pattern = "(";
  for (std::size_t i = 0; i < alternatives.size(); ++i) {
    pattern += (i > 0 ? "|" : "") + alternatives[i];
  }
  return pattern + ")";
}

std::string owner_pattern(const TargetWorkload& target) {
  const std::string name = regex_escape(target.name);
  if (target.kind == "StatefulSet" || target.kind == "DaemonSet") return name;
  return name + "-[a-z0-9]{6,10}";  // the Deployment's ReplicaSets
}

static std::string owner_kind(const TargetWorkload& target) {
  return target.kind == "StatefulSet" || target.kind == "DaemonSet" ? target.kind : "ReplicaSet";
}

std::string not_owned_by_target(const PrometheusOptions& options, const TargetWorkload& target) {
  // kube-state-metrics labels its series namespace / pod; the cAdvisor series may use other
  // names (--container-namespace-label, --container-pod-name-label): label_replace copies them.
  auto owners = [&](const std::string& matcher) {
    // Over the step's window, as the usage is: a look-alike pod deleted minutes before the step's
    // end (a Helm hook's Job pod, a CronJob's) has no owner series at that instant any more,
    // but its usage is still in the step's rate and peak. At least 5 minutes (an instant
    // selector's lookback): a step shorter than kube-state-metrics' scrape interval would
    // otherwise find no owner series at all. A pod's owner never changes, so wider is harmless.
    const Duration window = std::max<Duration>(options.resolution, std::chrono::minutes(5));
    std::string series =
        "max_over_time(kube_pod_owner{namespace=" + promql_string(target.namespace_) + ", pod=~" +
        promql_string(pod_name_pattern(target)) + ", " + matcher + "}[" + promql_duration(window) +
        "])";
    if (options.pod_label != "pod") {
      series = "label_replace(" + series + ", " + promql_string(options.pod_label) +
               ", \"$1\", \"pod\", \"(.*)\")";
    }
    if (options.namespace_label != "namespace") {
      series = "label_replace(" + series + ", " + promql_string(options.namespace_label) +
               ", \"$1\", \"namespace\", \"(.*)\")";
    }
    return " unless on(" + options.namespace_label + ", " + options.pod_label + ") " + series;
  };
  // A pod kube-state-metrics says another controller owns: another kind, or another name.
  return owners("owner_kind!=" + promql_string(owner_kind(target))) +
         owners("owner_name!~" + promql_string(owner_pattern(target)));
}

/// "sum by (namespace, pod, container) (": one series per pod and container. cAdvisor's series
/// also carry the container's id and name, which change when it restarts: in the step of a
/// restart the old and the new series both have a point, the usage of that step is their sum
/// (CPU) or the larger (memory), and the parser would otherwise keep one of them.
static std::string per_container(const PrometheusOptions& options, std::string_view aggregation) {
  return std::string(aggregation) + " by (" + options.namespace_label + ", " + options.pod_label +
         ", " + options.container_label + ") (";
}

std::string cpu_query(const PrometheusOptions& options, const TargetWorkload& target) {
  return per_container(options, "sum") + "rate(container_cpu_usage_seconds_total" +
         selector(options, target) + "[" + promql_duration(options.resolution) + "]))" +
         not_owned_by_target(options, target);
}

std::string memory_query(const PrometheusOptions& options, const TargetWorkload& target) {
  return per_container(options, "max") + "max_over_time(container_memory_working_set_bytes" +
         selector(options, target) + "[" + promql_duration(options.resolution) + "]))" +
         not_owned_by_target(options, target);
}

namespace {

// A DNS-1123 label (a container's name), or with dots a subdomain (a pod's): lower-case letters,
// digits and '-', beginning and ending with a letter or digit, at most `max` characters.
bool kubernetes_name(std::string_view name, std::size_t max, bool dots) {
  if (name.empty() || name.size() > max) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '-' || (dots && c == '.'); });
}

}  // namespace

kube::Result<kube::Unit, std::string> parse_query_range(int status, std::string_view body,
                                                        const PrometheusOptions& options,
                                                        std::vector<PodSeries>& out,
                                                        std::size_t& dropped) {
  const json::parser_callback_t shallow = [](int depth, json::parse_event_t event, json&) {
    return depth <= kMaxAnswerDepth || (event != json::parse_event_t::object_start &&
                                        event != json::parse_event_t::array_start);
  };
  json answer = json::parse(body, shallow, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    // The excerpt goes into a status message: printable ASCII only (the patch's dump() throws on
    // invalid UTF-8).
    return kube::fail("HTTP " + std::to_string(status) + ", not a Prometheus API answer (" +
                      log::printable_untrusted(body, 64) + ")");
  }
  if (string_field(answer, "status") != "success") {
    // Prometheus' own words, which go into a status message: printable ASCII, bounded.
    const std::string_view type = string_field(answer, "errorType");
    const std::string_view error = string_field(answer, "error");
    return kube::fail("HTTP " + std::to_string(status) + ", " +
                      log::printable_untrusted(type.empty() ? "error" : type, 32) + ": " +
                      log::printable_untrusted(error.empty() ? "no error message" : error));
  }
  auto data = answer.find("data");
  if (data == answer.end() || !data->is_object() || string_field(*data, "resultType") != "matrix" ||
      !data->contains("result") || !(*data)["result"].is_array()) {
    return kube::fail(std::string("the answer is not a matrix (data.resultType, data.result)"));
  }
  for (const json& series : (*data)["result"]) {
    if (!series.is_object()) return kube::fail(std::string("a series is not an object"));
    auto metric = series.find("metric");
    if (metric == series.end() || !metric->is_object()) continue;
    const std::string pod(string_field(*metric, options.pod_label.c_str()));
    const std::string container(string_field(*metric, options.container_label.c_str()));
    // Labels a tenant's own exporter may set (honorLabels): a name Kubernetes would refuse for a
    // pod or a container is nobody's, and would otherwise become a container of the published
    // recommendation, one more gauge series, and text in `kubectl vscaler report`.
    if (!kubernetes_name(pod, 253, true) || !kubernetes_name(container, 63, false)) continue;
    const std::string named = log::printable_untrusted(pod + "/" + container);
    auto values = series.find("values");
    if (values == series.end() || !values->is_array()) {
      return kube::fail("series " + named + ": no values list");
    }
    PodSeries& into = series_of(out, pod, container);
    for (const json& point : *values) {
      // [<unix seconds, a number>, "<value, a string>"]
      if (!point.is_array() || point.size() != 2 || !point[0].is_number() ||
          !point[1].is_string()) {
        return kube::fail("series " + named +
                          ": a malformed point (not [<unix time>, \"<value>\"])");
      }
      const std::string& text = point[1].get_ref<const std::string&>();
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0) {
        ++dropped;  // "NaN", "+Inf", a negative rate after a counter reset: nothing folded
        continue;
      }
      const auto millis = static_cast<std::int64_t>(std::llround(point[0].get<double>() * 1000));
      into.points.push_back(UsagePoint{from_millis(millis), value});
    }
  }
  return kube::Unit{};
}

kube::Result<std::unique_ptr<PrometheusHistory>> PrometheusHistory::create(
    PrometheusOptions options) {
  kube::ClientConfig config;
  config.server = options.address;
  config.source = "--prometheus-address";
  if (!options.ca_file.empty()) {
    std::string error;
    config.ca_pem = read_file(options.ca_file, error);
    if (!error.empty()) return kube::fail("--prometheus-ca-file: " + error);
  }
  config.token_file = options.bearer_token_file;
  config.connect_timeout = options.timeout;
  config.request_timeout = options.timeout;
  config.max_connections = 2;
  auto transport = kube::Transport::create(config);
  if (!transport.ok()) return kube::fail("--prometheus-address: " + transport.error());
  return std::unique_ptr<PrometheusHistory>(
      new PrometheusHistory(std::move(options), std::move(*transport)));
}

kube::Result<kube::Unit, HistoryError> PrometheusHistory::range(const std::string& query,
                                                                TimePoint start, TimePoint end,
                                                                std::vector<PodSeries>& out,
                                                                UsageHistory& history) {
  // Pages of at most kMaxPointsPerSeries points (an 8-day history at a 63 s step fits one).
  const Duration page = options_.resolution * static_cast<int64_t>(kMaxPointsPerSeries - 1);
  for (TimePoint from = start; from <= end; from += page + options_.resolution) {
    const TimePoint to = std::min(end, from + page);
    kube::HttpRequest request;
    request.target = "/api/v1/query_range?query=" + kube::url_encode(query) +
                     "&start=" + unix_seconds(from) + "&end=" + unix_seconds(to) +
                     "&step=" + unix_seconds(from_millis(options_.resolution.count())) +
                     "&timeout=" + prometheus_timeout(options_.timeout);
    request.timeout = options_.timeout;
    ++history.queries;
    auto answer = transport_->send(request);
    if (!answer.ok()) {
      return kube::fail(HistoryError{
          "Prometheus at " + options_.address + ": " + answer.error().to_string(), true});
    }
    auto parsed = parse_query_range(answer->status, answer->body, options_, out, history.dropped);
    if (!parsed.ok()) {
      // Refused (401, 403), throttled (408, 429: a proxy, Thanos, Mimir) or overloaded (5xx:
      // unavailable, its own query timeout): so would the
      // next query be. A 4xx of this query (422: too many samples) is this target's alone.
      const bool source_down = answer->status == 401 || answer->status == 403 ||
                               answer->status == 408 || answer->status == 429 ||
                               answer->status >= 500;
      return kube::fail(
          HistoryError{"Prometheus at " + options_.address + ": " + parsed.error(), source_down});
    }
  }
  return kube::Unit{};
}

kube::Result<UsageHistory, HistoryError> PrometheusHistory::load(const TargetWorkload& target,
                                                                 TimePoint now) {
  UsageHistory history;
  history.resolution = options_.resolution;
  // Whole steps, so that two scalers' queries hit the same points (and Prometheus' cache).
  const auto step = options_.resolution.count();
  const TimePoint end = from_millis(to_millis(now) / step * step);
  const TimePoint start = end - options_.history_length;
  if (auto cpu = range(cpu_query(options_, target), start, end, history.cpu, history); !cpu.ok()) {
    return kube::fail(cpu.error());
  }
  if (auto memory = range(memory_query(options_, target), start, end, history.memory, history);
      !memory.ok()) {
    return kube::fail(memory.error());
  }
  return history;
}

}  // namespace vscaler::recommender
