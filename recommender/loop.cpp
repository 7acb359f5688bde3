// The recommender loop: passes, publishing, checkpoints, gauges.
#include "recommender/loop.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "base/log.h"
#include "base/time.h"
#include "recommender/cluster_caps.h"
#include "recommender/limit_range.h"

namespace vscaler::recommender {
namespace {

using nlohmann::json;
constexpr std::string_view kLoopLogger = "recommender";
/// Scalers in one namespace from which a pass lists the namespace once instead of per scaler.
constexpr std::size_t kSharedNamespaceScalers = 3;
// Checkpoint writes are spread over --checkpoint-interval in this many ticks.
constexpr unsigned kCheckpointSlices = 10;

ResourceMap to_resource_map(const api::ResourceMap& map) {
  return ResourceMap(map.begin(), map.end());
}

bool any_recommended(const api::Scaler& scaler) {
  if (scaler.containers.empty()) return true;
  return std::any_of(scaler.containers.begin(), scaler.containers.end(),
                     [](const api::ContainerResources& e) { return !e.off && !e.fixed(); });
}

// What the pass saw, in words that stay the same while nothing changes (the message is part of
// the condition: a count that moved every pass would make every pass a status write).
std::string describe(const ScalerInputs& inputs, const PassStats& stats, ProvidedReason reason,
                     const TargetWorkload& target) {
  const std::string pods = std::to_string(stats.pods) + (stats.pods == 1 ? " pod" : " pods");
  switch (reason) {
    case ProvidedReason::kNoPodsMatched:
      return "no pod of " + target.kind + "/" + target.name + " (" +
             std::to_string(inputs.pods_listed) + " matched its selector)";
    case ProvidedReason::kNoMetrics:
      if (inputs.metrics_error)
        return pods + ", metrics API unavailable: " + inputs.metrics_error->message;
      if (stats.running == 0) return pods + ", none running";
      return pods + ", none with metrics";
    default:
      break;
  }
  std::string seen = pods + ", " + std::to_string(stats.pods_with_metrics) + " with metrics, " +
                     std::to_string(stats.samples_added + stats.samples_stale) +
                     " container samples";
  if (reason == ProvidedReason::kInsufficientHistory) {
    seen += "; waiting for a pass with samples from every running pod";
  }
  return seen;
}

// The RecommendationProvided reason stored in `status` ("" when none).
std::string stored_reason(const json& status) {
  auto conditions = status.is_object() ? status.find("conditions") : status.end();
  if (!status.is_object() || conditions == status.end() || !conditions->is_array()) return "";
  for (const auto& condition : *conditions) {
    if (condition.is_object() && condition.value("type", "") == kRecommendationProvided) {
      return condition.value("reason", "");
    }
  }
  return "";
}

// Whether the reconciler acts on this publication: any change in every mode but Off; in Off a new
// reason or new targets only (api::reconciler_reads_bounds). At 10,000 scalers in Off a reconcile
// (a GET of the workload) per scaler per pass was 10,000 reads a pass for nothing.
bool reconciler_reads(const api::Scaler& scaler, const json& stored_status,
                      const Publication& publication) {
  if (api::reconciler_reads_bounds(scaler.update_mode)) return true;
  if (stored_reason(stored_status) != to_string(publication.reason)) return true;
  if (!publication.recommendation) return false;  // the stored one is kept
  return api::recommendation_targets(scaler.recommendation()) !=
         api::recommendation_targets(*publication.recommendation);
}

}  // namespace

TargetWorkload target_of(const api::Scaler& scaler) {
  return {scaler.ns, scaler.target.kind, scaler.target.name};
}

bool is_recommended(const api::Scaler& scaler, std::string_view container) {
  if (scaler.containers.empty()) return true;
  const api::ContainerResources* entry = scaler.entry_for(container);
  return entry != nullptr && !entry->off && !entry->fixed();
}

RecommenderLoop::RecommenderLoop(RecommenderApi& api, LoopHooks hooks, LoopOptions options,
                                 metrics::Registry& registry)
    : api_(api),
      hooks_(std::move(hooks)),
      options_(std::move(options)),
      pass_seconds_(registry.histogram("vscaler_recommender_pass_seconds",
                                       "Wall time of one recommender pass over every scaler", {},
                                       metrics::exponential_buckets(0.005, 2, 14))),
      samples_total_(registry.counter("vscaler_recommender_samples_total",
                                      "Container usage samples folded into the histories")),
      recommendation_(registry.custom<RecommendationGauges>()),
      fenced_writes_(registry
                         .counter("vscaler_leader_writes_fenced_total",
                                  "Status and checkpoint writes dropped because this replica "
                                  "stopped leading in the middle of a pass")
                         .get()),
      write_rate_(options_.write_qps, options_.write_burst) {
  if (options_.status_writers > 0) {
    writers_ = std::make_unique<base::CoalescingPool>(options_.status_writers);
  }
}

RecommenderLoop::~RecommenderLoop() {
  stop();
}

void RecommenderLoop::start() {
  if (options_.interval.count() <= 0) return;
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopped_) return;
  thread_ = std::thread([this] { run(); });
}

