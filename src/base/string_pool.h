// SPDX-License-Identifier: Apache-2.0
// StringPool: interned strings, each distinct value stored once however many
// frames, comms and names refer to it, with stable addresses so views of them
// can be handed out without per-lookup copies.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_set>

namespace bpfprof {

// Views returned by intern() stay valid for the pool's lifetime, also after
// the pool is moved: std::deque never relocates its elements. Not
// thread-safe.
class StringPool {
 public:
  StringPool() = default;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  std::string_view intern(std::string_view s) {
    if (auto it = index_.find(s); it != index_.end()) return *it;
    const std::string& stored = storage_.emplace_back(s);
    return *index_.insert(std::string_view(stored)).first;
  }
  size_t size() const { return storage_.size(); }

 private:
  std::deque<std::string> storage_;
  std::unordered_set<std::string_view> index_;
};

}  // namespace bpfprof
