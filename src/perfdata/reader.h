// SPDX-License-Identifier: Apache-2.0
// perf.data reader: file mode (header, attrs with ids, data section, feature
// sections) and pipe mode (`perf record -o -`: attrs and features arrive as
// HEADER_ATTR / HEADER_FEATURE records), with zstd-compressed records (`perf
// record -z`) decompressed on the fly. Every offset and length is checked
// against the input; errors carry the byte offset. Layouts: shared
// perf-data-format.md sections 1-3, 6, 6.1, 8 and 9.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "base/prefault.h"
#include "base/unique_fd.h"
#include "perf/records.h"
#include "perfdata/features.h"

namespace bpfprof::perfdata {

struct FileAttr {
  perf_event_attr attr{};   // as much as the file had, the rest zero
  std::vector<uint64_t> ids;
  std::string name;         // from EVENT_DESC (or pipe-mode EVENT_UPDATE), else empty
  perf::SampleLayout layout;
};

// Soft problems: counted, never fatal (DESIGN rule 3). Record counts describe
// the last for_each_record walk; feature counts are fixed at open.
struct ReaderStats {
  std::map<uint32_t, uint64_t> unknown_record_types;  // type -> records skipped
  uint64_t unknown_features = 0;  // sections with a number neither perf 6.1 nor bpfprof defines
  // Records not passed to the callback: unknown types, and COMPRESSED records
  // nested inside decompressed data (perf never writes those).
  uint64_t records_skipped = 0;
  uint64_t compressed_records = 0;  // COMPRESSED records decompressed
  uint64_t decompressed_bytes = 0;
};

class FileReader {
 public:
  // Maps a regular file read-only; "-" (stdin) and non-regular files (pipes)
  // are read whole into memory. A stream that starts with the 16-byte pipe
  // header is read in pipe mode even when it is a regular file, as perf does.
  static Result<FileReader> open(const std::string& path);
  // Reads from caller-owned bytes (tests, fuzzing); `data` must outlive the reader.
  static Result<FileReader> from_bytes(Bytes data);

  // Pipe mode: from HEADER_ATTR records, in stream order.
  const std::vector<FileAttr>& attrs() const { return attrs_; }
  // Pipe mode: from HEADER_FEATURE records.
  const Features& features() const { return features_; }
  // Feature bits set in the header (pipe mode, and a file without feature
  // sections: features that arrived as records).
  bool has_feature(int feat) const;
  bool pipe_mode() const { return pipe_mode_; }
  // The file has no feature sections (its recorder was killed) and its
  // features were taken from in-stream records (perfdata/in_stream.h).
  bool features_in_stream() const { return features_in_stream_; }
  // Where the records start and how many bytes they span (pipe mode: the
  // whole stream after the 16-byte header).
  uint64_t data_offset() const { return data_offset_; }
  uint64_t data_size() const { return data_size_; }
  // The data section's bytes (pipe mode: the stream after the header).
  Bytes data_section() const { return file_.subspan(data_offset_, data_size_); }
  // The header said data.size == 0 but bytes follow data.offset: the recording
  // was killed before the header was finalised. The data section is then read
  // to the end of the file and a partial last record is dropped.
  bool truncated_header() const { return truncated_header_; }
  // Feature sections that were present but could not be decoded (the file is
  // still usable; each error names the section's byte offset).
  const std::vector<Error>& feature_errors() const { return feature_errors_; }
  // The features those errors are about (a section, or in-stream blobs).
  const std::set<int>& damaged_features() const { return damaged_features_; }
  const ReaderStats& stats() const { return stats_; }

  // The attr a record belongs to: by id (trailer or sample), id 0 or a single
  // attr -> the first. nullptr if the id is unknown.
  const FileAttr* attr_for(const perf::RecordView& r) const;