void RecommenderLoop::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  stop_requested_.store(true);
  wake_.notify_all();
  const bool started = thread_.joinable();
  if (started) thread_.join();  // a pass under way ended early
  // Status writes still waiting are dropped (the running ones finish): the next leader computes
  // them again in its first pass, and the shutdown budget is the checkpoints'. Without the
  // thread too: run_pass may have left writes waiting.
  if (writers_) writers_->stop();
  if (!started) return;
  // Best effort, and only while still leading (the fencing check of every leader step): a
  // replica that lost the Lease has nothing it may write.
  if (was_leading_) save_checkpoints_at_shutdown();
}

void RecommenderLoop::save_checkpoints_at_shutdown() {
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + options_.shutdown_checkpoint_budget;
  auto past_deadline = [deadline] { return std::chrono::steady_clock::now() >= deadline; };
  CheckpointRound total;
  for (unsigned i = 0; i < kCheckpointSlices; ++i) {
    auto round = save_checkpoints_until((next_checkpoint_slice_ + i) % kCheckpointSlices,
                                        kCheckpointSlices, past_deadline);
    total.written += round.written;
    total.left += round.left;
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  if (total.left == 0) {
    log::info(kLoopLogger, "checkpoints written before stopping",
              {{"written", std::to_string(total.written)}, {"ms", std::to_string(took.count())}});
    return;
  }
  log::warn(kLoopLogger,
            "not every changed checkpoint written before stopping: those scalers resume from "
            "their last checkpoint, at most --checkpoint-interval old",
            {{"written", std::to_string(total.written)},
             {"left", std::to_string(total.left)},
             {"budget_ms", std::to_string(options_.shutdown_checkpoint_budget.count())}});
}

void RecommenderLoop::on_started_leading() {
  {
    std::lock_guard lock(mutex_);
    reload_ = true;
    woken_ = true;
  }
  wake_.notify_all();
}

void RecommenderLoop::on_scaler_appeared() {
  {
    std::lock_guard lock(mutex_);
    appeared_ = true;
  }
  wake_.notify_all();
}

void RecommenderLoop::run() {
  using clock = std::chrono::steady_clock;
  auto next_pass = clock::now();
  // One slice of the scalers per tick, each scaler once per --checkpoint-interval: writes spread
  // over the interval (VPA writes them all at once, and fails at ~3,800, VPA #6368).
  const auto checkpoint_tick = std::max<std::chrono::milliseconds>(
      options_.checkpoint_interval / kCheckpointSlices, std::chrono::milliseconds(1));
  auto next_checkpoint = next_pass + checkpoint_tick;
  while (true) {
    bool woken = false;
    bool appeared = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, std::min(next_pass, next_checkpoint),
                       [this] { return stopping_ || woken_ || appeared_; });
      if (stopping_) return;
      woken = woken_;
      woken_ = false;
      appeared = appeared_;
      appeared_ = false;
    }
    auto now = clock::now();
    const bool synced = !hooks_.synced || hooks_.synced();
    if (woken || now >= next_pass) {
      if (!synced) {
        next_pass =
            now + std::min<std::chrono::milliseconds>(options_.interval, std::chrono::seconds(1));
      } else {
        run_pass(std::chrono::system_clock::now(), PassScope::kAll, PassWrites::kLeaveWaiting);
        next_pass = clock::now() + options_.interval;
      }
    } else if (appeared && synced) {
      // A scaler appeared (or its spec changed) between two passes: its first recommendation
      // need not wait for the next tick (VPA's comes within one of its 1m loops too). Scalers
      // appearing together are taken together; the full pass keeps its own schedule.
      run_pass(std::chrono::system_clock::now(), PassScope::kNewScalers, PassWrites::kLeaveWaiting);
    }
    if (now >= next_checkpoint) {
      // Cut short by stop(), which goes on from this slice within its budget.
      auto round = save_checkpoints_until(next_checkpoint_slice_, kCheckpointSlices,
                                          [this] { return stop_requested_.load(); });
      if (round.left > 0) return;
      next_checkpoint_slice_ = (next_checkpoint_slice_ + 1) % kCheckpointSlices;
      next_checkpoint = clock::now() + checkpoint_tick;
    }
  }
}

void RecommenderLoop::forget_all() {
  for (auto& [uid, tracked] : tracked_) {
    remove_gauges(tracked);
    // Versions are learnt again with the checkpoints when histories are restored; kept, those of
    // scalers deleted meanwhile would stay for good.
    api_.forget_checkpoint(id_of(uid, tracked));
  }
  tracked_.clear();
  // Publications of the histories just dropped: fenced when their turn came anyway
  // (still_leading), or outdated by the pass that restores the histories from the checkpoints.
  if (writers_) writers_->drop_waiting();
}

