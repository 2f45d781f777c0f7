// SPDX-License-Identifier: Apache-2.0
// `bpfprof script`: every sample in time order (file order among equal
// times), in perf script's layouts: a header line and one indented line per
// callchain frame, then a blank line; or one line per sample,
// "comm pid/tid [cpu] time: ip sym+0xoff (dso)"; or JSON Lines with the same
// fields (and the frames as an array).
#pragma once

#include <cstdio>

#include "analysis/session.h"
#include "base/error.h"

namespace bpfprof::script {

enum class ScriptFormat { kText, kJson };

// perf script's common -F fields.
enum ScriptField : uint32_t {
  kFieldComm = 1 << 0,
  kFieldTid = 1 << 1,
  kFieldPid = 1 << 2,
  kFieldTime = 1 << 3,
  kFieldCpu = 1 << 4,
  kFieldEvent = 1 << 5,
  kFieldIp = 1 << 6,
  kFieldSym = 1 << 7,
  kFieldSymoff = 1 << 8,
  kFieldDso = 1 << 9,
  kFieldPeriod = 1 << 10,
};
// What perf script shows by default for a sampling event.
inline constexpr uint32_t kDefaultFields = kFieldComm | kFieldTid | kFieldCpu | kFieldTime |
                                           kFieldPeriod | kFieldEvent | kFieldIp | kFieldSym |
                                           kFieldSymoff | kFieldDso;

// "comm,tid,time,ip,sym" -> the fields. Errors name the field not known.
Result<uint32_t> parse_fields(std::string_view list);

struct ScriptOptions {
  ScriptFormat format = ScriptFormat::kText;
  unsigned threads = 0;  // 0 = one per online CPU
  // Text: each sample's callchain, one frame a line (perf script's layout
  // for recordings with callchains); JSON: a "callchain" array.
  bool callchain = false;
  // Text: the fields to print, in perf script's layout (kDefaultFields with
  // callchains); 0 = bpfprof's one-line form.
  uint32_t fields = 0;
};

// Whether any sampling event of the recording records callchains.
bool has_callchains(const analysis::Session& session);

// Writes every sample of `session` to `out`. Errors only when writing fails.
// When `out` is a pipe, its buffer is widened to 1 MiB first (see script.cc).
Status write_script(const analysis::Session& session, const ScriptOptions& options, std::FILE* out);

}  // namespace bpfprof::script
