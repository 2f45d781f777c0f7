// SPDX-License-Identifier: Apache-2.0
// gzip framing (RFC 1952) over zlib, for pprof files: pprof readers expect a
// gzip-compressed profile.proto.
#pragma once

#include <string>
#include <string_view>

#include "base/error.h"

namespace bpfprof::exporter {

Result<std::string> gzip_compress(std::string_view data);
// Accepts gzip (and, for robustness, zlib) framing; kBadRecord if corrupt.
Result<std::string> gzip_decompress(std::string_view data);

}  // namespace bpfprof::exporter
