// VerifiedState: a uid is packed to 16 bytes when it is a canonical UUID, so that it round-trips
// exactly ("8-4-4-4-12" lowercase hex digits); anything else is kept as text.
#include "controller/verified_state.h"

#include <utility>

namespace vscaler::controller {
namespace {

constexpr std::size_t kUuidText = 36;
constexpr char kDigits[] = "0123456789abcdef";

bool hyphen_at(std::size_t i) {
  return i == 8 || i == 13 || i == 18 || i == 23;
}

int lower_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/// The 16 bytes of `uid` when it is a canonical UUID; false otherwise (uppercase hex included,
/// which would not print back the same).
bool parse_uuid(std::string_view uid, std::array<unsigned char, 16>& out) {
  if (uid.size() != kUuidText) return false;
  std::size_t byte = 0;
  for (std::size_t i = 0; i < kUuidText;) {
    if (hyphen_at(i)) {
      if (uid[i] != '-') return false;
      ++i;
      continue;
    }
    int high = lower_hex(uid[i]);
    int low = lower_hex(uid[i + 1]);
    if (high < 0 || low < 0) return false;
    out[byte++] = static_cast<unsigned char>(high << 4 | low);
    i += 2;
  }
  return true;
}

std::string format_uuid(const std::array<unsigned char, 16>& bytes) {
  std::string text;
  text.reserve(kUuidText);
  for (std::size_t byte = 0; byte < bytes.size(); ++byte) {
    if (hyphen_at(text.size())) text += '-';
    text += kDigits[bytes[byte] >> 4];
    text += kDigits[bytes[byte] & 0xf];
  }
  return text;
}

}  // namespace

VerifiedState::Stored VerifiedState::store(const Verified& verified) {
  Stored stored;
  stored.generation = verified.generation;
  stored.found = verified.found;
  stored.is_uuid = parse_uuid(verified.uid, stored.uuid);
  if (!stored.is_uuid && !verified.uid.empty()) {
    stored.other_uid = std::make_unique<std::string>(verified.uid);
  }
  return stored;
}

Verified VerifiedState::load(const Stored& stored) {
  Verified verified;
  verified.found = stored.found;
  verified.generation = stored.generation;
  if (stored.is_uuid) {
    verified.uid = format_uuid(stored.uuid);
  } else if (stored.other_uid) {
    verified.uid = *stored.other_uid;
  }
  return verified;
}

void VerifiedState::set(const std::string& key, const Verified& verified) {
  Stored stored = store(verified);
  std::lock_guard lock(mutex_);
  entries_[key] = std::move(stored);
}

void VerifiedState::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  entries_.erase(key);
}

std::optional<Verified> VerifiedState::get(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return load(it->second);
}

}  // namespace vscaler::controller
