// SPDX-License-Identifier: Apache-2.0
// The output file's life around a recording: perf's perf.data -> perf.data.old
// rotation, undone if the recording fails before it started; and the feature
// values assembled at the end.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "bpf/prog_info.h"
#include "perf/abi.h"
#include "perfdata/features.h"
#include "perfdata/writer.h"

namespace bpfprof::record {

class OutputFile {
 public:
  // Rotates an existing `path` to `path.old` (only where `keep_old`: a
  // switched recording's later files find none there), then creates the
  // writer.
  static Result<OutputFile> create(const std::string& path, std::vector<perfdata::AttrEntry> attrs,
                                   bool keep_old = true);
  OutputFile(OutputFile&&) noexcept = default;
  OutputFile& operator=(OutputFile&&) = delete;

  perfdata::FileWriter& writer() { return writer_; }
  // Removes what was written and puts perf.data.old back where it was.
  void abandon();

 private:
  explicit OutputFile(perfdata::FileWriter writer) : writer_(std::move(writer)) {}
  perfdata::FileWriter writer_;
};

// The EVENT_DESC name of an event: `base` plus perf's modifier for what the
// attr excludes (":u" user only, ":k" kernel only).
std::string event_name_with_modifiers(const std::string& base, const perf_event_attr& attr);

// BPF_PROG_INFO / BPF_BTF from synthesis and the enricher, one entry per id.
void merge_prog_infos(std::map<uint32_t, bpf::ProgInfo>& into, std::vector<bpf::ProgInfo> more);
void merge_btfs(std::map<uint32_t, bpf::BtfBlob>& into, std::vector<bpf::BtfBlob> more);

// argv for CMDLINE with argv[0] replaced by /proc/self/exe's target.
std::vector<std::string> cmdline_with_exe(std::vector<std::string> argv);

}  // namespace bpfprof::record
