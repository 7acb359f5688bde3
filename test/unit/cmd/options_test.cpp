// Flag parsing: defaults, both spellings, and errors naming the flag.
#include "cmd/options.h"

#include <doctest/doctest.h>

using vscaler::cmd::parse_duration;
using vscaler::cmd::parse_options;

TEST_CASE("defaults are the design's") {
  auto options = parse_options({});
  REQUIRE(options.ok());
  CHECK(options->webhook_port == 9443);
  CHECK(options->cert_dir == "/tmp/k8s-webhook-server/serving-certs");
  CHECK(options->metrics_addr == ":8080");
  CHECK(options->health_addr == ":8081");
  CHECK(options->resync_period == std::chrono::seconds(60));
  CHECK(options->workers == 4);
  CHECK(options->namespace_.empty());
  CHECK(options->log_level == "info");
}

TEST_CASE("flags take a separate or an inline value") {
  auto options = parse_options({"--workers", "8", "--resync-period=2s", "--namespace", "shop",
                                "--kubeconfig=/tmp/kc", "--health-addr", "127.0.0.1:0"});
  REQUIRE(options.ok());
  CHECK(options->workers == 8);
  CHECK(options->resync_period == std::chrono::seconds(2));
  CHECK(options->namespace_ == "shop");
  CHECK(options->kubeconfig == "/tmp/kc");
  CHECK(options->health_addr == "127.0.0.1:0");
}

TEST_CASE("bad flags fail with a message naming the flag") {
  CHECK(parse_options({"--workers", "0"}).error() ==
        "--workers: must be an integer from 1 to 1024, got \"0\"");
  CHECK(parse_options({"--bogus"}).error() == "unknown flag \"--bogus\" (see --help)");
  CHECK(parse_options({"--workers"}).error() == "--workers: needs a value");
  CHECK(parse_options({"--resync-period", "soon"}).error().rfind("--resync-period:", 0) == 0);
  CHECK(parse_options({"--log-level", "loud"}).error().rfind("--log-level:", 0) == 0);
  CHECK(parse_options({"--metrics-addr", "8080"}).error().rfind("--metrics-addr:", 0) == 0);
  CHECK(parse_options({"--webhook-port", "70000"}).error().rfind("--webhook-port:", 0) == 0);
}

TEST_CASE("the dashboard's own address and the webhook's body budget") {
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK(defaults->dashboard_addr == "127.0.0.1:8082");
  CHECK(defaults->webhook_max_buffered_bytes == 64u * 1024 * 1024);
  auto set = parse_options({"--dashboard-addr", ":9090", "--webhook-max-buffered-bytes", "1Gi"});
  REQUIRE(set.ok());
  CHECK(set->dashboard_addr == ":9090");
  CHECK(set->webhook_max_buffered_bytes == 1024u * 1024 * 1024);
  auto off = parse_options({"--dashboard-addr="});
  REQUIRE(off.ok());
  CHECK(off->dashboard_addr.empty());
  CHECK(parse_options({"--dashboard-addr", "8082"}).error().rfind("--dashboard-addr:", 0) == 0);
  CHECK(parse_options({"--webhook-max-buffered-bytes", "1Mi"}).error() ==
        "--webhook-max-buffered-bytes: must be between 48Mi (one 7 MiB review, read and parsed, "
        "fits) and 1Ti, got \"1Mi\"");
  CHECK(parse_options({"--webhook-max-buffered-bytes", "lots"})
            .error()
            .rfind("--webhook-max-buffered-bytes:", 0) == 0);
}

TEST_CASE("durations use Go's units") {
  CHECK(*parse_duration("60s") == std::chrono::seconds(60));
  CHECK(*parse_duration("500ms") == std::chrono::milliseconds(500));
  CHECK(*parse_duration("1m30s") == std::chrono::seconds(90));
  CHECK(*parse_duration("1.5s") == std::chrono::milliseconds(1500));
  CHECK(*parse_duration("2h") == std::chrono::hours(2));
  CHECK_FALSE(parse_duration("10").ok());
  CHECK_FALSE(parse_duration("5d").ok());
  CHECK_FALSE(parse_duration("").ok());
}

