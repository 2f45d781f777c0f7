// SPDX-License-Identifier: Apache-2.0
// The BPF objects built from workload/bpf/*.bpf.c, embedded in the binary at
// build time (embed_objects.cmake), and where their hot line is.
#pragma once

#include <span>
#include <string_view>

namespace bpfprof::workload {

// One compiled BPF object: an ELF file with BTF, func_info and line_info.
struct EmbeddedObject {
  std::string_view name;  // the source's stem: "burner", "bpf2bpf"
  std::span<const unsigned char> bytes;
};

// A source position as BTF line info records it.
struct SourceLine {
  const char* file;  // absolute path the object was compiled from
  int line;
};

std::span<const EmbeddedObject> embedded_objects();

// The line marked "/* HOT LINE */": the loop every workload program burns in.
SourceLine hot_line();

}  // namespace bpfprof::workload
