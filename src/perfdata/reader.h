// SPDX-License-Identifier: Apache-2.0
// perf.data reader, file mode: header, attrs with ids, data section records in
// file order (views into the mapped file), feature sections. Every offset and
// length is checked against the file; errors carry the byte offset.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "perf/records.h"
#include "perfdata/features.h"

namespace bpfprof::perfdata {

struct FileAttr {
  perf_event_attr attr{};   // as much as the file had, the rest zero
  std::vector<uint64_t> ids;
  std::string name;         // from EVENT_DESC, else empty
  perf::SampleLayout layout;
};

class FileReader {
 public:
  // Maps the file read-only.
  static Result<FileReader> open(const std::string& path);
  // Reads from caller-owned bytes (tests, fuzzing); `data` must outlive the reader.
  static Result<FileReader> from_bytes(Bytes data);

  const std::vector<FileAttr>& attrs() const { return attrs_; }
  const Features& features() const { return features_; }
  // Feature bits set in the header.
  bool has_feature(int feat) const;
  uint64_t data_offset() const { return data_offset_; }
  uint64_t data_size() const { return data_size_; }
  // The header said data.size == 0 but bytes follow data.offset: the recording
  // was killed before the header was finalised. The data section is then read
  // to the end of the file and a partial last record is dropped.
  bool truncated_header() const { return truncated_header_; }
  // Feature sections that were present but could not be decoded (the file is
  // still usable; each error names the section's byte offset).
  const std::vector<Error>& feature_errors() const { return feature_errors_; }

  // The attr a record belongs to: by id (trailer or sample), id 0 or a single
  // attr -> the first. nullptr if the id is unknown.
  const FileAttr* attr_for(const perf::RecordView& r) const;

  // Calls fn(record, file_offset) for every record of the data section in file
  // order. Stops at the first malformed record with an error naming its offset.
  Status for_each_record(const std::function<void(const perf::RecordView&, uint64_t)>& fn) const;

 private:
  FileReader() = default;
  Status parse();

  std::shared_ptr<void> mapping_;  // keeps the mmap alive
  Bytes file_;
  std::vector<FileAttr> attrs_;
  uint64_t features_bitmap_[4] = {};
  uint64_t data_offset_ = 0, data_size_ = 0;
  Features features_;
  bool truncated_header_ = false;
  std::vector<Error> feature_errors_;
  std::unordered_map<uint64_t, size_t> attr_by_id_;  // id -> index in attrs_
};

}  // namespace bpfprof::perfdata
