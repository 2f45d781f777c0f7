// SPDX-License-Identifier: Apache-2.0
// Error, Errc and Result<T>: the one error channel of bpfprof. No exceptions
// cross module boundaries; internal invariants use BPFPROF_CHECK instead.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace bpfprof {

// A short, closed list; the CLI maps each to an exit code.
enum class Errc {
  kTruncated,    // input ends before a declared length
  kBadMagic,     // not the format we expected
  kBadRecord,    // a record or section is malformed
  kUnsupported,  // valid but a version/feature we do not handle
  kSystem,       // a syscall failed (errno set)
  kPermission,   // the kernel refused for lack of privilege
  kNotFound,     // a named thing does not exist
  kIo,           // reading or writing a file failed
  kInvalidArgument,  // the user asked for something that makes no sense
  kInternal,
};

const char* errc_name(Errc code);

struct Error {
  Errc code = Errc::kInternal;
  std::string message;                 // one line, no trailing period
  std::optional<uint64_t> offset;      // byte offset in the input, where it applies
  int sys_errno = 0;                   // errno, where it applies

  // Prefixes context while propagating: "reading X: <message>".
  Error&& with_context(const std::string& context) &&;
  // The one line the CLI prints.
  std::string to_string() const;
};

Error make_error(Errc code, std::string message);
Error make_error_at(Errc code, uint64_t offset, std::string message);
// Builds a kSystem (or kPermission for EPERM/EACCES) error from errno.
Error make_sys_error(const std::string& operation, int err);

// The std::expected subset we need; [[nodiscard]] so errors are not dropped.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;
inline Status ok_status() { return {}; }

[[noreturn]] void check_failed(const char* expr, const char* file, int line);

}  // namespace bpfprof

#define BPFPROF_CONCAT_INNER(a, b) a##b
#define BPFPROF_CONCAT(a, b) BPFPROF_CONCAT_INNER(a, b)

// Returns the error of a Result/Status expression from the calling function.
#define BPFPROF_TRY(expr)                                         \
  do {                                                            \
    auto&& bpfprof_try_result_ = (expr);                          \
    if (!bpfprof_try_result_.ok())                                \
      return std::move(bpfprof_try_result_).error();              \
  } while (0)

// BPFPROF_ASSIGN_OR_RETURN(auto x, f()): declares x from f()'s value or returns its error.
#define BPFPROF_ASSIGN_OR_RETURN(lhs, expr) \
  BPFPROF_ASSIGN_OR_RETURN_IMPL(BPFPROF_CONCAT(bpfprof_result_, __LINE__), lhs, expr)
#define BPFPROF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).error();       \
  lhs = std::move(tmp).value()

// Internal invariants: abort with a message, never a Result.
#define BPFPROF_CHECK(expr) \
  ((expr) ? (void)0 : ::bpfprof::check_failed(#expr, __FILE__, __LINE__))