PassSummary RecommenderLoop::run_pass(std::chrono::system_clock::time_point now, PassScope scope,
                                      PassWrites writes) {
  const auto started = std::chrono::steady_clock::now();
  const bool only_new = scope == PassScope::kNewScalers;
  bool reload = false;
  {
    std::lock_guard lock(mutex_);
    if (!only_new) {
      reload = reload_;
      reload_ = false;
    }
  }
  PassSummary summary;
  fenced_logged_.store(false);
  const bool leading = !hooks_.begin_step || hooks_.begin_step("recommender");
  if (!leading) {
    if (was_leading_) {
      // The next leader resumes from the checkpoints; histories kept here would be stale when
      // this replica leads again.
      log::info(kLoopLogger, "not leading: in-memory histories dropped",
                {{"scalers", std::to_string(tracked_.size())}});
      forget_all();
      was_leading_ = false;
    }
    return summary;
  }
  if (!was_leading_ || reload) forget_all();  // restore everything from the checkpoints first
  was_leading_ = true;
  summary.ran = true;
  if (!only_new) ++full_passes_;
  history_failure_.clear();
  history_spent_ = {};
  const std::string now_text = base::rfc3339(now);

  auto scalers =
      hooks_.scalers ? hooks_.scalers() : std::vector<std::shared_ptr<const api::Scaler>>{};
  std::set<std::string> present;
  std::set<std::string> passed;
  std::map<std::tuple<std::string, std::string, std::string>,
           std::vector<std::shared_ptr<const api::Scaler>>>
      by_target;
  for (auto& scaler : scalers) {
    if (!scaler) continue;
    present.insert(scaler->uid);
    TargetWorkload target = target_of(*scaler);
    by_target[{target.namespace_, target.kind, target.name}].push_back(scaler);
  }
  // Shared: a status write may outlast the pass (write_status).
  std::vector<std::shared_ptr<const api::Scaler>> actives;
  std::map<std::string, std::size_t> per_namespace;
  for (const auto& [target, group] : by_target) {
    const api::Scaler* selected = api::select_active(group);
    if (selected == nullptr || !any_recommended(*selected)) continue;
    if (only_new && tracked_.count(selected->uid)) continue;
    const auto& active = *std::find_if(group.begin(), group.end(),
                                       [selected](const auto& s) { return s.get() == selected; });
    actives.push_back(active);
    ++per_namespace[active->ns];
  }
  // Where a namespace holds several scalers, listing its pods, ReplicaSets, PodMetrics and
  // LimitRanges once costs less than four lists per scaler; with one or two, the lists by
  // selector read less of a namespace that may hold many other pods.
  std::set<std::string> shared;
  for (const auto& [ns, count] : per_namespace) {
    if (count >= kSharedNamespaceScalers) shared.insert(ns);
  }
  if (only_new && actives.empty()) return summary;
  api_.begin_pass(shared);
  // The nodes are listed by the interval's pass; a pass over new scalers (they may come in a burst
  // of hundreds, each wake a pass) reuses its caps, unless none were computed yet.
  if (!actives.empty() && (!only_new || !caps_ready_)) refresh_caps(summary);
  list_checkpoints(actives, shared, summary);
  bool cut_short = false;
  for (const auto& active : actives) {
    if (stop_requested_.load(std::memory_order_relaxed)) {
      // Shutting down: the rest wait for the next leader's pass, not for the kubelet's SIGKILL.
      cut_short = true;
      break;
    }
    auto [it, inserted] = tracked_.try_emplace(active->uid);
    if (inserted) it->second.key = active->key();
    ++summary.scalers;
    passed.insert(active->uid);
    if (!pass_scaler(active, it->second, now_text, std::chrono::time_point_cast<Duration>(now),
                     summary)) {
      ++summary.failed;
    }
  }
  finish_writes(summary, writes);
  api_.end_pass();
  listed_namespaces_.clear();
  listed_checkpoints_.clear();
  if (cut_short) {
    log::info(
        kLoopLogger, "recommender pass cut short: stopping",
        {{"scalers", std::to_string(summary.scalers)}, {"of", std::to_string(actives.size())}});
    return summary;
  }
  // A pass over the new scalers saw only them: what the others hold is the full pass's to judge.
  // Keys this pass passed, and whether the scaler there exported gauges: a scaler deleted and
  // created again under its name (another uid, the same key) shares them with its predecessor.
  std::map<std::string, bool> passed_keys;
  for (const auto& uid : passed) {
    if (auto found = tracked_.find(uid); found != tracked_.end())
      passed_keys[found->second.key] = found->second.gauges;
  }
  for (auto it = tracked_.begin(); !only_new && it != tracked_.end();) {
    if (present.count(it->first)) {
      // Still there but not recommended now (it lost a conflict, or has only fixed values):
      // its gauges would be stale; its history is kept should it come back.
      if (!passed.count(it->first)) remove_gauges(it->second);
      ++it;
      continue;
    }
    // The scaler is gone: no checkpoint version, nothing to write, no gauges; but what is kept
    // by its name (the checkpoint's version, a status write, gauge rows) may be its successor's.
    auto successor = passed_keys.find(it->second.key);
    if (successor == passed_keys.end()) {
      api_.forget_checkpoint(id_of(it->first, it->second));
      if (writers_) writers_->cancel(it->second.key);
    }
    if (successor == passed_keys.end() || !successor->second) remove_gauges(it->second);
    it = tracked_.erase(it);
  }
  for (const auto& [uid, tracked] : tracked_) {
    for (const auto& [name, aggregate] : tracked.history.aggregates()) {
      if (!aggregate.empty()) ++summary.aggregates;
    }
    summary.history_bytes += tracked.history.memory_bytes();
  }
  samples_total_.get().inc(static_cast<double>(summary.samples));
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!only_new) pass_seconds_.get().observe(summary.seconds);
  if (hooks_.on_pass_done) hooks_.on_pass_done();
  log::info(kLoopLogger, only_new ? "recommender pass over new scalers" : "recommender pass",
            {{"scalers", std::to_string(summary.scalers)},
             {"samples", std::to_string(summary.samples)},
             {"published", std::to_string(summary.published)},
             {"failed", std::to_string(summary.failed)},
             {"requests", std::to_string(summary.requests)},
             {"aggregates", std::to_string(summary.aggregates)},
             {"history_bytes", std::to_string(summary.history_bytes)},
             {"seconds", std::to_string(summary.seconds)},
             {"handed_over", std::to_string(summary.handed_over)},
             {"writes_replaced", std::to_string(summary.writes_replaced)},
             {"writes_waiting", std::to_string(summary.writes_waiting)},
             {"history_queries", std::to_string(summary.history_queries)},
             {"history_skipped", std::to_string(summary.history_skipped)}});
  return summary;
}

