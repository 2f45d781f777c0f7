// SPDX-License-Identifier: Apache-2.0
// perf.data writer, file mode: header placeholder, id arrays and attrs up
// front, the data section streamed in rounds, features and the final header at
// close. On a write error the file is cut back to the last complete round and
// its header rewritten, so what was recorded before stays readable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/byte_cursor.h"
#include "base/error.h"
#include "base/output_open.h"
#include "base/unique_fd.h"
#include "perfdata/features.h"

namespace bpfprof::perfdata {

class RecordCompressor;  // perfdata/record_compressor.h

struct AttrEntry {
  perf_event_attr attr{};  // written with size kAttrSizeWritten
  std::string name;        // EVENT_DESC name ("cpu-clock", "dummy:u"...)
  std::vector<uint64_t> ids;
};

class FileWriter {
 public:
  // Creates `path` through open_output (a new file of mode 0600; a device
  // under /dev such as /dev/null is only written to; `how.keep_old` moves a
  // previous file to path.old first) and writes the placeholder
  // header, ids and attrs. Attr ids may be added until the first append
  // through attr_ids_mutable(); they are rewritten then.
  static Result<FileWriter> create(const std::string& path, std::vector<AttrEntry> attrs,
                                   const OutputOpen& how = {});

  FileWriter(FileWriter&&) noexcept;
  FileWriter& operator=(FileWriter&&) noexcept;
  ~FileWriter();

  // The ids of attr `attr_index`, editable until the first append (the id
  // arrays and attrs are rewritten then if they changed).
  std::vector<uint64_t>& attr_ids_mutable(size_t attr_index);

  // Appends whole records (buffered), uncompressed; records handed to
  // append_compressed() before go first.
  Status append(Bytes records);
  // `record -z`: from now on append_compressed() packs records into
  // COMPRESSED records (record_compressor.h) of zstd `level`; feature 27
  // states `mmap_len`. A HEADER_FEATURE record (80) carrying feature 27 is
  // appended at once: perf 6.1 takes it in file mode too, so it can
  // decompress a killed recorder's file, which has no feature sections.
  Status enable_compression(int level, uint32_t mmap_len);
  // Records to compress (the ring data): spans may split a record, the next
  // span continuing it, but a round (finish_round) ends on a whole record.
  // Without enable_compression(), the same as append().
  Status append_compressed(Bytes records);
  const RecordCompressor* compressor() const { return compressor_.get(); }
  // Appends feature payloads as in-stream records (in_stream.h): what the
  // recorder learns goes into the data as it learns it, so a file whose
  // recorder was killed still carries it. The Features overload encodes
  // every section `features` sets, plus EVENT_DESC from the attrs.
  Status append_in_stream(int feat, Bytes payload);
  Status append_in_stream(const Features& features);
  // Appends a FINISHED_ROUND record, flushes, marks everything so far as a
  // complete round, and rewrites the header with the data size so far (no
  // feature bits: the sections come at close), so a killed recorder's file
  // is read up to its last round by perf and bpfprof alike.
  Status finish_round();
  // Flushes, writes the features, rewrites the header. After a write error it
  // cuts the data back to the last complete round and still writes the header.
  // By value: a recording's features hold every program's info and BTF
  // (megabytes with churn), moved in rather than copied.
  Status close(Features features);
  // Removes the file (recording failed before anything useful was written)
  // and puts path.old back where create() rotated it; a device is left alone.
  void abandon();

  uint64_t data_bytes() const;  // bytes of data written so far (incl. buffered)
  bool write_failed() const { return failed_ && out_.fd.valid(); }  // close() cuts back
  const std::string& path() const { return path_; }
  bool rotated() const { return out_.rotated; }  // create() renamed a previous file to path.old

 private:
  FileWriter() = default;
  Status flush();
  Status append_raw(Bytes records);
  // Moves what the compressor holds into the data (all: every whole record).
  Status drain_compressor(bool all);
  // Sets feature 27 in `features` when compressing.
  void add_compression(Features& features) const;
  Status write_preamble();
  Status freeze_preamble();
  Status write_header(uint64_t data_size, const uint64_t features_bitmap[4]);
  // Writes the feature table and payloads after `data_size` bytes of data.
  Status write_features(const Features& features, uint64_t data_size, uint64_t bitmap[4]);
  Status close_after_error(const Features& features);

  std::string path_;
  OpenedOutput out_;  // the file, its directory, whether it is regular and rotated
  std::vector<AttrEntry> attrs_;
  uint64_t data_offset_ = 0;  // file offset where data starts
  uint64_t written_ = 0;      // data bytes on disk
  uint64_t round_end_ = 0;    // data bytes on disk at the last complete round
  std::vector<std::byte> buffer_;
  std::unique_ptr<RecordCompressor> compressor_;
  std::vector<std::byte> packed_;  // COMPRESSED records on their way to the buffer
  bool failed_ = false;            // a write failed: only close() may follow
  bool data_started_ = false;      // the preamble is final
  bool ids_dirty_ = false;         // attr_ids_mutable() was called
  Error first_error_;
  // The kallsyms snapshot's in-stream records: data offset, bytes, and a
  // hash of the payload (close refers to them instead of a second copy).
  struct InStreamCopy {
    uint64_t at = 0, size = 0, hash = 0;
  };
  std::optional<InStreamCopy> kallsyms_in_stream_;
};

}  // namespace bpfprof::perfdata
