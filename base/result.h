// Result<T, E>: a value or an error, for failures a caller is expected to branch on (a malformed
// quantity, a 404 from the API server). Exceptions are kept for the impossible and for startup.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace vscaler::base {

/// Wraps an error value so that Result's constructors can tell it apart from a success value.
template <typename E>
struct Failure {
  E error;
};

/// Makes a Failure; `return fail("why");` converts to any Result<T, std::string>.
template <typename E>
Failure<std::decay_t<E>> fail(E&& error) {
  return {std::forward<E>(error)};
}

/// Failure<const char*> converts to Failure<std::string> so string literals work as errors.
inline Failure<std::string> fail(const char* error) {
  return {std::string(error)};
}

/// Result<T, E> holds either a T (success) or an E (the error); check ok() before value().
template <typename T, typename E = std::string>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  template <typename F>
  Result(Failure<F> failure)  // NOLINT: implicit by design, see fail()
      : state_(std::in_place_index<1>, E(std::move(failure.error))) {}

  /// True when the result holds a value.
  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  /// The value; only valid when ok().
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  /// The error; only valid when !ok().
  const E& error() const& { return std::get<1>(state_); }
  E&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, E> state_;
};

/// Result of an operation that returns nothing but may fail.
struct Unit {};

}  // namespace vscaler::base

// Result grew up in kube/; every folder above base/ still spells it kube::Result, kube::fail and
// kube::Unit (and code on other branches does too), so the names stay reachable there.
namespace vscaler::kube {
using base::fail;
using base::Failure;
using base::Result;
using base::Unit;
}  // namespace vscaler::kube
