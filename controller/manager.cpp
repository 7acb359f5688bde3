#include "controller/manager.h"

#include <set>
#include <string_view>

#include "api/scaler.h"
#include "base/log.h"
#include "kube/object_meta.h"

namespace vscaler::controller {
namespace {
using nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr std::string_view kManagerLogger = "manager";
constexpr const char* kControllerName = "verticalscaler";

}  // namespace

/// The Prometheus side of the queue, reconciler and resync observers (controller-runtime names).
class Manager::Metrics : public QueueMetrics, public ReconcilerMetrics, public ResyncMetrics {
 public:
  explicit Metrics(metrics::Registry& registry)
      : depth_(
            registry.gauge("workqueue_depth", "Current depth of workqueue", {"controller", "name"})
                .with({kControllerName, kControllerName})),
        adds_(registry
                  .counter("workqueue_adds_total", "Total number of adds handled by workqueue",
                           {"controller", "name"})
                  .with({kControllerName, kControllerName})),
        retries_(registry
                     .counter("workqueue_retries_total",
                              "Total number of retries handled by workqueue",
                              {"controller", "name"})
                     .with({kControllerName, kControllerName})),
        queue_duration_(registry
                            .histogram("workqueue_queue_duration_seconds",
                                       "How long in seconds an item stays in workqueue before "
                                       "being requested",
                                       {"controller", "name"})
                            .with({kControllerName, kControllerName})),
        work_duration_(registry
                           .histogram("workqueue_work_duration_seconds",
                                      "How long in seconds processing an item from workqueue takes",
                                      {"controller", "name"})
                           .with({kControllerName, kControllerName})),
        reconcile_total_(registry.counter("controller_runtime_reconcile_total",
                                          "Total number of reconciliations per controller",
                                          {"controller", "result"})),
        reconcile_time_(registry
                            .histogram("controller_runtime_reconcile_time_seconds",
                                       "Length of time per reconciliation per controller",
                                       {"controller"})
                            .with({kControllerName})),
        resync_enqueued_(registry
                             .counter("vscaler_resync_enqueued_total",
                                      "Scaler keys the periodic resync enqueued")
                             .get()),
        resync_corrections_(registry
                                .counter("vscaler_resync_corrections_total",
                                         "Reconciles from the resync that found real drift (the "
                                         "fast path missed it)")
                                .get()),
        recommendation_applied_(registry
                                    .counter("vscaler_recommendation_applied_total",
                                             "Recommendations applied to a workload's template, "
                                             "by trigger (admission, bounds)",
                                             {"trigger"})
                                    .with({"bounds"})),
        pod_resizes_(registry.counter("vscaler_pod_resizes_total",
                                      "In-place pod resizes, by result (requested, completed, "
                                      "deferred, infeasible, error)",
                                      {"result"})),
        pod_evictions_(registry.counter("vscaler_pod_evictions_total",
                                        "Pods evicted because they could not be resized in "
                                        "place (InPlaceOrRecreate), by result (evicted, blocked)",
                                        {"result"})),
        startup_boosts_(startup_boost_counter(registry)) {
    for (const char* result : {"requested", "completed", "deferred", "infeasible", "error"}) {
      pod_resizes_.with({result});
    }
    for (const char* result : {"evicted", "blocked"}) pod_evictions_.with({result});
    // Pre-create the result series so dashboards see zeros rather than gaps.
    for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
      reconcile_total_.with({kControllerName, result});
    }
  }

  void on_add(Priority) override { adds_.inc(); }
  void on_depth(size_t depth) override { depth_.set(static_cast<double>(depth)); }
  void on_retry() override { retries_.inc(); }
  void on_queue_latency(double seconds) override { queue_duration_.observe(seconds); }
  void on_work_duration(double seconds) override { work_duration_.observe(seconds); }
  void on_resync_correction() override { resync_corrections_.inc(); }
  void on_recommendation_applied() override { recommendation_applied_.inc(); }
  void on_pod_resize(const char* result) override { pod_resizes_.with({result}).inc(); }
  void on_pod_eviction(const char* result) override { pod_evictions_.with({result}).inc(); }
  void on_startup_boost(const char* result) override { startup_boosts_.with({result}).inc(); }
  void on_enqueued(std::size_t keys) override { resync_enqueued_.inc(static_cast<double>(keys)); }

