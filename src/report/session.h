// SPDX-License-Identifier: Apache-2.0
// Session: an opened recording after pass 1. Side-band records were applied
// to the Symbolizer in time order (time 0 = synthesized first), samples were
// collected as views in file order for pass 2 to split, and the header facts
// (lost, throttled, time range) were counted on the way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "perf/records.h"
#include "perfdata/reader.h"
#include "report/report_data.h"
#include "symbols/symbolizer.h"

namespace bpfprof::report {

struct SessionOptions {
  std::string symfs;     // prefix for user ELF paths
  bool read_elf = true;  // open user binaries for symbols
};

// A sample record and the attr it belongs to.
struct SampleRef {
  perf::RecordView record;
  const perf::SampleLayout* layout = nullptr;
  uint64_t time = 0;
};

class Session {
 public:
  // Opens `path` and runs pass 1. Errors: the file cannot be read, or the data
  // section is malformed (the error names the byte offset).
  static Result<std::unique_ptr<Session>> open(const std::string& path,
                                               const SessionOptions& options);
  // The same over caller-owned bytes (tests).
  static Result<std::unique_ptr<Session>> from_bytes(Bytes data, const SessionOptions& options);

  const perfdata::FileReader& reader() const { return reader_; }
  const symbols::Symbolizer& symbolizer() const { return *symbolizer_; }
  const std::vector<SampleRef>& samples() const { return samples_; }
  const Header& header() const { return header_; }
  // Pass 1 diagnostics (named counters), merged into the report's counters.
  const std::map<std::string, uint64_t>& counters() const { return counters_; }

 private:
  explicit Session(perfdata::FileReader reader) : reader_(std::move(reader)) {}
  Status pass1(const SessionOptions& options);
  // Records decompressed from COMPRESSED records live in the reader's buffer
  // only during the callback: copies are kept here, in large chunks.
  perf::RecordView keep(const perf::RecordView& r);

  perfdata::FileReader reader_;
  std::unique_ptr<symbols::Symbolizer> symbolizer_;
  std::vector<SampleRef> samples_;
  Header header_;
  std::map<std::string, uint64_t> counters_;
  std::vector<std::unique_ptr<std::byte[]>> arena_;
  size_t arena_used_ = 0, arena_size_ = 0;
};

}  // namespace bpfprof::report
