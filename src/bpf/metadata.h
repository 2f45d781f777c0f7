// SPDX-License-Identifier: Apache-2.0
// A program's bpf_metadata_* variables, read from the live kernel: the
// variables of the BTF section ".rodata" whose names start with
// bpf_metadata_, in the value (key 0) of the program's .rodata array map.
// libbpf binds that map to every program of an object (BPF_PROG_BIND_MAP),
// so it is among the program's maps even when its code reads none of it;
// `bpftool prog show` lists the same variables under "metadata".
#pragma once

#include <bpf/btf.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "base/error.h"
#include "bpf/prog_info.h"

namespace bpfprof::bpf {

// Whether map `m` may be a .rodata map (an array of one value), before asking
// the kernel: the others are not opened.
bool may_hold_metadata(const MapInfo& m);

// The bpf_metadata_* variables in `value`, a .rodata map's value whose type
// is `btf_value_type_id` of `b`: none when that type is not the BTF section
// ".rodata". `value` may be the value's first bytes only: a variable that
// does not lie wholly inside is left out, and counted in `*cut` if given.
std::optional<Metadata> metadata_from_value(const btf* b, uint32_t btf_value_type_id,
                                            std::span<const std::byte> value,
                                            size_t* cut = nullptr);

// The bpf_metadata_* variables map `map_id` holds: none (an empty optional)
// when it is not a .rodata map (its value type is not the BTF section
// ".rodata"), an empty list when that section has no such variable.
// kNotFound when the map is gone. Values: a char array as the string it
// holds up to its NUL, an integer (or enum without a name for the value) in
// decimal (a number), a bool as "true" or "false" (a boolean), an enum by
// its enumerator's name, anything else as "0x" and the hex digits of its
// bytes (strings; metadata_from_value of its value).
Result<std::optional<Metadata>> read_rodata_metadata(uint32_t map_id);

}  // namespace bpfprof::bpf