  void on_reconcile(const char* result, double seconds) {
    reconcile_total_.with({kControllerName, result}).inc();
    reconcile_time_.observe(seconds);
  }

 private:
  metrics::Gauge& depth_;
  metrics::Counter& adds_;
  metrics::Counter& retries_;
  metrics::Histogram& queue_duration_;
  metrics::Histogram& work_duration_;
  metrics::CounterFamily& reconcile_total_;
  metrics::Histogram& reconcile_time_;
  metrics::Counter& resync_enqueued_;
  metrics::Counter& resync_corrections_;
  metrics::Counter& recommendation_applied_;
  metrics::CounterFamily& pod_resizes_;
  metrics::CounterFamily& pod_evictions_;
  metrics::CounterFamily& startup_boosts_;
};

Manager::Manager(kube::Client client, ManagerOptions options, metrics::Registry& registry)
    : client_(client),
      options_(std::move(options)),
      metrics_(std::make_unique<Metrics>(registry)),
      leader_steps_(std::make_unique<LeaderSteps>(
          options_.leader_gate ? *options_.leader_gate : always_leader_, registry)),
      expectations_(options_.expectations),
      event_writer_(client),
      events_(event_writer_),
      reconcile_api_(client, &events_),
      resync_api_(client),
      opt_in_api_(client) {
  WorkQueueOptions queue_options;
  // The queue calls its observer; the manager owns it and outlives the queue.
  queue_options.metrics = std::shared_ptr<QueueMetrics>(metrics_.get(), [](QueueMetrics*) {});
  queue_ = std::make_unique<WorkQueue>(queue_options);
  hints_ = std::make_unique<QueueingHintSink>(
      expectations_, *queue_, &unclaimed_, &verified_,
      &registry
           .counter("vscaler_webhook_hints_dropped_total",
                    "Admission hints dropped because the review claimed a workload generation "
                    "more than 1,000 above the one last verified (a forged review)")
           .get());
  // Recommendation-driven patches are leader steps (DESIGN.md "High availability").
  if (!options_.reconciler.leader_step) {
    options_.reconciler.leader_step = [this] { return leader_steps_->begin("recommendation"); };
  }
  if (!options_.reconciler.still_leading) {
    options_.reconciler.still_leading = [this] { return leader_steps_->leading_now(); };
  }
  options_.reconciler.limit_ranges = &limit_ranges_;
  options_.reconciler.quotas = &quotas_;
  options_.reconciler.hpas = &hpas_;
  reconciler_ = std::make_unique<Reconciler>(reconcile_api_, store_, verified_, expectations_,
                                             *metrics_, options_.reconciler);
  hints_->set_on_boosted_pod([this](const std::string& key) { reconciler_->boost_admitted(key); });
  // Three namespace reads at once: each mostly waits on the API server.
  resyncer_ = std::make_unique<Resyncer>(resync_api_, store_, verified_, *queue_, *metrics_,
                                         /*concurrency=*/3);
  // Several replicas: a pod hook's hint may have reached a follower.
  resyncer_->set_visit_pod_scalers(options_.leader_gate != nullptr);
  // Namespaces are cluster-scoped: with --namespace vscaler lists none, so no opt-in.
  if (options_.ns.empty()) {
    opt_in_ = std::make_unique<NamespaceOptIn>(resync_api_, opt_in_api_, store_,
                                               options_.reconciler.still_leading);
  }

  kube::InformerOptions informer_options;
  informer_options.type = kube::resources::kVerticalScalers;
  informer_options.ns = options_.ns;
  informer_options.name = "verticalscalers";
  // Nothing here reads managedFields; kept, they were about half of each stored scaler's memory
  // (~12 of ~26 KB as parsed JSON with a status).
  informer_options.transform = [](json& object) {
    auto metadata = object.find("metadata");
    if (metadata != object.end() && metadata->is_object()) metadata->erase("managedFields");
  };
  // The store (ScalerStore) holds each scaler parsed; the informer keeps only what its
  // handlers read back (the old side of an update: key and generation) and the resourceVersion,
  // not a second copy of every scaler (as JSON, several KB each with its status).
  informer_options.keep_metadata = true;
  kube::InformerHandlers handlers;
  handlers.on_add = [this](const json& object) { on_scaler_event(nullptr, &object); };
  handlers.on_update = [this](const json& old_object, const json& new_object) {
    on_scaler_event(&old_object, &new_object);
  };
  handlers.on_delete = [this](const json& last_known) { on_scaler_event(&last_known, nullptr); };
  informer_ = std::make_unique<kube::Informer>(client_, informer_options, std::move(handlers));

  // A changed LimitRange changes the capped plan of every scaler in its namespace: reconcile
  // them (the resync compares metadata only and would not notice).
  auto reconcile_namespaces = [this](const std::vector<std::string>& namespaces) {
    std::set<std::string_view> changed(namespaces.begin(), namespaces.end());
    for (const auto& scaler : store_.snapshot()) {
      if (changed.count(scaler->ns) != 0) queue_->add(scaler->key());
    }
  };
  limit_range_poller_ = std::make_unique<ListPoller>(
      client_, kube::resources::kLimitRanges, "LimitRanges", options_.ns,
      options_.limit_range_period,
      [this](const auto& objects, std::vector<std::string>* changed) {
        return limit_ranges_.rebuild(objects, changed);
      },
      reconcile_namespaces);
  // Only the pod admission hook reads the headroom: nothing to reconcile when it changes.
  quota_poller_ = std::make_unique<ListPoller>(
      client_, kube::resources::kResourceQuotas, "ResourceQuotas", options_.ns,
      options_.limit_range_period, [this](const auto& objects, std::vector<std::string>* changed) {
        return quotas_.rebuild(objects, changed);
      });
  hpa_poller_ = std::make_unique<ListPoller>(
      client_, kube::resources::kHorizontalPodAutoscalers, "HorizontalPodAutoscalers", options_.ns,
      options_.limit_range_period,
      [this](const auto& objects, std::vector<std::string>* changed) {
        return hpas_.rebuild(objects, changed);
      },
      reconcile_namespaces);
}

