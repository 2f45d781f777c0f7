// SPDX-License-Identifier: Apache-2.0
// `bpfprof script`: one line per sample, in time order (file order among
// equal times), like perf script: "comm pid/tid [cpu] time: ip sym+0xoff (dso)";
// or JSON Lines with the same fields.
#pragma once

#include <cstdio>

#include "analysis/session.h"
#include "base/error.h"

namespace bpfprof::script {

enum class ScriptFormat { kText, kJson };

struct ScriptOptions {
  ScriptFormat format = ScriptFormat::kText;
  unsigned threads = 0;  // 0 = one per online CPU
};

// Writes every sample of `session` to `out`. Errors only when writing fails.
// When `out` is a pipe, its buffer is widened to 1 MiB first (see script.cc).
Status write_script(const analysis::Session& session, const ScriptOptions& options, std::FILE* out);

}  // namespace bpfprof::script
