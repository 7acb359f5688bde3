#include "controller/resync.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "base/log.h"
#include "controller/reconciler.h"

namespace vscaler::controller {
namespace {
constexpr std::string_view kResyncLogger = "resync";
// Page size of the metadata list. A namespace's workloads of one kind are read with one GET per
// scaler when that takes no more requests than listing them did last time (few scalers among
// many workloads).
constexpr std::size_t kPageSize = 500;

/// True for a scaler whose work lies in its pods (the in-place modes, a startup boost): see
/// Resyncer::set_visit_pod_scalers.
bool works_on_pods(const api::Scaler& scaler) {
  return api::in_place(scaler.update_mode) || scaler.boosts() ||
         scaler.status_counts_boosted_pods();  // a boost removed while pods still hold it
}

/// True when what is stored now differs from what was last verified.
bool changed(const std::optional<Verified>& verified, const WorkloadMeta* observed) {
  if (!verified) return true;
  if (observed == nullptr) return verified->found;
  return !verified->found || verified->uid != observed->uid ||
         verified->generation != observed->generation;
}
}  // namespace

Resyncer::Resyncer(ResyncApi& api, const ScalerStore& store, const VerifiedState& verified,
                   WorkQueue& queue, ResyncMetrics& metrics, int concurrency)
    : api_(api),
      store_(store),
      verified_(verified),
      queue_(queue),
      metrics_(metrics),
      concurrency_(std::max(1, concurrency)) {}

ResyncStats Resyncer::run_once() {
  auto start = std::chrono::steady_clock::now();
  ResyncStats stats;
  // Active scalers by namespace and target kind. Conflict losers write nothing; they are
  // reconciled when the active one changes or goes away (the informer enqueues them).
  std::map<std::pair<std::string, std::string>, std::vector<std::shared_ptr<const api::Scaler>>>
      by_namespace;
  // Enqueued without a read of their own: their reconcile reads the workload and its pods.
  std::vector<std::string> pod_scalers;
  const bool visit_pod_scalers = visit_pod_scalers_.load();
  for (auto& scaler : store_.snapshot()) {
    const api::Scaler* active = api::select_active(store_.targeting(scaler->ns, scaler->target));
    if (active != scaler.get()) continue;
    if (visit_pod_scalers && works_on_pods(*scaler)) {
      ++stats.scalers;
      pod_scalers.push_back(scaler->key());
      continue;
    }
    by_namespace[{scaler->ns, scaler->target.kind}].push_back(std::move(scaler));
  }
  // One job per namespace and kind; whether it reads by GETs is decided here, from the last
  // pass's list sizes, so that the jobs share nothing but `merge`.
  struct Job {
    const std::string* ns;
    const std::string* kind;
    const std::vector<std::shared_ptr<const api::Scaler>>* scalers;
    bool use_gets;
  };
  std::vector<Job> jobs;
  jobs.reserve(by_namespace.size());
  for (const auto& [ns_kind, scalers] : by_namespace) {
    stats.scalers += scalers.size();
    ++stats.namespaces;
    auto known = last_list_size_.find(ns_kind.first + "/" + ns_kind.second);
    std::size_t pages = known == last_list_size_.end() ? 1 : known->second / kPageSize + 1;
    bool use_gets = known != last_list_size_.end() && scalers.size() <= pages;
    jobs.push_back({&ns_kind.first, &ns_kind.second, &scalers, use_gets});
  }
  std::mutex merge;  // guards stats, to_enqueue and last_list_size_ while jobs run
  std::vector<std::string> to_enqueue = std::move(pod_scalers);
  auto run_job = [&](const Job& job) {
    const std::string& ns = *job.ns;
    const std::string& kind = *job.kind;
    int calls = 0;
    std::size_t skipped = 0;
    std::string first_error;  // of the GETs that failed
    std::vector<std::string> changed_keys;
    std::optional<std::size_t> listed_size;
    if (job.use_gets) {
      for (const auto& scaler : *job.scalers) {
        ++calls;
        auto meta = api_.get_workload(ns, kind, scaler->target.name);
        if (!meta.ok() && !kube::is_not_found(meta.error())) {
          if (skipped++ == 0) first_error = meta.error().to_string();
          continue;
        }
        const WorkloadMeta* observed = meta.ok() ? &*meta : nullptr;
        if (changed(verified_.get(scaler->key()), observed)) changed_keys.push_back(scaler->key());
      }
    } else if (auto list = api_.list_workloads(ns, kind, calls); !list.ok()) {
      // An interrupted list proves nothing about what is absent: judge nobody here this time.
      skipped += job.scalers->size();
      log::warn(kResyncLogger, "listing workloads failed; namespace skipped this pass",
                {{"namespace", ns}, {"kind", kind}, {"error", list.error().to_string()}});
    } else {
      listed_size = list->size();
      std::unordered_map<std::string_view, const WorkloadMeta*> by_name;
      by_name.reserve(list->size());
      for (const auto& meta : *list) by_name.emplace(meta.name, &meta);
      for (const auto& scaler : *job.scalers) {
        auto it = by_name.find(scaler->target.name);
        const WorkloadMeta* observed = it == by_name.end() ? nullptr : it->second;
        if (changed(verified_.get(scaler->key()), observed)) changed_keys.push_back(scaler->key());
      }
    }
    if (!first_error.empty()) {
      // The safety net is off for these scalers while it lasts (a 403 from RBAC, a 5xx): said.
      log::warn(kResyncLogger, "reading workloads failed; their scalers skipped this pass",
                {{"namespace", ns},
                 {"kind", kind},
                 {"skipped", std::to_string(skipped)},
                 {"error", first_error}});
    }
    std::lock_guard lock(merge);
    stats.api_calls += calls;
    stats.skipped += skipped;
    if (listed_size) last_list_size_[ns + "/" + kind] = *listed_size;
    for (auto& key : changed_keys) to_enqueue.push_back(std::move(key));
  };
  std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(concurrency_), jobs.size());
  if (threads <= 1) {
    for (const Job& job : jobs) run_job(job);
  } else {
    // Each read waits mostly on the API server (and the list's parse is short): a few at once
    // overlap those waits. Threads of this pass only, ended before it returns.
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) {
      pool.emplace_back([&] {
        for (std::size_t j = next.fetch_add(1); j < jobs.size(); j = next.fetch_add(1)) {
          run_job(jobs[j]);
        }
      });
    }
    for (auto& thread : pool) thread.join();
  }
  // The sizes of namespaces and kinds that hold no scaler any more (a preview environment's
  // namespace, deleted) are not kept.
  for (auto it = last_list_size_.begin(); it != last_list_size_.end();) {
    auto slash = it->first.rfind('/');
    bool still = slash != std::string::npos &&
                 by_namespace.count({it->first.substr(0, slash), it->first.substr(slash + 1)}) > 0;
    it = still ? std::next(it) : last_list_size_.erase(it);
  }
  for (const auto& key : to_enqueue) queue_.add(key, Priority::kLow);
  stats.enqueued = to_enqueue.size();
  if (!to_enqueue.empty()) metrics_.on_enqueued(to_enqueue.size());
  stats.wall = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  log::debug(kResyncLogger, "resync pass",
             {{"scalers", std::to_string(stats.scalers)},
              {"api_calls", std::to_string(stats.api_calls)},
              {"enqueued", std::to_string(stats.enqueued)},
              {"wall_ms", std::to_string(stats.wall.count())}});
  return stats;
}

void Resyncer::run(std::chrono::milliseconds period, const std::function<bool()>& may_start,
                   const std::function<void()>& before_pass) {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.9, 1.1);
  while (true) {
    auto wait = std::chrono::milliseconds(
        static_cast<int64_t>(static_cast<double>(period.count()) * jitter(random)));
    {
      std::unique_lock lock(stop_mutex_);
      stop_cv_.wait_for(lock, wait, [this] { return stopping_ || woken_; });
      if (stopping_) return;
      woken_ = false;
    }
    if (may_start && !may_start()) continue;
    if (before_pass) before_pass();
    run_once();
  }
}

void Resyncer::wake() {
  std::lock_guard lock(stop_mutex_);
  woken_ = true;
  stop_cv_.notify_all();
}

void Resyncer::stop() {
  std::lock_guard lock(stop_mutex_);
  stopping_ = true;
  stop_cv_.notify_all();
}

}  // namespace vscaler::controller
