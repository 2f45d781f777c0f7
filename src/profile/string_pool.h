// SPDX-License-Identifier: Apache-2.0
// StringPool: interns strings so frames, comms and names are stored once per
// distinct value, however many samples refer to them.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_set>

namespace bpfprof::profile {

// Views returned by intern() stay valid for the pool's lifetime, also after
// the pool is moved: std::deque never relocates its elements.
class StringPool {
 public:
  StringPool() = default;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  std::string_view intern(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return *it;
    const std::string& stored = storage_.emplace_back(s);
    return *index_.insert(std::string_view(stored)).first;
  }
  size_t size() const { return storage_.size(); }

 private:
  std::deque<std::string> storage_;
  std::unordered_set<std::string_view> index_;
};

}  // namespace bpfprof::profile