TEST_CASE("leader election flags") {
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK_FALSE(defaults->leader_elect);
  CHECK(defaults->leader_election_namespace.empty());  // resolved from the pod at startup
  auto on = parse_options({"--leader-elect", "--leader-election-namespace", "ops"});
  REQUIRE(on.ok());
  CHECK(on->leader_elect);
  CHECK(on->leader_election_namespace == "ops");
  CHECK(parse_options({"--leader-elect=true"})->leader_elect);
  CHECK_FALSE(parse_options({"--leader-elect", "--leader-elect=false"})->leader_elect);
  CHECK(parse_options({"--leader-elect=yes"}).error() ==
        "--leader-elect: must be true or false, got \"yes\"");
  CHECK(parse_options({"--leader-election-namespace="}).error() ==
        "--leader-election-namespace: must not be empty");
}

TEST_CASE("--min-update-interval: default 10m, a Go duration") {
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK(defaults->min_update_interval == std::chrono::minutes(10));
  auto options = parse_options({"--min-update-interval", "30s"});
  REQUIRE(options.ok());
  CHECK(options->min_update_interval == std::chrono::seconds(30));
  CHECK(
      parse_options({"--min-update-interval", "soon"}).error().rfind("--min-update-interval:", 0) ==
      0);
}

TEST_CASE("the in-place rules' thresholds: VPA's names and defaults (12h, 10m), Go durations") {
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK(defaults->in_bounds_lifetime_threshold == std::chrono::hours(12));
  CHECK(defaults->evict_after_oom_threshold == std::chrono::minutes(10));
  auto options = parse_options({"--in-recommendation-bounds-eviction-lifetime-threshold", "30s",
                                "--evict-after-oom-threshold", "10s"});
  REQUIRE(options.ok());
  CHECK(options->in_bounds_lifetime_threshold == std::chrono::seconds(30));
  CHECK(options->evict_after_oom_threshold == std::chrono::seconds(10));
  auto zero = parse_options({"--evict-after-oom-threshold", "0s"});
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().rfind("--evict-after-oom-threshold:", 0) == 0);
}

TEST_CASE("the recommender's flags: Go durations, VPA's defaults, 0 turns recommendations off") {
  using std::chrono::hours;
  using std::chrono::minutes;
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK(defaults->recommender_interval == minutes(1));
  CHECK(defaults->checkpoint_interval == minutes(10));
  CHECK(defaults->cpu_histogram_decay_half_life == hours(24));
  CHECK(defaults->memory_histogram_decay_half_life == hours(24));
  CHECK(defaults->memory_aggregation_interval == hours(24));
  CHECK(defaults->memory_aggregation_interval_count == 8);
  auto set = parse_options(
      {"--recommender-interval=10s", "--checkpoint-interval", "15s",
       "--cpu-histogram-decay-half-life", "1h", "--memory-histogram-decay-half-life=30m",
       "--memory-aggregation-interval", "2h", "--memory-aggregation-interval-count=3"});
  REQUIRE(set.ok());
  CHECK(set->recommender_interval == std::chrono::seconds(10));
  CHECK(set->checkpoint_interval == std::chrono::seconds(15));
  CHECK(set->cpu_histogram_decay_half_life == hours(1));
  CHECK(set->memory_histogram_decay_half_life == minutes(30));
  CHECK(set->memory_aggregation_interval == hours(2));
  CHECK(set->memory_aggregation_interval_count == 3);
  CHECK(parse_options({"--memory-aggregation-interval-count", "0"})
            .error()
            .rfind("--memory-aggregation-interval-count:", 0) == 0);
  auto off = parse_options({"--recommender-interval", "0"});
  REQUIRE(off.ok());
  CHECK(off->recommender_interval.count() == 0);
  CHECK(parse_options({"--checkpoint-interval", "0"}).error() ==
        "--checkpoint-interval: must be positive, got \"0\"");
  CHECK(parse_options({"--memory-aggregation-interval", "soon"})
            .error()
            .rfind("--memory-aggregation-interval:", 0) == 0);
  CHECK(parse_options({"--recommender-interval", "-1s"})
            .error()
            .rfind("--recommender-interval:", 0) == 0);
}

