// admission_server: vscaler's admission server and its real Deployment hook, without the rest of
// the operator — what bench/sections/webhook.sh measures against nginx and controller-runtime.
//
// Wired as cmd/main.cpp wires them (its allocator, AdmissionServer with its default options,
// CertWatcher polling the directory, DeploymentHandler with its projection on /mutate-deployments),
// in front of a ScalerStore holding 1,000 scalers plus one for the Deployment record/big of
// test/data/admission/deployment-update-20k.json, so its lookups hit. That scaler is in Auto mode
// (--mode) and declares other resources than the review's object carries: every review gets the
// full treatment, index lookup, hint enqueued, resources merged, a JSONPatch and warnings. The
// work queue is not drained: a waiting key is deduplicated and its expectations merge, as in an
// operator whose workers are busy.
//
// Usage: admission_server --cert-dir DIR [--port 0] [--port-file FILE] [--mode Auto|Reconcile|Off]
//                         [--recommended true] [--event-loops N] [--answer fixed|allow]
//        admission_server --cost REVIEW [--mode ...] [--recommended true]
// --recommended true: the scaler declares no values, and its status carries a recommendation for
// both containers (what most scalers are); by default it declares fixed values for one.
// --event-loops: the server's event loop threads (default: AdmissionServerOptions' choice), for
// profiling. --answer fixed: the same front end (event loops, TLS, HTTP/1.1, the body read in
// full) answering every request with the nginx peer's fixed body, the review neither parsed nor
// handled: the rows "front end alone" that split the gap to nginx between the network layer and
// the review's own work. --answer allow: the whole AdmissionServer path (the review parsed and
// validated whole by simdjson, its uid echoed in an encoded answer) with a handler that allows
// everything and a projection keeping only the object's name: the rows "review parsed, no
// handler work", the least any hook pays for a review, which split the review's own work
// between the parse that DESIGN's 400 for malformed JSON requires and what the Deployment hook
// does after it. Serves on 127.0.0.1 until SIGTERM or SIGINT; writes the bound port to FILE
// once serving; on exit prints the number of hints enqueued on stderr. With --cost it serves
// nothing: it times what the server does with one review between reading it and writing its answer
// (parse with the projection, the handler, the answer's encoding), on one thread without TLS or
// sockets, and prints the median microseconds of each over 7 rounds: the CPU cost a change of the
// codec or the handler moves, without the noise of two processes sharing two cores.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "api/scaler.h"
#include "base/log.h"
#include "bench/per_call.h"
#include "controller/expectations.h"
#include "controller/memory_trim.h"
#include "controller/scaler_store.h"
#include "controller/work_queue.h"
#include "metrics/registry.h"
#include "net/cert_watcher.h"
#include "net/front_end.h"
#include "net/tls.h"
#include "webhook/deployment_handler.h"
#include "webhook/server.h"