void RecommenderLoop::refresh_caps(PassSummary& summary) {
  auto largest = api_.largest_node();
  ++summary.requests;
  if (largest.ok()) {
    largest_node_ = std::move(largest).value();
    if (nodes_unlisted_) log::info(kLoopLogger, "nodes listed again; the largest node caps again");
    nodes_unlisted_ = false;
  } else if (!nodes_unlisted_) {
    // The last node list stands (nodes rarely shrink); before any, only the flags cap. Said
    // once: a namespaced install may not list nodes at all.
    nodes_unlisted_ = true;
    log::warn(kLoopLogger,
              "cannot list nodes; recommendations are capped by the last node list and the "
              "--container-recommendation-max-allowed-* flags only",
              {{"error", largest.error().to_string()}});
  }
  caps_ = cluster_caps(largest_node_, options_.max_allowed);
  caps_ready_ = true;
}

RecommenderLoop::Seeded RecommenderLoop::seed_history(const api::Scaler& scaler,
                                                      ScalerHistory& into, std::string& note,
                                                      PassSummary& summary) {
  // DESIGN: the message "says the history was not available".
  constexpr std::string_view kNotAvailable = "history from Prometheus not available (";
  constexpr std::string_view kLiveOnly =
      "); from live samples only, asked again when a replica next starts leading";
  std::string unavailable = history_failure_;
  if (unavailable.empty() && history_spent_ >= options_.history_budget) {
    // Slow, not down: the pass goes on, as DESIGN has it for a slow Prometheus.
    const auto budget = options_.history_budget.count();
    unavailable =
        "this pass's " +
        (budget % 1000 == 0 ? std::to_string(budget / 1000) + "s" : std::to_string(budget) + "ms") +
        " for histories were spent: Prometheus is slow";
    ++summary.history_skipped;
  }
  if (!unavailable.empty()) {
    note = std::string(kNotAvailable) + unavailable + std::string(kLiveOnly);
    into.set_history_wanted(true);
    return {};
  }
  const auto now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  const auto started = std::chrono::steady_clock::now();
  auto loaded = history_source_->load(target_of(scaler), now);
  const auto spent = std::chrono::steady_clock::now() - started;
  history_spent_ += spent;
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(spent);
  if (!loaded.ok()) {
    const std::string& error = loaded.error().message;
    // Only a source that is down spares the rest of the pass: one target's bad answer (too
    // large, too many samples) says nothing of the others'.
    if (loaded.error().source_down) history_failure_ = error;
    note = std::string(kNotAvailable) + error + std::string(kLiveOnly);
    into.set_history_wanted(true);
    log::warn(kLoopLogger,
              "history from Prometheus not available; the scaler starts from live samples",
              {{"namespace", scaler.ns}, {"name", scaler.name}, {"error", error}});
    return {};
  }
  summary.history_queries += loaded->queries;
  // A point at resolution R stands for R / interval samples, fractions kept (VPA counts one:
  // its Prometheus-seeded bounds stay ~8x wide at 1 h resolution).
  const double per_point = options_.interval.count() > 0
                               ? std::chrono::duration<double>(loaded->resolution) /
                                     std::chrono::duration<double>(options_.interval)
                               : 1.0;
  auto recommended = [&scaler](std::string_view container) {
    return is_recommended(scaler, container);
  };
  HistoryStats stats = into.seed(*loaded, options_.aggregate, per_point, recommended);
  if (stats.points == 0) {
    note = "no history in Prometheus for the pods of " + scaler.target.ref();
  } else {
    const auto days = std::chrono::duration_cast<std::chrono::hours>(stats.last - stats.first);
    note = "history from Prometheus: " + std::to_string(stats.points) + " points of " +
           std::to_string(stats.pods) + " pod(s) over " + std::to_string(days.count() / 24) + "d" +
           std::to_string(days.count() % 24) + "h";
  }
  log::info(kLoopLogger, "history loaded from Prometheus",
            {{"namespace", scaler.ns},
             {"name", scaler.name},
             {"points", std::to_string(stats.points)},
             {"pods", std::to_string(stats.pods)},
             {"dropped", std::to_string(loaded->dropped + stats.invalid)},
             {"queries", std::to_string(loaded->queries)},
             {"ms", std::to_string(took.count())}});
  return {true, stats, loaded->resolution, now};
}

