// admission_server: vscaler's admission server and its real Deployment hook, without the rest of
// the operator — what bench/sections/webhook.sh measures against nginx and controller-runtime.
//
// Wired as cmd/main.cpp wires them (AdmissionServer with its default options, CertWatcher polling
// the directory, DeploymentHandler with its projection on /mutate-deployments), in front of a
// ScalerStore holding 1,000 scalers plus one for the Deployment record/big of
// test/data/admission/deployment-update-20k.json, so its lookups hit. That scaler is in Auto mode
// (--mode) and declares other resources than the review's object carries: every review gets the
// full treatment, index lookup, hint enqueued, resources merged, a JSONPatch and warnings. The
// work queue is not drained: a waiting key is deduplicated and its expectations merge, as in an
// operator whose workers are busy.
//
// Usage: admission_server --cert-dir DIR [--port 0] [--port-file FILE] [--mode Auto|Reconcile|Off]
// Serves on 127.0.0.1 until SIGTERM or SIGINT; writes the bound port to FILE once serving; on
// exit prints the number of hints enqueued on stderr.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "api/scaler.h"
#include "base/log.h"
#include "controller/expectations.h"
#include "controller/scaler_store.h"
#include "controller/work_queue.h"
#include "metrics/registry.h"
#include "net/cert_watcher.h"
#include "webhook/deployment_handler.h"
#include "webhook/server.h"

namespace {

using namespace vscaler;

std::shared_ptr<const api::Scaler> make_scaler(const std::string& ns, const std::string& name,
                                               const std::string& deployment,
                                               const std::string& mode) {
  nlohmann::json object = {
      {"apiVersion", "scaling.vscaler.dev/v1beta1"},
      {"kind", "VerticalScaler"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"uid", "00000000-0000-0000-0000-" + std::to_string(1000000000000 + name.size())},
        {"resourceVersion", "1"},
        {"generation", 1},
        {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
      {"spec",
       {{"deploymentName", deployment},
        {"updateMode", mode},
        {"containers",
         {{{"name", "app"},
           {"requests", {{"cpu", "250m"}, {"memory", "128Mi"}}},
           {"limits", {{"cpu", "1"}, {"memory", "256Mi"}}}}}}}}};
  auto scaler = api::parse_scaler(object);
  if (!scaler.ok()) {
    std::cerr << "admission_server: " << scaler.error() << "\n";
    std::exit(1);
  }
  return std::make_shared<const api::Scaler>(std::move(*scaler));
}

// What the operator's queue metrics do on the hot path: count adds, track the depth.
class QueueMetrics : public controller::QueueMetrics {
 public:
  explicit QueueMetrics(metrics::Registry& registry)
      : adds_(registry.counter("workqueue_adds_total", "Adds handled by the work queue").get()),
        depth_(registry.gauge("workqueue_depth", "Current depth of the work queue").get()) {}
  void on_add(controller::Priority /*priority*/) override { adds_.inc(); }
  void on_depth(size_t depth) override { depth_.set(static_cast<double>(depth)); }

 private:
  metrics::Counter& adds_;
  metrics::Gauge& depth_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string cert_dir;
  std::string port_file;
  std::string mode = "Auto";
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--cert-dir") {
      cert_dir = value;
    } else if (flag == "--port") {
      port = std::stoi(value);
    } else if (flag == "--port-file") {
      port_file = value;
    } else if (flag == "--mode") {
      mode = value;
    } else {
      cert_dir.clear();
      break;
    }
  }
  if (cert_dir.empty() || argc % 2 == 0) {
    std::cerr << "usage: admission_server --cert-dir DIR [--port 0] [--port-file FILE] "
                 "[--mode Auto|Reconcile|Off]\n";
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  log::set_level("info");  // as the operator; nothing is logged per request

  auto& registry = metrics::default_registry();
  controller::ScalerStore store;
  for (int i = 0; i < 1000; ++i) {
    store.upsert(make_scaler("ns-" + std::to_string(i % 100), "scaler-" + std::to_string(i),
                             "deployment-" + std::to_string(i), "Auto"));
  }
  store.upsert(make_scaler("record", "big", "big", mode));
  controller::WorkQueueOptions queue_options;
  queue_options.metrics = std::make_shared<QueueMetrics>(registry);
  controller::WorkQueue queue(queue_options);
  auto& enqueued =
      registry.counter("vscaler_webhook_enqueued_total", "Scaler keys the admission hook enqueued")
          .get();
  controller::Expectations expectations;
  controller::QueueingHintSink hints(expectations, queue);
  webhook::DeploymentHandler deployments(store, hints, enqueued);

  net::CertWatcherOptions cert_options;
  cert_options.cert_dir = cert_dir;
  net::CertWatcher certs(cert_options);
  certs.start();
  if (!certs.loaded()) {
    std::cerr << "admission_server: no certificate could be loaded from " << cert_dir << "\n";
    return 1;
  }
  webhook::AdmissionServerOptions server_options;
  server_options.host = "127.0.0.1";
  server_options.port = port;
  server_options.registry = &registry;
  webhook::AdmissionServer server(certs, server_options);
  webhook::HandlerOptions deployment_options;
  deployment_options.projection = webhook::DeploymentHandler::projection();
  deployment_options.quick = true;  // in memory only: served on the event loop
  server.handle(
      "/mutate-deployments",
      [&deployments](const webhook::AdmissionRequest& request) {
        return deployments.handle(request);
      },
      deployment_options);
  if (auto started = server.start(); !started.ok()) {
    std::cerr << "admission_server: " << started.error() << "\n";
    return 1;
  }
  if (!port_file.empty()) {
    std::ofstream(port_file + ".tmp") << server.port() << "\n";
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }
  int received = 0;
  sigwait(&signals, &received);
  server.stop();
  certs.stop();
  std::cerr << "admission_server: stopped; " << enqueued.value() << " hints enqueued\n";
  return 0;
}
