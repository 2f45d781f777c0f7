// SPDX-License-Identifier: Apache-2.0
#include "base/error.h"

#include <cerrno>
#include <cstring>

namespace bpfprof {

const char* errc_name(Errc code) {
  switch (code) {
    case Errc::kTruncated: return "truncated";
    case Errc::kBadMagic: return "bad magic";
    case Errc::kBadRecord: return "bad record";
    case Errc::kUnsupported: return "unsupported";
    case Errc::kSystem: return "system error";
    case Errc::kPermission: return "permission denied";
    case Errc::kNotFound: return "not found";
    case Errc::kIo: return "i/o error";
    case Errc::kInvalidArgument: return "invalid argument";
    case Errc::kInternal: return "internal error";
  }
  return "unknown error";
}

Error&& Error::with_context(const std::string& context) && {
  message = context + ": " + message;
  return std::move(*this);
}

std::string Error::to_string() const {
  std::string out = message;
  if (offset) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(*offset));
    out += " (at byte offset ";
    out += buf;
    out += ")";
  }
  return out;
}

Error make_error(Errc code, std::string message) {
  return Error{code, std::move(message), std::nullopt, 0};
}

Error make_error_at(Errc code, uint64_t offset, std::string message) {
  return Error{code, std::move(message), offset, 0};
}

Error make_sys_error(const std::string& operation, int err) {
  Errc code = (err == EPERM || err == EACCES) ? Errc::kPermission : Errc::kSystem;
  return Error{code, operation + ": " + std::strerror(err), std::nullopt, err};
}

void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "bpfprof: internal check failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace bpfprof