TEST_CASE("rounding and cap flags: VPA's names, positive quantities, errors name the flag") {
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK(defaults->round_cpu_millicores == 1);
  CHECK(defaults->round_memory_bytes == 1024 * 1024);
  CHECK_FALSE(defaults->max_allowed_cpu);
  CHECK_FALSE(defaults->max_allowed_memory);
  auto set = parse_options({"--round-cpu-millicores=10", "--round-memory-bytes", "64Mi",
                            "--container-recommendation-max-allowed-cpu", "4",
                            "--container-recommendation-max-allowed-memory=16Gi"});
  REQUIRE(set.ok());
  CHECK(set->round_cpu_millicores == 10);
  CHECK(set->round_memory_bytes == 64 * 1024 * 1024);
  REQUIRE(set->max_allowed_cpu);
  CHECK(set->max_allowed_cpu->to_string() == "4");
  REQUIRE(set->max_allowed_memory);
  CHECK(set->max_allowed_memory->to_string() == "16Gi");
  CHECK(parse_options({"--round-memory-bytes", "1048576"})->round_memory_bytes == 1048576);
  CHECK(parse_options({"--round-cpu-millicores", "0"}).error().find("--round-cpu-millicores") == 0);
  CHECK(parse_options({"--round-memory-bytes", "0.5"}).error() ==
        "--round-memory-bytes: must be a positive whole quantity (like 1Mi or 2), got \"0.5\"");
  CHECK(parse_options({"--round-memory-bytes", "lots"}).error().find("--round-memory-bytes: ") ==
        0);
  CHECK(parse_options({"--container-recommendation-max-allowed-cpu", "-1"})
            .error()
            .find("--container-recommendation-max-allowed-cpu: must be a positive") == 0);
  CHECK(parse_options({"--container-recommendation-max-allowed-cpu", "500m"})->max_allowed_cpu);
}