void RecommenderLoop::retry_history(const api::Scaler& scaler, Tracked& tracked,
                                    PassSummary& summary) {
  if (history_spent_ >= options_.history_budget) return;  // still wanted: the next start asks
  TimePoint first_sampled = TimePoint::max();
  for (const auto& [name, aggregate] : tracked.history.aggregates()) {
    const TimePoint first = aggregate.state().first_sample_start;
    if (first != TimePoint{}) first_sampled = std::min(first_sampled, first);
  }
  ScalerHistory fresh;
  std::string note;
  const Seeded seeded = seed_history(scaler, fresh, note, summary);
  const Duration slack = 2 * seeded.resolution;
  const bool spans =
      seeded.stats.points > 0 && seeded.stats.last >= seeded.now - slack &&
      (first_sampled == TimePoint::max() || seeded.stats.first <= first_sampled + slack);
  if (spans) {
    // Prometheus knows no OOM kill: the peaks they raised, and containers it lacks, stay.
    const KeptBeyond kept = fresh.keep_beyond(tracked.history, options_.aggregate);
    tracked.history = std::move(fresh);  // not wanted any more: the next checkpoint says so
    tracked.history_note = note + ", asked again at this leader start, in place of the checkpoint";
    if (kept.memory_tails > 0) {
      tracked.history_note += "; its memory peaks above all of Prometheus' kept for " +
                              std::to_string(kept.memory_tails) + " container(s)";
    }
    if (kept.containers > 0) {
      tracked.history_note += "; " + std::to_string(kept.containers) +
                              " container(s) Prometheus has no history of kept from it";
    }
  } else if (seeded.loaded) {
    // Prometheus answered but lacks days the checkpoint sampled live (older than its window,
    // or not kept): the checkpoint holds more than it can give, now and at any later start.
    tracked.history.set_history_wanted(false);
    tracked.history_note = note +
                           "; asked again at this leader start, the checkpoint kept (the "
                           "history does not span its samples)";
  } else {
    tracked.history_note = note;
  }
}

void RecommenderLoop::list_checkpoints(
    const std::vector<std::shared_ptr<const api::Scaler>>& actives,
    const std::set<std::string>& shared, PassSummary& summary) {
  std::map<std::string, std::map<std::string, std::string>> unrestored;  // ns -> name -> uid
  for (const auto& active : actives) {
    if (!shared.count(active->ns)) continue;
    auto it = tracked_.find(active->uid);
    if (it != tracked_.end() && it->second.restored) continue;
    unrestored[active->ns].emplace(active->name, active->uid);
  }
  for (const auto& [ns, uids_by_name] : unrestored) {
    if (uids_by_name.size() < kSharedNamespaceScalers) continue;
    auto loaded = api_.load_checkpoints(ns, uids_by_name, options_.aggregate);
    if (!loaded.ok()) {
      // Each scaler asks on its own in pass_scaler, and waits for the next pass if that fails.
      log::warn(kLoopLogger, "cannot list the namespace's checkpoints; each is read on its own",
                {{"namespace", ns}, {"error", loaded.error().to_string()}});
      ++summary.requests;
      continue;
    }
    summary.requests += static_cast<std::size_t>(loaded->requests);
    listed_namespaces_.insert(ns);
    for (auto& [name, checkpoint] : loaded->by_name) {
      listed_checkpoints_.emplace(uids_by_name.at(name), std::move(checkpoint));
    }
  }
}

