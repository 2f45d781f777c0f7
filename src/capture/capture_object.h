// SPDX-License-Identifier: Apache-2.0
// The capture BPF object (bpf/capture.bpf.c), compiled at build time and
// embedded in the binary (bpf/embed_object.cmake): the installed recorder
// needs no file besides itself.
#pragma once

#include <span>

namespace bpfprof::capture {

std::span<const unsigned char> capture_object();

}  // namespace bpfprof::capture