TEST_CASE("history from Prometheus: VPA's flag names and defaults, today's label names") {
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK(defaults->prometheus.address.empty());
  CHECK(defaults->prometheus.history_length == std::chrono::hours(24 * 8));
  CHECK(defaults->prometheus.resolution == std::chrono::hours(1));
  CHECK(defaults->prometheus.job == "kubernetes-cadvisor");
  CHECK(defaults->prometheus.pod_label == "pod");
  CHECK(defaults->prometheus.container_label == "container");
  CHECK(defaults->prometheus.namespace_label == "namespace");
  CHECK(defaults->prometheus.timeout == std::chrono::seconds(10));
  auto set = parse_options({"--prometheus-address",
                            "https://prometheus.monitoring:9090",
                            "--history-length",
                            "14d",
                            "--history-resolution",
                            "5m",
                            "--prometheus-cadvisor-job-name",
                            "cadvisor",
                            "--container-pod-name-label",
                            "pod_name",
                            "--container-name-label",
                            "name",
                            "--container-namespace-label",
                            "ns",
                            "--prometheus-timeout",
                            "3s",
                            "--prometheus-ca-file",
                            "/etc/ca.pem",
                            "--prometheus-bearer-token-file",
                            "/var/token"});
  REQUIRE(set.ok());
  CHECK(set->prometheus.address == "https://prometheus.monitoring:9090");
  CHECK(set->prometheus.history_length == std::chrono::hours(24 * 14));
  CHECK(set->prometheus.resolution == std::chrono::minutes(5));
  CHECK(set->prometheus.job == "cadvisor");
  CHECK(set->prometheus.pod_label == "pod_name");
  CHECK(set->prometheus.container_label == "name");
  CHECK(set->prometheus.namespace_label == "ns");
  CHECK(set->prometheus.timeout == std::chrono::seconds(3));
  CHECK(set->prometheus.ca_file == "/etc/ca.pem");
  CHECK(set->prometheus.bearer_token_file == "/var/token");
  CHECK(parse_options({"--history-length", "1d12h"})->prometheus.history_length ==
        std::chrono::hours(36));
  CHECK(parse_options({"--history-length", "48h"})->prometheus.history_length ==
        std::chrono::hours(48));
  CHECK(parse_options({"--prometheus-address", "prometheus:9090"}).error() ==
        "--prometheus-address: must be an http:// or https:// URL, got \"prometheus:9090\"");
  // A password in the address is refused, and not repeated in the message.
  auto secret = parse_options({"--prometheus-address", "https://admin:hunter2@prometheus:9090"});
  REQUIRE_FALSE(secret.ok());
  CHECK(secret.error().find("--prometheus-address: credentials in the URL") == 0);
  CHECK(secret.error().find("hunter2") == std::string::npos);
  CHECK(parse_options({"--prometheus-address", "http://prometheus:9090/a@b"}).ok());
  CHECK(parse_options({"--prometheus-address", "http://prometheus:9090?x=a@b"}).ok());
  auto bare = parse_options({"--prometheus-address", "admin:hunter2@prometheus:9090"});
  REQUIRE_FALSE(bare.ok());
  CHECK(bare.error().find("hunter2") == std::string::npos);
  CHECK(parse_options({"--history-length", "0d"}).error().rfind("--history-length:", 0) == 0);
  CHECK(parse_options({"--history-length", "soon"}).error().rfind("--history-length:", 0) == 0);
  CHECK(
      parse_options({"--history-resolution", "500ms"}).error().rfind("--history-resolution:", 0) ==
      0);
  CHECK(parse_options({"--container-name-label", "1bad"}).error() ==
        "--container-name-label: \"1bad\" is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)");
  CHECK(parse_options({"--prometheus-timeout", "0"}).error().rfind("--prometheus-timeout:", 0) ==
        0);
}

TEST_CASE("VPA's estimator flags: its names, units and defaults; errors name the flag") {
  auto defaults = parse_options({});
  REQUIRE(defaults.ok());
  CHECK(defaults->recommendation_margin_fraction == 0.15);
  CHECK(defaults->pod_min_cpu_millicores == 25);
  CHECK(defaults->pod_min_memory_mb == 250);
  CHECK(defaults->oom_bump_up_ratio == 1.2);
  CHECK(defaults->oom_min_bump_up_bytes == 100.0 * 1024 * 1024);
  auto set = parse_options({"--recommendation-margin-fraction=0.1",
                            "--pod-recommendation-min-cpu-millicores", "12.5",
                            "--pod-recommendation-min-memory-mb=100", "--oom-bump-up-ratio", "1.5",
                            "--oom-min-bump-up-bytes", "1e8"});
  REQUIRE(set.ok());
  CHECK(set->recommendation_margin_fraction == 0.1);
  CHECK(set->pod_min_cpu_millicores == 12.5);
  CHECK(set->pod_min_memory_mb == 100);
  CHECK(set->oom_bump_up_ratio == 1.5);
  CHECK(set->oom_min_bump_up_bytes == 1e8);
  CHECK(parse_options({"--oom-bump-up-ratio", "0.9"}).error() ==
        "--oom-bump-up-ratio: must be a number from 1 to 100, got \"0.9\"");
  CHECK(parse_options({"--recommendation-margin-fraction", "-0.1"})
            .error()
            .find("--recommendation-margin-fraction: must be a number from 0 to 10") == 0);
  for (const char* bad : {"", "x", "nan", "inf", "1.5x"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_options({"--pod-recommendation-min-memory-mb", bad}).ok());
  }
}