kube::Result<LoadedCheckpoint, kube::ApiError> RecommenderLoop::load_checkpoint(
    const api::Scaler& scaler, PassSummary& summary) {
  if (listed_namespaces_.count(scaler.ns)) {
    auto it = listed_checkpoints_.find(scaler.uid);
    if (it == listed_checkpoints_.end()) return LoadedCheckpoint{};  // the list had none
    LoadedCheckpoint loaded = std::move(it->second);
    listed_checkpoints_.erase(it);
    return loaded;
  }
  ++summary.requests;
  return api_.load_checkpoint({scaler.ns, scaler.name, scaler.uid}, options_.aggregate);
}

bool RecommenderLoop::pass_scaler(const std::shared_ptr<const api::Scaler>& shared_scaler,
                                  Tracked& tracked, const std::string& now, TimePoint pass_time,
                                  PassSummary& summary) {
  const api::Scaler& scaler = *shared_scaler;
  if (!tracked.restored) {
    auto loaded = load_checkpoint(scaler, summary);
    if (!loaded.ok()) {
      log::warn(
          kLoopLogger, "cannot read the checkpoint; the scaler waits for the next pass",
          {{"namespace", scaler.ns}, {"name", scaler.name}, {"error", loaded.error().to_string()}});
      return false;
    }
    if (loaded->history) {
      tracked.history = std::move(*loaded->history);
      std::uint64_t samples = 0;
      for (const auto& [name, aggregate] : tracked.history.aggregates()) {
        samples += aggregate.state().total_samples_count;
      }
      log::info(
          kLoopLogger, "history restored from the checkpoint",
          {{"namespace", scaler.ns}, {"name", scaler.name}, {"samples", std::to_string(samples)}});
      if (tracked.history.history_wanted() && history_source_ != nullptr) {
        retry_history(scaler, tracked, summary);
      }
    } else if (history_source_ != nullptr) {
      seed_history(scaler, tracked.history, tracked.history_note, summary);
    }
    tracked.restored = true;
  }
  const TargetWorkload target = target_of(scaler);
  auto inputs = api_.read_inputs(target);
  summary.requests += inputs.ok() ? static_cast<std::size_t>(inputs->requests) : 1;
  if (!inputs.ok()) {
    const SourceErrorKind kind = inputs.error().kind;
    // A missing target is the reconciler's to report (TargetFound); nothing to recommend.
    if (kind == SourceErrorKind::kWorkloadNotFound || kind == SourceErrorKind::kUnsupportedKind) {
      return true;
    }
    log::warn(
        kLoopLogger, "cannot read the scaler's inputs; retried next pass",
        {{"namespace", scaler.ns}, {"name", scaler.name}, {"error", inputs.error().to_string()}});
    return false;
  }
  auto recommended = [&scaler](std::string_view container) {
    return is_recommended(scaler, container);
  };
  PassStats stats = tracked.history.fold(inputs->metrics, inputs->owned_pods, options_.aggregate,
                                         recommended, pass_time);
  summary.samples += stats.samples_added;
  if (stats.aggregates_dropped > 0) {
    log::info(kLoopLogger,
              "container histories dropped: expired, or empty of a container no pod runs",
              {{"namespace", scaler.ns},
               {"name", scaler.name},
               {"containers", std::to_string(stats.aggregates_dropped)}});
  }
  if (stats.oom_kills_counted > 0) {
    log::info(kLoopLogger, "OOM kills counted",
              {{"namespace", scaler.ns},
               {"name", scaler.name},
               {"kills", std::to_string(stats.oom_kills_counted)}});
  }
  for (const auto& error : stats.oom_errors) {
    log::debug(kLoopLogger, "OOM kill not counted",
               {{"namespace", scaler.ns}, {"name", scaler.name}, {"reason", error}});
  }
  auto range = [this, &scaler, &inputs](const std::string& container) {
    AllowedRange allowed;
    if (const api::ContainerResources* entry = scaler.entry_for(container)) {
      allowed.min_allowed = to_resource_map(entry->min_allowed);
      allowed.max_allowed = to_resource_map(entry->max_allowed);
    }
    return within_limit_range(within_cluster_caps(std::move(allowed), caps_), inputs->limit_range);
  };
  std::vector<ContainerRecommendation> recs;
  for (auto& rec :
       tracked.history.recommendations(options_.aggregate, options_.recommendation, range)) {
    if (!is_recommended(scaler, rec.container_name)) continue;
    const api::ContainerResources* entry = scaler.entry_for(rec.container_name);
    recs.push_back(entry == nullptr ? std::move(rec)
                                    : controlled_only(std::move(rec), {entry->controls_cpu,
                                                                       entry->controls_memory}));
  }
  Publication publication;
  publication.reason = tracked.history.reason();
  if (publication.reason == ProvidedReason::kRecommended && recs.empty()) {
    publication.reason = ProvidedReason::kInsufficientHistory;
  }
  publication.message = describe(*inputs, stats, publication.reason, target);
  if (!tracked.history_note.empty()) publication.message += "; " + tracked.history_note;
  if (publication.reason == ProvidedReason::kRecommended) {
    json list = json::array();
    for (const auto& rec : recs) list.push_back(to_json(rec));
    publication.recommendation = json{{"containerRecommendations", std::move(list)}};
    // A write of the scaler's refresh pass still pending (the API server a pass behind) is
    // replaced or cancelled by this publication, which carries the refresh on.
    publication.refresh_far_bounds =
        far_bound_refresh_pass(scaler.uid, full_passes_) ||
        (writers_ && full_passes_ > 1 && far_bound_refresh_pass(scaler.uid, full_passes_ - 1) &&
         writers_->pending(tracked.key));
    widen_request_spans(publication.request_spans, inputs->workload.template_containers);
    for (const PodInfo& pod : inputs->owned_pods) {
      widen_request_spans(publication.request_spans, pod.containers);
    }
    export_gauges(tracked, recs);
  }
  if (write_status(shared_scaler, tracked.key, std::move(publication), now)) {
    ++summary.handed_over;
  }
  return true;
}

