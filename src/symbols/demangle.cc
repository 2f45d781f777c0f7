// SPDX-License-Identifier: Apache-2.0
#include "symbols/demangle.h"

#include <cstdlib>
#include <cxxabi.h>
#include <memory>

namespace bpfprof::symbols {
namespace {

// The position of the '(' that opens the parenthesized group ending at
// `close` (a ')'), or npos if the text is not balanced.
size_t open_of(std::string_view s, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (s[i] == ')') depth++;
    if (s[i] == '(' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// Whether s[i] is at nesting depth 0 of (), <>, [] and {} (scanning from
// the start); `operator<` and the like are rare enough in a name's prefix
// to be read as brackets.
size_t last_top_level_space(std::string_view s) {
  int depth = 0;
  size_t last = std::string_view::npos;
  for (size_t i = 0; i < s.size(); i++) {
    const char c = s[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') depth++;
    if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0) depth--;
    if (c == ' ' && depth == 0) last = i;
  }
  return last;
}

}  // namespace

std::string without_parameters(std::string_view s) {
  // A thunk names its target with the target's whole signature.
  for (std::string_view special : {"non-virtual thunk to ", "virtual thunk to ",
                                   "covariant return thunk to "}) {
    if (s.starts_with(special)) return std::string(s);
  }
  // Clone suffixes (" [clone .isra.0]", several possible) go too, as perf
  // drops them.
  const std::string_view clones;
  while (s.ends_with(']')) {
    const size_t at = s.rfind(" [clone ");
    if (at == std::string_view::npos) break;
    s = s.substr(0, at);
  }
  // Qualifiers after the parameter list: " const", " volatile", " &", " &&",
  // " noexcept", in any order.
  for (bool more = true; more;) {
    more = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (s.ends_with(q)) {
        s.remove_suffix(q.size());
        more = true;
      }
    }
  }
  if (!s.ends_with(')')) return std::string(s) + std::string(clones);
  const size_t open = open_of(s, s.size() - 1);
  if (open == std::string_view::npos || open == 0) return std::string(s) + std::string(clones);
  std::string_view name = s.substr(0, open);
  // A template function's signature starts with its return type:
  // "int f<int>(int)" is shown "f<int>".
  if (name.ends_with('>') && !name.ends_with("->") ) {
    const size_t space = last_top_level_space(name);
    if (space != std::string_view::npos && !name.substr(0, space).ends_with("operator")) {
      name = name.substr(space + 1);
    }
  }
  return std::string(name) + std::string(clones);
}

std::optional<std::string> demangle(std::string_view mangled, bool full_signature) {
  const std::string z(mangled);  // NUL-terminated for the demangler
  int status = -1;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(z.c_str(), nullptr, nullptr, &status),
                                             std::free);
  if (status != 0 || !out) return std::nullopt;
  if (full_signature) return std::string(out.get());
  return without_parameters(out.get());
}

}  // namespace bpfprof::symbols