namespace {

using namespace vscaler;

std::shared_ptr<const api::Scaler> make_scaler(const std::string& ns, const std::string& name,
                                               const std::string& deployment,
                                               const std::string& mode, bool recommended = false) {
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
  if (recommended) {
    // Every container recommended, with the recommendation a pass published: what most scalers
    // are (`spec: {deploymentName: web}`).
    object["spec"].erase("containers");
    nlohmann::json bounds = {{"cpu", "250m"}, {"memory", "128Mi"}};
    nlohmann::json list = nlohmann::json::array();
    for (const char* container : {"app", "sidecar"}) {
      list.push_back({{"containerName", container},
                      {"target", bounds},
                      {"lowerBound", {{"cpu", "120m"}, {"memory", "100Mi"}}},
                      {"upperBound", {{"cpu", "900m"}, {"memory", "400Mi"}}},
                      {"uncappedTarget", bounds}});
    }
    object["status"] = {{"recommendation", {{"containerRecommendations", list}}}};
  }
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

// --cost: the review's parse, handler and encoding timed apart and together (see the header).
int print_cost(const std::string& review_file, webhook::DeploymentHandler& deployments) {
  std::ifstream file(review_file, std::ios::binary);
  std::string body{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (!file || body.empty()) {
    std::cerr << "admission_server: cannot read " << review_file << "\n";
    return 1;
  }
  webhook::ParseOptions options;
  options.projection = &webhook::DeploymentHandler::projection();
  body.reserve(body.size() + webhook::kParsePadding);  // read in place, as the server does
  options.readable_padding = body.capacity() - body.size();
  auto parsed = webhook::parse_review(body, options);
  if (!parsed.ok()) {
    std::cerr << "admission_server: " << review_file << ": " << parsed.error() << "\n";
    return 1;
  }
  const webhook::AdmissionRequest& request = *parsed;
  webhook::AdmissionResponse response = deployments.handle(request);
  constexpr int kCalls = 5000;
  double parse_us = bench::per_call_us(kCalls, [&] {
    if (!webhook::parse_review(body, options).ok()) std::abort();
  });
  double handle_us = bench::per_call_us(kCalls, [&] {
    if (!deployments.handle(request).allowed) std::abort();  // no patch in Off or Reconcile
  });
  double encode_us = bench::per_call_us(kCalls, [&] {
    if (webhook::encode_review(request.uid, response).empty()) std::abort();
  });
  double total_us = bench::per_call_us(kCalls, [&] {
    auto review = webhook::parse_review(body, options);
    if (!review.ok()) std::abort();
    if (webhook::encode_review(review->uid, deployments.handle(*review)).empty()) std::abort();
  });
  std::printf(
      "admission_server cost parse_us=%.2f handle_us=%.2f encode_us=%.2f total_us=%.2f "
      "review_bytes=%zu\n",
      parse_us, handle_us, encode_us, total_us, body.size());
  return 0;
}

// Writes `port` to `file` (nothing when empty), atomically: a reader sees all of it or nothing.
void write_port(const std::string& file, int port) {
  if (file.empty()) return;
  std::ofstream(file + ".tmp") << port << "\n";
  std::rename((file + ".tmp").c_str(), file.c_str());
}

// --answer fixed: the admission server's front end, as AdmissionServer sets it up, answering
// every request on its event loop with the nginx peer's fixed body; serves until a signal.
int serve_fixed_answer(net::CertWatcher& certs, const webhook::AdmissionServerOptions& options,
                       const std::string& port_file, const sigset_t& signals) {
  auto ctx = net::tls::make_server_context(certs, options.http2);
  if (!ctx) {
    std::cerr << "admission_server: " << ctx.error() << "\n";
    return 1;
  }
  const std::string answer =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":)"
      R"({"uid":"00000000-0000-0000-0000-000000000000","allowed":true}})";
  net::FrontEnd front_end(
      ctx->get(), webhook::front_end_options(options),
      [&answer](net::Request&) {
        return net::http::Response{200, "application/json", answer, {}, false, nullptr};
      },
      [](const net::http::RequestHead&, int, net::Clock::time_point) {},
      [](const net::Request&) { return true; });
  auto port = front_end.start();
  if (!port) {
    std::cerr << "admission_server: " << port.error() << "\n";
    return 1;
  }
  write_port(port_file, *port);
  int received = 0;
  sigwait(&signals, &received);
  front_end.stop(std::chrono::seconds(5));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cert_dir;
  std::string port_file;
  std::string mode = "Auto";
  std::string cost_review;
  bool unknown_flag = false;
  int port = 0;
  std::size_t event_loops = 0;
  bool recommended = false;
  std::string answer = "handled";
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
    } else if (flag == "--cost") {
      cost_review = value;
    } else if (flag == "--recommended") {
      recommended = value == "true";
    } else if (flag == "--event-loops") {
      event_loops = std::stoul(value);
    } else if (flag == "--answer" && (value == "fixed" || value == "allow")) {
      answer = value;
    } else {
      unknown_flag = true;
      break;
    }
  }
  if (unknown_flag || (cert_dir.empty() && cost_review.empty()) || argc % 2 == 0) {
    std::cerr << "usage: admission_server --cert-dir DIR [--port 0] [--port-file FILE] "
                 "[--mode Auto|Reconcile|Off] [--recommended true] [--event-loops N] "
                 "[--answer fixed|allow]\n"
                 "       admission_server --cost REVIEW [--mode Auto|Reconcile|Off] "
                 "[--recommended true]\n";
    return 2;
  }
  // The allocator as cmd/main.cpp sets it up (jemalloc when linked, else glibc's malloc capped).
  controller::limit_malloc_arenas(2);
  controller::map_large_allocations(256 << 10);
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
  store.upsert(make_scaler("record", "big", "big", mode, recommended));
  controller::WorkQueueOptions queue_options;
  queue_options.metrics = std::make_shared<QueueMetrics>(registry);
  controller::WorkQueue queue(queue_options);
  auto& enqueued =
      registry.counter("vscaler_webhook_enqueued_total", "Scaler keys the admission hook enqueued")
          .get();
  controller::Expectations expectations;
  controller::QueueingHintSink hints(expectations, queue);
  webhook::DeploymentHandler deployments(store, hints, enqueued);
  if (!cost_review.empty()) return print_cost(cost_review, deployments);

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
  server_options.event_loops = event_loops;
  server_options.registry = &registry;
  if (answer == "fixed") return serve_fixed_answer(certs, server_options, port_file, signals);
  webhook::AdmissionServer server(certs, server_options);
  webhook::HandlerOptions deployment_options;
  deployment_options.quick = true;  // in memory only: served on the event loop
  // --answer allow: every review allowed, only the object's name projected (see the header).
  const bool allow_all = answer == "allow";
  deployment_options.projection = allow_all ? *webhook::Projection::parse({"/metadata/name"})
                                            : webhook::DeploymentHandler::projection();
  server.handle(
      "/mutate-deployments",
      [&deployments, allow_all](const webhook::AdmissionRequest& request) {
        return allow_all ? webhook::AdmissionResponse::allow() : deployments.handle(request);
      },
      deployment_options);
  if (auto started = server.start(); !started.ok()) {
    std::cerr << "admission_server: " << started.error() << "\n";
    return 1;
  }
  write_port(port_file, server.port());
  int received = 0;
  sigwait(&signals, &received);
  server.stop();
  certs.stop();
  std::cerr << "admission_server: stopped; " << enqueued.value() << " hints enqueued\n";
  return 0;
}
