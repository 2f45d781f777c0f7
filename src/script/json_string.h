// SPDX-License-Identifier: Apache-2.0
// JSON strings for script's JSON lines, as nlohmann::json dumps them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "script/text_buffer.h"

namespace bpfprof::script {

// A JSON string as nlohmann::json dumps it. The common case (printable ASCII,
// nothing to escape) is copied; anything else goes through the library.
// Invalid UTF-8 becomes U+FFFD: the kernel cuts a COMM at 15 bytes, possibly
// inside a character (the library's default throws, which aborted script).
class JsonString {
 public:
  explicit JsonString(std::string_view s) : plain_(s) {
    const bool plain = std::all_of(
        s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (!plain) {
      escaped_ = escape(s);
      plain_ = {};
    }
  }
  // Bytes put() writes at most.
  size_t size() const { return escaped_.empty() ? plain_.size() + 2 : escaped_.size(); }
  char* put(char* p) const {
    if (!escaped_.empty()) return script::put(p, escaped_);
    *p++ = '"';
    p = script::put(p, plain_);
    *p++ = '"';
    return p;
  }

 private:
  // `s` quoted and escaped by the library.
  static std::string escape(std::string_view s);

  std::string_view plain_;
  std::string escaped_;  // empty when plain
};

}  // namespace bpfprof::script
