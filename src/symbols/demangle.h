// SPDX-License-Identifier: Apache-2.0
// C++ names as a profile shows them. By default a function is shown by its
// qualified name alone, without its parameter list, the qualifiers after it
// or a template's return type (`RingBuffer::peek`, not
// `RingBuffer::peek() const`), as Linux perf shows them; the full signature
// on request.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bpfprof::symbols {

// The demangled form of `mangled` (an Itanium C++ ABI name, `_Z...`), short
// or with its full signature; none if it does not demangle.
std::optional<std::string> demangle(std::string_view mangled, bool full_signature);

// `signature`, a demangled function name with its parameter list, without
// that list and what follows it (qualifiers, clone suffixes such as
// ` [clone .cold]`), and
// without the return type a template function's signature starts with.
std::string without_parameters(std::string_view signature);

}  // namespace bpfprof::symbols
