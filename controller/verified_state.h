// VerifiedState: per scaler, the Deployment uid and generation the operator last verified to
// carry the declared resources (or verified absent). Kept in memory, not in status, so the
// periodic resync can find what changed with a metadata-only read and nothing else.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vscaler::controller {

/// What a reconcile last saw of a scaler's Deployment.
struct Verified {
  bool found = false;      ///< the Deployment existed
  std::string uid;         ///< its uid when found
  int64_t generation = 0;  ///< its metadata.generation when found
  friend bool operator==(const Verified&, const Verified&) = default;
};

/// Thread-safe map scaler key -> Verified; written by workers, read by the resync. One entry per
/// scaler for the life of the process: a uid the API server assigned (a canonical UUID) is kept
/// in 16 bytes, not as 36 characters of text (issue 17); get() gives back exactly what set() was
/// given, whatever the uid.
class VerifiedState {
 public:
  /// Records what a reconcile verified for `key`.
  void set(const std::string& key, const Verified& verified);
  /// Forgets `key` (scaler deleted, or it no longer manages its Deployment).
  void forget(const std::string& key);
  /// What was last verified for `key`; nullopt when nothing was (never reconciled).
  std::optional<Verified> get(const std::string& key) const;

 private:
  /// A Verified as kept: the uid as the 16 bytes of a canonical (lowercase, hyphenated) UUID, or
  /// else as text (any other uid; none for "").
  struct Stored {
    int64_t generation = 0;
    std::array<unsigned char, 16> uuid{};
    std::unique_ptr<std::string> other_uid;  // a uid that is not a canonical UUID
    bool found = false;
    bool is_uuid = false;
  };
  static Stored store(const Verified& verified);
  static Verified load(const Stored& stored);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Stored> entries_;
};

}  // namespace vscaler::controller