bool RecommenderLoop::write_status(std::shared_ptr<const api::Scaler> scaler,
                                   const std::string& key, Publication publication,
                                   const std::string& now) {
  // Only what changes the status is handed over (the writer asks again, against the status as it
  // is then).
  const std::shared_ptr<const api::Scaler> seen = informer_copy(key, scaler);
  if (!status_update(seen->status(), seen->generation, publication, now)) {
    // The status already says this. A write of an older publication still waiting would undo
    // it: cancelled. One running may land after this check: this one follows it, judged again.
    if (!writers_ || !writers_->running(key)) {
      if (writers_) writers_->cancel(key);
      return false;
    }
  }
  // While it waits, the publication holds its recommendation as JSON text: a few hundred bytes
  // where the tree is a few KB, and in a new install's first passes 10,000 may wait.
  std::string recommendation_text;
  if (writers_ && publication.recommendation) {
    recommendation_text = publication.recommendation->dump();
    publication.recommendation.reset();
  }
  auto write = [this, scaler = std::move(scaler), key, publication = std::move(publication),
                recommendation_text = std::move(recommendation_text), now]() mutable {
    if (!recommendation_text.empty()) {
      publication.recommendation = json::parse(recommendation_text);
      recommendation_text = std::string();
    }
    const std::shared_ptr<const api::Scaler> current = informer_copy(key, scaler);
    const api::Scaler& known = *current;
    const json known_status = known.status();  // parsed once: the write and the hint read it
    std::size_t requests = 0;
    const bool published = publish(*scaler, known, known_status, publication, now, requests);
    written_requests_ += requests;
    if (!published) return;
    ++written_published_;
    // Judged against `known`, the copy from before the write (the informer's copy now may hold
    // the write's own echo). A copy that lagged says "changed" once too often: a reconcile more.
    if (hooks_.on_published && reconciler_reads(known, known_status, publication)) {
      hooks_.on_published(key);
    }
  };
  if (!writers_) {
    write();
    return true;
  }
  if (!writers_->submit(key, std::move(write))) {
    // Only stop() stops the writers, after the pass's thread ended: not reached in a pass.
    log::warn(kLoopLogger, "status writers stopped; the recommendation waits for the next pass",
              {{"scaler", key}});
    return false;
  }
  return true;
}

std::shared_ptr<const api::Scaler> RecommenderLoop::informer_copy(
    const std::string& key, const std::shared_ptr<const api::Scaler>& scaler) const {
  std::shared_ptr<const api::Scaler> current = hooks_.scaler ? hooks_.scaler(key) : nullptr;
  return current && current->uid == scaler->uid ? current : scaler;
}

std::size_t RecommenderLoop::writes_waiting() const {
  return writers_ ? writers_->waiting() : 0;
}

void RecommenderLoop::wait_for_writes() {
  if (writers_) writers_->wait_idle();
}

void RecommenderLoop::finish_writes(PassSummary& summary, PassWrites writes) {
  if (writers_) {
    if (writes == PassWrites::kAwait) wait_for_writes();
    summary.writes_waiting = writers_->waiting();
    const std::size_t replaced = writers_->replaced();
    summary.writes_replaced = replaced - replaced_before_;
    replaced_before_ = replaced;
  }
  summary.requests += written_requests_.exchange(0);
  summary.published += written_published_.exchange(0);
}

