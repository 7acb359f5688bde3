// vscaler: keeps Deployments' container resources as VerticalScaler resources declare them.
// main() parses flags, wires the pieces (kube client -> manager: informer, index, queue,
// workers, resync; webhook server with its handlers; health and metrics endpoints) and stops
// them in order on SIGTERM/SIGINT.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/log.h"
#include "cmd/leadership.h"
#include "cmd/options.h"
#include "cmd/report.h"
#include "controller/boost_step.h"
#include "controller/kube_api.h"
#include "controller/manager.h"
#include "controller/memory_trim.h"
#include "controller/template_resources.h"
#include "dashboard/routes.h"
#include "kube/access_review.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/server_version.h"
#include "metrics/registry.h"
#include "net/cert_watcher.h"
#include "net/health_server.h"
#include "recommender/loop.h"
#include "recommender/prometheus_history.h"
#include "recommender/recommender_api.h"
#include "webhook/deployment_handler.h"
#include "webhook/pod_handler.h"
#include "webhook/scaler_handler.h"
#include "webhook/server.h"

namespace {

using namespace vscaler;
constexpr std::string_view kMainLogger = "main";

/// Checks, before anything starts, that the API server answers and lets us list VerticalScalers.
/// Transient failures (network, 5xx) are retried for up to `patience`; anything else — TLS
/// verification, Unauthorized, Forbidden, the CRD missing — is reported at once in one line
/// naming the cause, because no amount of retrying fixes it. Throttling (429) is an answer, not
/// an outage: it is retried as long as it lasts, each time after the Retry-After the server gave
/// (exiting, to be restarted and ask again, would only add to the load it reports).
/// Whether the API server has pods/resize (Kubernetes 1.33): GET /version once. Unknown (the
/// call failed, an unreadable answer) counts as yes: a resize the server lacks is refused and
/// reported per pod, which says more than guessing no.
bool resize_supported(const kube::Client& client) {
  kube::HttpRequest request;
  request.target = "/version";
  auto answer = client.call(request);
  auto version = answer.ok() ? kube::parse_server_version(*answer) : std::nullopt;
  if (!version) {
    log::warn(
        kMainLogger, "cannot read the API server's version; assuming pods/resize exists",
        {{"error", answer.ok() ? std::string("unreadable answer") : answer.error().to_string()}});
    return true;
  }
  if (version->at_least(1, 33)) return true;
  log::warn(kMainLogger,
            "the API server is older than Kubernetes 1.33: InPlaceOrRecreate and InPlace apply "
            "values as Initial (ResizeUnsupported)",
            {{"version", std::to_string(version->major) + "." + std::to_string(version->minor)}});
  return false;
}

kube::Result<kube::Unit> preflight(const kube::Client& client, const std::string& ns,
                                   std::chrono::seconds patience) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  kube::ListOptions options;
  options.limit = 1;
  options.max_pages = 1;  // one object proves the right; the rest would be a full list
  while (true) {
    auto listed = client.list(kube::resources::kVerticalScalers, ns, options);
    if (listed.ok()) return kube::Unit{};
    const kube::ApiError& error = listed.error();
    std::string cause = error.to_string();
    if (kube::is_not_found(error)) {
      cause =
          "the VerticalScaler CRD (verticalscalers.scaling.vscaler.dev) is not installed: " + cause;
    }
    bool throttled = kube::is_too_many_requests(error);
    if (!kube::is_retryable(error) ||
        (!throttled && std::chrono::steady_clock::now() >= deadline)) {
      return kube::fail(cause);
    }
    log::warn(kMainLogger,
              throttled ? "the API server throttles us; retrying after its Retry-After"
                        : "the API server is not reachable yet; retrying",
              {{"error", cause}});
    std::this_thread::sleep_for(std::max<std::chrono::seconds>(
        std::chrono::seconds(1), error.retry_after.value_or(std::chrono::seconds(0))));
  }
}

/// Blocks until SIGTERM or SIGINT; returns the signal's name.
const char* wait_for_signal() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  int received = 0;
  sigwait(&signals, &received);
  return received == SIGTERM ? "SIGTERM" : "SIGINT";
}