  // Calls fn(record, file_offset) for every record in file order, except the
  // pipe-mode header records (HEADER_ATTR, HEADER_FEATURE) and records of
  // unknown types (counted in stats()). Views are valid only during the
  // callback (copy what you keep): an opened file is read in pieces with
  // pread, not through the mapping. A COMPRESSED record is replaced by the
  // records its payload decompresses to; their offset (and file_offset) is
  // that of the COMPRESSED record where they start. Stops at
  // the first malformed record with an error naming its offset. Not
  // thread-safe (it updates stats()).
  Status for_each_record(const std::function<void(const perf::RecordView&, uint64_t)>& fn) const;
  // Like for_each_record, for the records that start in file bytes
  // [begin, end) of the data section; `begin` must be where a record starts
  // (an offset for_each_record passed). Thread-safe: it leaves stats() alone
  // (what it skips was counted by a full walk). Files with COMPRESSED records
  // are one zstd stream and cannot be entered in the middle: a COMPRESSED
  // record in the range is an error (kUnsupported).
  // With `skipped`, what the walk skips (unknown record types) is counted
  // there instead (a caller-owned ReaderStats: walks stay thread-safe).
  // Opened files are read with pread into a piece reused as the walk goes
  // on, so views end with the callback. With `hold`, the range (and the
  // largest record that can start at its end) is read into *hold at once
  // and views stay valid until *hold is next used or freed: the window's
  // records are kept without a copy, and without mapping the file, whose
  // page faults cost ~4x the read here (a paravirtualized machine: 0.06 s
  // against 0.014 s for a 137 MB file). Every record the walk hands out lies
  // in *hold (a payload after the range's last record is skipped, not
  // read). Inputs in memory (stdin, from_bytes) are viewed where they are.
  // Its growth writes nothing (pread fills it at once).
  using HoldBytes = std::vector<std::byte, UninitAllocator<std::byte>>;
  Status for_each_record_in(uint64_t begin, uint64_t end,
                            const std::function<void(const perf::RecordView&, uint64_t)>& fn,
                            ReaderStats* skipped = nullptr, HoldBytes* hold = nullptr) const;
  // Tells the kernel the mapped file bytes of the pages inside [begin, end)
  // are not needed now, so a walk's resident memory is a window, not the
  // file. Views stay valid: the mapping is private and read-only, so a page
  // touched again is read back from the file. No-op for inputs read into
  // memory (stdin, pipes, from_bytes).
  void drop_pages(uint64_t begin, uint64_t end) const;

 private:
  friend class RecordWalker;
  FileReader() = default;
  Status parse();
  Status parse_file();
  Status parse_pipe();
  Status add_attr(const perf_event_attr& attr, std::vector<uint64_t> ids, uint64_t at);
  void decode_one_feature(int feat, Bytes payload, uint64_t at,
                          std::vector<std::string>& event_names);
  // A file without feature sections: the in-stream records (in_stream.h).
  Status take_in_stream_features();
  Status take_kallsyms_in_stream(uint64_t offset, uint64_t size, uint64_t section_at);

  std::shared_ptr<void> mapping_;  // keeps the mmap or the stdin copy alive
  Bytes file_;
  bool mapped_ = false;            // file_ is the mmap (drop_pages may apply)
  // The open file behind the mapping: record walks read it with pread into
  // a small buffer instead of touching the mapping (no page faults, no
  // mapped pages to drop). Shared: readers are moved, walks run in parallel.
  std::shared_ptr<const UniqueFd> fd_;
  bool pipe_mode_ = false;
  std::vector<FileAttr> attrs_;
  uint64_t features_bitmap_[4] = {};
  uint64_t data_offset_ = 0, data_size_ = 0;
  Features features_;
  bool truncated_header_ = false;
  bool features_in_stream_ = false;
  // In-stream blobs (views point here), as InStreamCollector::BlobBytes.
  std::vector<std::vector<std::byte, UninitAllocator<std::byte>>> owned_blobs_;
  std::vector<Error> feature_errors_;
  std::set<int> damaged_features_;
  std::unordered_map<uint64_t, size_t> attr_by_id_;  // id -> index in attrs_
  // The same pairs in insertion order, scanned instead while they are few.
  static constexpr size_t kFewIds = 16;
  std::vector<std::pair<uint64_t, size_t>> few_ids_;
  mutable ReaderStats stats_;
};

// FileReader::attr_for with a memory of the last record's id: a walk meets
// one CPU's records in runs, so most records repeat the id before them. One
// per walking thread; valid while the reader is.
class AttrMemo {
 public:
  explicit AttrMemo(const FileReader& reader) : reader_(reader) {}
  const FileAttr* operator()(const perf::RecordView& r) {
    const std::vector<FileAttr>& attrs = reader_.attrs();
    if (attrs.size() <= 1) return attrs.empty() ? nullptr : &attrs[0];
    // Where attr_for reads the id (all attrs of a valid file agree on it).
    // A plain word, not the optional: copying that through the stack cost
    // a stalled load per record. No id and id 0 are never remembered.
    const uint64_t id = attrs[0].layout.id_of(r).value_or(0);
    if (id != 0 && id == id_) return attr_;
    const FileAttr* attr = reader_.attr_for(r);
    if (id != 0) {
      id_ = id;
      attr_ = attr;
    }
    return attr;
  }

 private:
  const FileReader& reader_;
  uint64_t id_ = 0;  // 0: nothing remembered (id 0 is never looked up)
  const FileAttr* attr_ = nullptr;
};

}  // namespace bpfprof::perfdata