bool RecommenderLoop::publish(const api::Scaler& scaler, const api::Scaler& known,
                              const json& known_status, const Publication& publication,
                              const std::string& now, std::size_t& requests) {
  if (!still_leading("status")) return false;
  // `known` is the informer's copy as it is now (not the pass's snapshot, which the reconciler's
  // status writes outdate during a long pass): when it already says this, no request at all.
  // Otherwise the first write rests on that copy, its resourceVersion the precondition: it is
  // usually current, and a GET per published scaler is saved. A 409 means it lagged: each
  // retry reads the scaler fresh.
  auto update = status_update(known_status, known.generation, publication, now);
  if (!update) return false;
  std::string resource_version = known.resource_version;
  for (int attempt = 0; attempt < options_.status_attempts; ++attempt) {
    if (attempt > 0) {
      ++requests;
      write_rate_.acquire();
      auto fresh = api_.get_scaler(scaler.ns, scaler.name);
      if (!fresh.ok()) {
        if (!kube::is_not_found(fresh.error())) {
          log::warn(kLoopLogger, "cannot read the scaler to publish its recommendation",
                    {{"namespace", scaler.ns},
                     {"name", scaler.name},
                     {"error", fresh.error().to_string()}});
        }
        return false;
      }
      const json& metadata = (*fresh)["metadata"];
      if (metadata.value("uid", "") != scaler.uid) return false;  // another scaler of that name
      const json status = fresh->value("status", json::object());
      update =
          status_update(status, metadata.value("generation", std::int64_t{0}), publication, now);
      if (!update) return false;  // already there (the informer's copy lagged)
      resource_version = metadata.value("resourceVersion", "");
    }
    json patch = {{"metadata", {{"resourceVersion", resource_version}}},
                  {"status", std::move(*update)}};
    if (attempt > 0 && !still_leading("status")) return false;
    ++requests;
    write_rate_.acquire();
    auto written = api_.patch_scaler_status(scaler.ns, scaler.name, patch);
    if (written.ok()) return true;
    if (!kube::is_conflict(written.error())) {
      log::warn(kLoopLogger, "cannot write the scaler's recommendation",
                {{"namespace", scaler.ns},
                 {"name", scaler.name},
                 {"error", written.error().to_string()}});
      return false;
    }
  }
  log::warn(kLoopLogger, "the scaler kept changing while its recommendation was written; next pass",
            {{"namespace", scaler.ns}, {"name", scaler.name}});
  return false;
}

void RecommenderLoop::export_gauges(Tracked& tracked,
                                    const std::vector<ContainerRecommendation>& recs) {
  if (recs.empty() && !tracked.gauges) return;
  recommendation_.set(tracked.ns(), tracked.name(), recs);
  tracked.gauges = !recs.empty();
}

void RecommenderLoop::remove_gauges(Tracked& tracked) {
  export_gauges(tracked, {});
}

ScalerId RecommenderLoop::id_of(const std::string& uid, const Tracked& tracked) {
  return {std::string(tracked.ns()), std::string(tracked.name()), uid};
}

bool RecommenderLoop::still_leading(std::string_view write) {
  if (!hooks_.still_leading || hooks_.still_leading()) return true;
  fenced_writes_.inc();
  // The status writes still waiting were this leadership's: should it come back before the next
  // pass (which restores every history), they must not land.
  if (writers_) writers_->drop_waiting();
  if (!fenced_logged_.exchange(true)) {  // once per pass (reset by run_pass): not 10,000 lines
    log::warn(kLoopLogger, "no longer leading mid-pass: the rest of its writes are dropped",
              {{"write", std::string(write)}});
  }
  return false;
}

std::size_t RecommenderLoop::save_checkpoints(unsigned slice, unsigned slices) {
  return save_checkpoints_until(slice, slices, [] { return false; }).written;
}

RecommenderLoop::CheckpointRound RecommenderLoop::save_checkpoints_until(
    unsigned slice, unsigned slices, const std::function<bool()>& give_up) {
  fenced_logged_.store(false);
  CheckpointRound round;
  if (hooks_.begin_step && !hooks_.begin_step("checkpoint")) return round;
  for (auto& [uid, tracked] : tracked_) {
    if (!tracked.restored || tracked.history.aggregates().empty()) continue;
    if (tracked.history.revision() == tracked.saved_revision) continue;  // unchanged
    if (slices > 1 && std::hash<std::string>{}(uid) % slices != slice) continue;
    if (round.left > 0 || give_up()) {
      ++round.left;
      continue;
    }
    if (!still_leading("checkpoint")) break;
    const ScalerId id = id_of(uid, tracked);
    write_rate_.acquire();
    auto saved = api_.save_checkpoint(
        id, tracked.history, [this] { return still_leading("checkpoint"); }, options_.aggregate);
    if (saved.ok()) {
      tracked.saved_revision = tracked.history.revision();
      ++round.written;
    } else if (!kube::is_not_found(saved.error())) {
      log::warn(
          kLoopLogger, "cannot write the checkpoint; next interval",
          {{"namespace", id.namespace_}, {"name", id.name}, {"error", saved.error().to_string()}});
    }
  }
  return round;
}

const ScalerHistory* RecommenderLoop::history(const std::string& uid) const {
  auto it = tracked_.find(uid);
  return it == tracked_.end() ? nullptr : &it->second.history;
}

}  // namespace vscaler::recommender