Manager::~Manager() {
  stop();
}

void Manager::start() {
  if (started_.exchange(true)) return;
  informer_->start();
  limit_range_poller_->start();
  quota_poller_->start();
  hpa_poller_->start();
  events_.start();
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
  trimmer_.start([this] { return queue_->len() == 0; });
  resync_thread_ = std::thread([this] {
    // The first pass waits for the informer: an unsynced store would judge nothing.
    while (!informer_->wait_for_sync(std::chrono::milliseconds(500))) {
      if (stopped_.load()) return;
    }
    // Every replica keeps its informer and reconciles hints; only the leader resyncs.
    // The namespace opt-in rides on the same leader pass: its scalers then reach the store
    // through the informer, and the pass after judges them.
    resyncer_->run(
        options_.resync_period, [this] { return leader_steps_->begin("resync"); },
        [this] {
          if (opt_in_) (void)opt_in_->run_once();
        });
  });
}

void Manager::stop() {
  if (!started_.load() || stopped_.exchange(true)) return;
  informer_->stop();
  limit_range_poller_->stop();
  quota_poller_->stop();
  hpa_poller_->stop();
  resyncer_->stop();
  if (resync_thread_.joinable()) resync_thread_.join();
  // Intake stops; in-flight reconciles finish; waiting keys are dropped (they are level-based:
  // the next start relists and reconciles everything anyway).
  queue_->shutdown();
  for (auto& worker : workers_) worker.join();
  workers_.clear();
  trimmer_.stop();
  events_.stop();
}

void Manager::enqueue_target(const std::string& ns, const api::TargetRef& target) {
  store_.index().lookup(ns, target.kind, target.name,
                        [this](std::string_view key) { queue_->add(key); });
}

