// The one narrow door from the admission hooks into the controller: a scaler key and what the
// admitted write says must become visible (DESIGN.md event flow items 2 and 3). The webhook knows
// nothing of the queue, the expectations store or the reconciler behind it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vscaler::controller {

/// What a hinted write says must become visible in the stored workload before a reconcile has
/// seen it (admission runs before persistence). Nothing in it comes from a field the webhook must
/// not trust for the hint: only oldObject's generation and uid and the operation.
struct Expectation {
  /// The workload's metadata.generation must be greater than this; 0 = no generation asked.
  int64_t min_generation_exclusive = 0;
  /// This workload uid must be gone or carry a deletionTimestamp; empty = no deletion asked.
  std::string gone_uid;
  /// The workload must exist (a CREATE was admitted: "generation > 0" in DESIGN.md's terms, which
  /// min_generation_exclusive cannot say since 0 there means "nothing asked").
  bool must_exist = false;

  /// True when it asks for something (a generation, a uid, or existence).
  bool any() const { return min_generation_exclusive > 0 || !gone_uid.empty() || must_exist; }
  /// Folds a newer expectation in: the larger generation wins (a later write implies the earlier
  /// ones), a newer gone_uid replaces an older one (the newest uid is the one to wait for), and
  /// must_exist sticks.
  void merge(const Expectation& newer);

  bool operator==(const Expectation&) const = default;
};

/// Receives the admission hooks' hints. Implementations must be cheap and never do I/O: they run
/// on the webhook's request threads, inside the API server's admission timeout.
class HintSink {
 public:
  virtual ~HintSink() = default;
  /// Scaler `scaler_key` ("namespace/name") must be reconciled soon; `expectation` (possibly
  /// empty) says what the write that caused it will make visible.
  virtual void hint(std::string_view scaler_key, const Expectation& expectation) = 0;
  /// A CREATE of workload `kind` `name` in `ns` was admitted and no scaler targets it (yet): a
  /// scaler that arrives just after it is hinted then (see UnclaimedCreates). No-op by default.
  virtual void unclaimed_create(std::string_view ns, std::string_view kind, std::string_view name) {
    (void)ns, (void)kind, (void)name;
  }
  /// A pod of scaler `scaler_key`'s target was admitted with a startup boost: the scaler must
  /// look at its pods until the pod is stored and Ready, then end the boost. Queues it like
  /// hint(). No-op by default.
  virtual void boosted_pod(std::string_view scaler_key) { (void)scaler_key; }
};

}  // namespace vscaler::controller
