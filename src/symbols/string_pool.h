// SPDX-License-Identifier: Apache-2.0
// StringPool: interned strings with stable addresses, so frames can hand out
// string_views that live as long as the Symbolizer without per-lookup copies.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_set>

namespace bpfprof::symbols {

// Not thread-safe: filled in pass 1 only, read afterwards through the views.
class StringPool {
 public:
  std::string_view intern(std::string_view s) {
    if (auto it = index_.find(s); it != index_.end()) return *it;
    // deque never moves its elements, so the view below stays valid.
    const std::string& stored = strings_.emplace_back(s);
    std::string_view view = stored;
    index_.insert(view);
    return view;
  }

 private:
  std::deque<std::string> strings_;
  std::unordered_set<std::string_view> index_;
};

}  // namespace bpfprof::symbols
