// Status and StatusOr<T>: how the core reports real failures (bad input, broken
// preconditions) without exceptions. A "cannot place this job" answer is not a
// failure: it is a framework::Verdict.
//
//   StatusOr<Cluster> c = LoadCluster(path);
//   if (!c.ok()) return c.status();
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace berth {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // malformed input: a bad trace line, a bad request
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,  // the state does not allow this now (e.g. GPU busy)
  kOutOfRange,
  kUnavailable,
  kInternal,  // a broken invariant
  kResourceExhausted,  // over a quota or limit
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT
  StatusOr(T value) : value_(std::move(value)) {}                                   // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace berth

#define BERTH_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::berth::Status _st = (expr);          \
    if (!_st.ok()) return _st;             \
  } while (0)

#define BERTH_CONCAT_INNER(a, b) a##b
#define BERTH_CONCAT(a, b) BERTH_CONCAT_INNER(a, b)
#define BERTH_ASSIGN_OR_RETURN(lhs, expr) \
  BERTH_ASSIGN_OR_RETURN_IMPL(BERTH_CONCAT(_sor_, __LINE__), lhs, expr)
#define BERTH_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