void Manager::on_scaler_event(const json* old_object, const json* new_object) {
  if (new_object == nullptr) {
    // Deleted: forget it; the scalers left on its workload may become active.
    std::string key = kube::object_key(*old_object);
    store_.clear_invalid(key);
    auto removed = store_.remove(key);
    queue_->add(key);  // the worker forgets its in-memory state
    if (removed) enqueue_target(removed->ns, removed->target);
    return;
  }
  auto parsed = api::parse_scaler(*new_object);
  if (!parsed.ok()) {
    // Admitted by an older CRD or while the validating webhook was down: report, touch nothing.
    // Its status says why (Ready=False, InvalidSpec), written by a worker.
    std::string key = kube::object_key(*new_object);
    log::warn(kManagerLogger, "ignoring an invalid VerticalScaler",
              {{"scaler", key}, {"error", parsed.error()}});
    InvalidScaler invalid;
    invalid.ns = kube::meta_string(*new_object, "namespace");
    invalid.name = kube::meta_string(*new_object, "name");
    invalid.generation = kube::meta_generation(*new_object);
    invalid.resource_version = kube::meta_string(*new_object, "resourceVersion");
    if (new_object->contains("status")) invalid.status = (*new_object)["status"];
    invalid.error = parsed.error();
    store_.mark_invalid(key, std::move(invalid));
    auto removed = store_.remove(key);
    if (removed) enqueue_target(removed->ns, removed->target);
    queue_->add(key);
    return;
  }
  store_.clear_invalid(kube::object_key(*new_object));
  auto scaler = std::make_shared<const api::Scaler>(std::move(parsed).value());
  std::string key = scaler->key();
  auto previous = store_.upsert(scaler);
  // A scaler deleted and created again under its name while the watch was down comes back from
  // the relist as an update, often at the same generation (1): its uid tells it apart.
  bool spec_changed = old_object == nullptr || previous == nullptr ||
                      kube::meta_generation(*old_object) != scaler->generation ||
                      previous->uid != scaler->uid;
  if (!spec_changed) {
    // A new recommendation (a status write of the recommender, this process's or another
    // leader's) may be due: reconcile the scaler, unless in Off only its bounds moved, which the
    // reconciler does not read (the recommender's own hint follows the same rule). Other
    // status-only (or metadata-only) updates, like the reconciler's own, change nothing.
    if (previous->stored_recommendation != scaler->stored_recommendation &&
        (api::reconciler_reads_bounds(scaler->update_mode) ||
         api::recommendation_targets(previous->recommendation()) !=
             api::recommendation_targets(scaler->recommendation()))) {
      queue_->add(key);
    }
    return;
  }
  // The scaler and everything on its workload (a new or changed scaler can win or lose the
  // one-scaler-per-workload election); with a new target (another name or kind), the old
  // workload's too.
  enqueue_target(scaler->ns, scaler->target);
  if (options_.on_scaler_spec) options_.on_scaler_spec(key);
  // Its workload's CREATE was admitted before this scaler reached the index: the workload must
  // exist, so the reconciler re-checks until it is stored instead of reading "not found".
  if (unclaimed_.take(
          UnclaimedCreates::key(scaler->ns, scaler->target.kind, scaler->target.name))) {
    Expectation created;
    created.must_exist = true;
    hints_->hint(key, created);
  }
  queue_->add(key);
  if (previous && previous->target != scaler->target) {
    enqueue_target(previous->ns, previous->target);
  }
}

void Manager::work() {
  while (auto item = queue_->get()) {
    auto start = Clock::now();
    ReconcileOutcome outcome;
    try {
      outcome = reconciler_->reconcile(*item);
    } catch (const std::exception& error) {
      // A bug, not an API failure; keep the worker alive and retry with backoff.
      outcome.kind = ReconcileOutcome::Kind::kRetry;
      outcome.error = std::string("unexpected exception: ") + error.what();
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    switch (outcome.kind) {
      case ReconcileOutcome::Kind::kDone:
        queue_->forget(item->key);
        // A deferred recommendation: back when the deferral lifts.
        if (outcome.requeue_after.count() > 0) {
          queue_->add_after(item->key, outcome.requeue_after, item->priority);
        }
        metrics_->on_reconcile("success", seconds);
        break;
      case ReconcileOutcome::Kind::kRecheck:
        // Not a failure: look again shortly (the expectation stays where it is).
        queue_->forget(item->key);
        queue_->add_after(item->key, outcome.delay, item->priority);
        metrics_->on_reconcile("requeue_after", seconds);
        break;
      case ReconcileOutcome::Kind::kRetry:
        log::warn(kManagerLogger, "reconcile failed; retrying with backoff",
                  {{"scaler", item->key}, {"error", outcome.error}});
        queue_->add_rate_limited(item->key, item->priority, outcome.delay);
        metrics_->on_reconcile("error", seconds);
        break;
    }
    queue_->done(item->key);
    // What the burst allocated is garbage once the queue runs dry: the trimmer's own thread
    // gives it back to the OS (malloc_trim takes arena locks; never on a worker).
    trimmer_.note_work();
  }
}

}  // namespace vscaler::controller
