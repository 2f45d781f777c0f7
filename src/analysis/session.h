// SPDX-License-Identifier: Apache-2.0
// Session: an opened recording after pass 1. Side-band records were applied
// to the Symbolizer in time order (time 0 = synthesized first), the header
// facts (lost, throttled, time range) were counted on the way, and the sample
// records were only counted: pass 2 walks the file again, in chunks, so memory
// does not grow with the number of samples. Walks of opened files read them
// with pread in pieces (FileReader); pages of the mapping that were touched
// (script's sort by offset, in-memory inputs) are dropped behind the walk:
// resident file bytes are a window, not the file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/report_data.h"
#include "analysis/time_order.h"
#include "analysis/walk_progress.h"
#include "base/diagnostics.h"
#include "base/error.h"
#include "perf/records.h"
#include "perfdata/reader.h"
#include "symbols/symbolizer.h"

namespace bpfprof::analysis {

struct SessionOptions {
  std::string symfs;     // prefix for user ELF paths
  bool read_elf = true;  // open user binaries for symbols
  // Updated by pass 1 and by the walks of for_each_sample/for_each_record, at
  // most once per few MiB; must outlive the Session. Null: no progress.
  WalkProgress* progress = nullptr;
  // --kallsyms FILE: kernel names from this /proc/kallsyms-format file
  // instead of the recording's snapshot ("" = the snapshot, if any).
  std::string kallsyms;
  // --vdso FILE: [vdso] frames named from this ELF image where the
  // recording holds none (perf's files); "" = the recording's only.
  std::string vdso;
  bool full_signatures = false;  // --full-signatures: C++ names with parameters
  // Pass 1 walks the two halves of a plain data section of at least twice
  // this many bytes at once (tests lower it).
  uint64_t parallel_min_bytes = 16 << 20;
};

using SampleFn = std::function<void(const perf::RecordView&, const perf::SampleLayout&)>;
using RecordFn = std::function<void(const perf::RecordView&, uint64_t file_offset)>;

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
  const Header& header() const { return header_; }
  // Sample records with a known attr (pass 1's count).
  uint64_t sample_count() const { return sample_count_; }
  // Pass 2 splits the samples into chunks of about kChunkSamples each, in
  // file order. A file with COMPRESSED records is one zstd stream that can
  // only be read from its start: it is one chunk, walked sequentially.
  static constexpr uint64_t kChunkSamples = 4096;
  size_t chunk_count() const;
  bool compressed() const { return compressed_; }
  // Whether samples carry their task's cgroup (PERF_SAMPLE_CGROUP: recorded
  // with `record --cgroup` or perf's --all-cgroups).
  bool samples_have_cgroups() const;
  // Calls fn for every sample (with a known attr) of chunks [first, last), in
  // file order. Views are valid during the call only. Calls on disjoint chunk
  // ranges may run in parallel, except for compressed files (one chunk).
  Status for_each_sample(size_t first, size_t last, const SampleFn& fn) const;
  // Calls fn for every record of the data section, in file order (as
  // FileReader::for_each_record); views are valid during the call only. Not
  // thread-safe.
  Status for_each_record(const RecordFn& fn) const;
  // Counts `bytes` of the data section as walked (walks of their own, such
  // as script's windows, report their share of the file). Thread-safe.
  void count_progress(uint64_t bytes) const {
    if (progress_) progress_->add_bytes(bytes);
  }
  const SampleOrder& sample_order() const { return sample_order_; }
  // The sample record at a file offset pass 1 saw (plain files only).
  Result<perf::RecordView> record_at(uint64_t file_offset) const;
  // Drops every mapped page of the data section (see FileReader::drop_pages).
  void drop_pages() const;
  // How many pieces pass 1 walked the data section in: 2 when the halves were
  // walked at once, else 1.
  size_t pass1_pieces() const { return pass1_pieces_; }
  // What pass 1 counted itself: records and feature sections it could not
  // use, and the links section 254 says the recorder lost.
  const DiagCounts& counters() const { return counters_; }
  // Every diagnostic of the recording as pass 1 leaves it: counters() and the
  // symbolizer's (side-band records, program loads). Pass 2 adds those of
  // the samples (aggregate.cc).
  DiagCounts diagnostics() const;

 private:
  explicit Session(perfdata::FileReader reader) : reader_(std::move(reader)) {}
  Status pass1(const SessionOptions& options);
  // Pass 1 over one piece of the data section, and a side-band record it
  // kept (pass1.h).
  struct Piece;
  struct Sideband;
  using Pieces = std::vector<std::unique_ptr<Piece>>;
  // Pass 1's walk as two halves at once (parallel_walk.cc); nullopt: walk
  // the file whole.
  std::optional<Pieces> walk_in_parallel(uint64_t min_bytes);
  // Joins the pieces in file order (round_join.cc): header facts, counters,
  // chunk starts and the sample order. Returns the side-band records in file
  // order.
  std::vector<Sideband> join(Pieces& pieces);

  perfdata::FileReader reader_;
  WalkProgress* progress_ = nullptr;
  std::vector<std::byte> vdso_image_;  // --vdso FILE's bytes (the symbolizer reads them)
  std::unique_ptr<symbols::Symbolizer> symbolizer_;
  uint64_t sample_count_ = 0;
  size_t pass1_pieces_ = 0;
  // File offset of every kChunkSamples-th sample, from the first (plain files).
  std::vector<uint64_t> chunk_starts_;
  bool compressed_ = false;
  SampleOrder sample_order_;
  Header header_;
  DiagCounts counters_;
  // Side-band records are copied here, in large chunks: records decompressed
  // from COMPRESSED records live in the reader's buffer only during the
  // callback, and the pages of plain files are dropped behind the walk.
  std::vector<std::unique_ptr<std::byte[]>> arena_;
};

}  // namespace bpfprof::analysis