int run(const cmd::Options& options) {
  // Every thread started from here on inherits the blocked mask; only sigwait() sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a peer closing a TLS connection must not kill the process

  auto config = kube::load_default(options.kubeconfig);
  if (!config.ok()) {
    log::error(kMainLogger, "cannot load the cluster configuration", {{"error", config.error()}});
    return 1;
  }
  auto client = kube::Client::connect(*config);
  if (!client.ok()) {
    log::error(kMainLogger, "cannot build the API client", {{"error", client.error()}});
    return 1;
  }
  if (auto ready = preflight(*client, options.namespace_, std::chrono::seconds(30)); !ready.ok()) {
    log::error(kMainLogger, "cannot use the API server",
               {{"server", config->server}, {"error", ready.error()}});
    return 1;
  }
  auto& registry = metrics::default_registry();
  auto leadership = cmd::Leadership::create(options, *config, registry);
  if (!leadership.ok()) {
    log::error(kMainLogger, "cannot set up leader election", {{"error", leadership.error()}});
    return 1;
  }

  controller::ManagerOptions manager_options;
  manager_options.leader_gate = &(*leadership)->gate();
  manager_options.ns = options.namespace_;
  manager_options.workers = options.workers;
  manager_options.resync_period = options.resync_period;
  manager_options.reconciler.min_update_interval = options.min_update_interval;
  manager_options.reconciler.in_place_rules.long_lived = options.in_bounds_lifetime_threshold;
  manager_options.reconciler.in_place_rules.quick_oom = options.evict_after_oom_threshold;
  manager_options.reconciler.resize_supported = resize_supported(*client);
  manager_options.reconciler.recommender_enabled = options.recommender_interval.count() > 0;
  // A new scaler's first recommendation runs when it appears; the loop is built after the
  // manager (it reads the manager's store), so the callback finds it through this pointer.
  std::atomic<recommender::RecommenderLoop*> recommender_ref{nullptr};
  manager_options.on_scaler_spec = [&recommender_ref](const std::string&) {
    if (auto* loop = recommender_ref.load()) loop->on_scaler_appeared();
  };
  controller::Manager manager(*client, manager_options, registry);

  // The recommender: the leader's loop over the scalers the manager knows; a published
  // recommendation enqueues its scaler so the reconciler looks at it.
  recommender::KubeRecommenderApi recommender_api(*client);
  recommender::LoopOptions recommender_options;
  recommender_options.interval = options.recommender_interval;
  recommender_options.checkpoint_interval = options.checkpoint_interval;
  recommender_options.aggregate.cpu_half_life = options.cpu_histogram_decay_half_life;
  recommender_options.aggregate.memory_half_life = options.memory_histogram_decay_half_life;
  recommender_options.aggregate.memory_aggregation_interval = options.memory_aggregation_interval;
  recommender_options.aggregate.memory_aggregation_interval_count =
      options.memory_aggregation_interval_count;
  recommender_options.recommendation.rounding = {options.round_cpu_millicores,
                                                 options.round_memory_bytes};
  recommender_options.recommendation.safety_margin = options.recommendation_margin_fraction;
  recommender_options.recommendation.pod_min_cpu_cores = options.pod_min_cpu_millicores / 1000;
  recommender_options.recommendation.pod_min_memory_bytes = options.pod_min_memory_mb * 1024 * 1024;
  recommender_options.aggregate.oom_bump_ratio = options.oom_bump_up_ratio;
  recommender_options.aggregate.oom_min_bump_bytes = options.oom_min_bump_up_bytes;
  if (options.max_allowed_cpu) {
    recommender_options.max_allowed.emplace(recommender::kCpu, *options.max_allowed_cpu);
  }
  if (options.max_allowed_memory) {
    recommender_options.max_allowed.emplace(recommender::kMemory, *options.max_allowed_memory);
  }
  recommender::LoopHooks recommender_hooks;
  recommender_hooks.scalers = [&manager] { return manager.store().snapshot(); };
  recommender_hooks.scaler = [&manager](const std::string& key) {
    return manager.store().get(key);
  };
  recommender_hooks.synced = [&manager] { return manager.synced(); };
  recommender_hooks.still_leading = [&manager] { return manager.leader_steps().leading_now(); };
  recommender_hooks.begin_step = [&manager](std::string_view step) {
    return manager.leader_steps().begin(step);
  };
  recommender_hooks.on_pass_done = [&manager] { manager.note_memory_work(); };
  recommender_hooks.on_published = [&manager](const std::string& key) {
    manager.hints().hint(key, controller::Expectation{});
  };
  recommender::RecommenderLoop recommender_loop(recommender_api, std::move(recommender_hooks),
                                                recommender_options, registry);
  recommender_ref.store(&recommender_loop);
  // History from Prometheus for scalers without a checkpoint (DESIGN.md "History from
  // Prometheus"). A bad address or CA file is a start-up error: the operator asked for it.
  std::unique_ptr<recommender::PrometheusHistory> history;
  if (!options.prometheus.address.empty()) {
    auto created = recommender::PrometheusHistory::create(options.prometheus);
    if (!created.ok()) {
      log::error("main", "cannot use Prometheus for history", {{"error", created.error()}});
      return 1;
    }
    history = std::move(*created);
    recommender_loop.set_history_source(history.get());
    log::info(
        "main", "scalers without a checkpoint start from Prometheus' history",
        {{"address", options.prometheus.address},
         {"length", std::to_string(options.prometheus.history_length.count() / 3'600'000) + "h"},
         {"resolution", std::to_string(options.prometheus.resolution.count() / 1000) + "s"}});
  }

  net::CertWatcherOptions cert_options;
  cert_options.cert_dir = options.cert_dir;
  net::CertWatcher certs(cert_options);
  certs.start();

  auto& enqueued =
      registry.counter("vscaler_webhook_enqueued_total", "Scaler keys the admission hook enqueued")
          .get();
  auto& admission_applied = registry
                                .counter("vscaler_recommendation_applied_total",
                                         "Recommendations applied to a workload's template, by "
                                         "trigger (admission, bounds)",
                                         {"trigger"})
                                .with({"admission"});
  webhook::DeploymentHandler deployments(manager.store(), manager.hints(), enqueued,
                                         &admission_applied, &manager.limit_ranges());
  auto& pod_admissions = registry.counter(
      "vscaler_pod_admission_total",
      "Pod CREATEs the pod admission hook answered, by result (patched, unchanged, no_scaler)",
      {"result"});
  webhook::PodHandler pods(
      manager.store(), pod_admissions, &manager.limit_ranges(), &manager.quotas(), &manager.hints(),
      &controller::startup_boost_counter(registry), manager_options.reconciler.resize_supported);
  webhook::ScalerHandler scalers(manager.store());

  webhook::AdmissionServerOptions server_options;
  server_options.port = options.webhook_port;
  server_options.registry = &registry;
  server_options.max_buffered_body_bytes = options.webhook_max_buffered_bytes;
  server_options.client_ca_file = options.webhook_client_ca_file;
  webhook::AdmissionServer server(certs, server_options);
  webhook::HandlerOptions deployment_options;
  deployment_options.projection = webhook::DeploymentHandler::projection();
  deployment_options.quick = true;  // in memory only: served on the event loop
  // One handler, two paths: the shipped configuration keeps Deployments on the first (replicas
  // of an older version, mid-upgrade, still answer it) and sends StatefulSets and DaemonSets to
  // the second; each path answers every supported kind.
  for (const char* path : {"/mutate-deployments", "/mutate-workloads"}) {
    server.handle(
        path,
        [&deployments](const webhook::AdmissionRequest& request) {
          return deployments.handle(request);
        },
        deployment_options);
  }
  webhook::HandlerOptions pod_options;
  pod_options.projection = webhook::PodHandler::projection();
  pod_options.quick = true;  // in memory only, as the workload hook
  server.handle(
      "/mutate-pods",
      [&pods](const webhook::AdmissionRequest& request) { return pods.handle(request); },
      pod_options);
  server.handle("/validate-verticalscalers", [&scalers](const webhook::AdmissionRequest& request) {
    return scalers.handle(request);
  });

  net::HealthServer health(options.health_addr, registry, "health");
  health.add_readiness_check("informer-synced", [&manager] { return manager.synced(); });
  health.add_readiness_check("certificate-loaded", [&certs] { return certs.loaded(); });
  net::HealthServer metrics_server(options.metrics_addr, registry, "metrics");
  metrics_server.expose_metrics(registry);
  // --metrics-secure: HTTPS with the webhook's certificate, and only for callers RBAC lets get
  // /metrics (declared before the server that calls it).
  kube::AccessReviewer metrics_access(
      [&client](const kube::ResourceType& type, const nlohmann::json& review) {
        // A scrape waits on it, on one of the metrics port's two workers (whose requests time
        // out after 5 s): not the client's default minute when the API server does not answer.
        kube::WriteOptions within_a_scrape;
        within_a_scrape.timeout = std::chrono::seconds(2);
        return client->create(type, "", review, within_a_scrape);
      });
  if (options.metrics_secure) {
    metrics_server.serve_tls(certs);
    metrics_server.guard(
        "/metrics",
        [&metrics_access](const net::http::RequestHead& head) -> std::optional<net::Page> {
          auto authorization = head.header("Authorization");
          auto decision = metrics_access.check(authorization.value_or(""), head.path);
          if (decision.status == 200) return std::nullopt;
          return net::Page{net::http::kText, decision.message + "\n", decision.status};
        });
  }
  // /dashboard and /dashboard.json on their own address (every tenant's workloads: loopback by
  // default), from the scalers in memory (declared first: it outlives the server that calls it).
  // Scalers in mode "Off" are shown against their workloads' templates, listed by the
  // dashboard's sampler (never by a page view); a list it may not read leaves theirs unknown.
  dashboard::TemplateReader templates = [&client](const std::string& ns, const std::string& kind,
                                                  api::TemplateResources& out) {
    auto listed =
        controller::list_template_resources(*client, ns, kind, out, std::chrono::seconds(10));
    if (!listed.ok()) {
      log::warn(kMainLogger, "the dashboard cannot list the templates of scalers in mode Off",
                {{"namespace", ns}, {"kind", kind}, {"error", listed.error().to_string()}});
    }
    return listed.ok();
  };
  dashboard::Dashboard board([&manager] { return manager.store().snapshot(); }, {},
                             std::move(templates));
  std::optional<net::HealthServer> dashboard_server;
  if (!options.dashboard_addr.empty()) {
    dashboard_server.emplace(options.dashboard_addr, registry, "dashboard");
    dashboard::serve(*dashboard_server, board);
  }

  manager.start();
  if (auto started = server.start(); !started.ok()) {
    log::error(kMainLogger, "cannot start the webhook server", {{"error", started.error()}});
    manager.stop();
    return 1;
  }
  std::vector<net::HealthServer*> endpoints = {&health, &metrics_server};
  if (dashboard_server) endpoints.push_back(&*dashboard_server);
  for (auto* endpoint : endpoints) {
    // What their connections hold (the metrics port's TLS buffers under --metrics-secure: ~50 KiB
    // each, 16,384 connections allowed) within an eighth of the webhook's budget each, so the
    // process stays within its memory limit whatever is held open on any port.
    endpoint->limit_held_bytes(options.webhook_max_buffered_bytes / 8);
    if (auto started = endpoint->start(); !started.ok()) {
      log::error(kMainLogger, "cannot start the health, metrics or dashboard server",
                 {{"error", started.error()}});
      server.stop();
      manager.stop();
      return 1;
    }
  }
  // Last: from here on the elector may call into the manager, and every path out stops it first.
  recommender_loop.start();
  (*leadership)->start([&manager, &recommender_loop] {
    manager.on_started_leading();
    recommender_loop.on_started_leading();
  });
  log::info(kMainLogger, "vscaler started",
            {{"version", VSCALER_VERSION},
             {"webhook_port", std::to_string(server.port())},
             {"namespace", options.namespace_.empty() ? "(all)" : options.namespace_},
             {"workers", std::to_string(options.workers)},
             {"leader_elect", options.leader_elect ? "true" : "false"}});

  const char* signal_name = wait_for_signal();
  log::info(kMainLogger, "shutting down", {{"signal", signal_name}});
  // Stop taking admission requests first (in-flight ones finish), then the controller.
  server.stop();
  // The recommender before the manager (it enqueues there); it checkpoints while still leading.
  recommender_loop.stop();
  manager.stop();
  // Leader work has stopped: give the Lease away so another replica leads at once.
  (*leadership)->stop();
  health.stop();
  metrics_server.stop();
  if (dashboard_server) dashboard_server->stop();
  board.stop();
  certs.stop();
  log::info(kMainLogger, "stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The binary allocates with jemalloc (cmd/jemalloc_conf.cpp), and these two calls do nothing
  // then. Built without it: glibc's malloc capped at two arenas (each thread's allocations
  // otherwise get arenas of their own whose free memory stays in RSS) and large blocks mapped
  // apart (see controller/memory_trim.h).
  // `vscaler report ...`, or `kubectl vscaler report ...` through the kubectl-vscaler link.
  if (argc >= 2 && std::string_view(argv[1]) == "report") {
    return cmd::run_report(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (std::string_view(argv[0]).ends_with("kubectl-vscaler")) {
    // `kubectl vscaler`, `kubectl vscaler --help`: the usage, asked for; anything else is wrong.
    const bool asked = argc < 2 || std::string_view(argv[1]) == "-h" ||
                       std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "help";
    if (!asked) {
      std::fprintf(stderr, "kubectl vscaler: unknown command \"%s\"; the command is report\n\n",
                   argv[1]);
    }
    std::fputs(cmd::kReportUsage, asked ? stdout : stderr);
    return asked ? 0 : 2;
  }
  vscaler::controller::limit_malloc_arenas(2);
  vscaler::controller::map_large_allocations(256 << 10);
  auto options = cmd::parse_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!options.ok()) {
    std::fprintf(stderr, "vscaler: %s\n", options.error().c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(cmd::kUsage, stdout);
    return 0;
  }
  if (options->version) {
    std::printf("vscaler %s\n", VSCALER_VERSION);
    return 0;
  }
  log::set_level(options->log_level);
  return run(*options);
}
