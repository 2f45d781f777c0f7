// SPDX-License-Identifier: Apache-2.0
// FileWriter: the perf.data layout perf record 6.1 produces (header, id
// arrays, attrs, data, feature table + payloads), written so that a failed
// write never leaves a file perf cannot read.
#include "perfdata/writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>

#include "perfdata/file_format.h"
#include "perfdata/in_stream.h"
#include "perfdata/record_compressor.h"

namespace bpfprof::perfdata {
namespace {

// Data is buffered and handed to write(2) in chunks of about this size.
constexpr size_t kBufferSize = 1 << 20;
// Appends at least this large are written without passing through the buffer.
constexpr size_t kDirectWrite = 64 << 10;

Error io_error(const std::string& what, const std::string& path, int err) {
  Error e = make_error(err == EACCES || err == EPERM ? Errc::kPermission : Errc::kIo,
                       what + " " + path + ": " + std::strerror(err));
  e.sys_errno = err;
  return e;
}

// write(2) until everything is written; `done` counts bytes that made it even
// when a later write fails. Returns 0 or the errno.
int write_all(int fd, Bytes b, uint64_t& done) {
  size_t pos = 0;
  while (pos < b.size()) {
    ssize_t n = ::write(fd, b.data() + pos, b.size() - pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;  // no progress: treat as a full device
    pos += static_cast<size_t>(n);
    done += static_cast<uint64_t>(n);
  }
  return 0;
}

int pwrite_all(int fd, Bytes b, uint64_t offset) {
  size_t pos = 0;
  while (pos < b.size()) {
    ssize_t n = ::pwrite(fd, b.data() + pos, b.size() - pos, static_cast<off_t>(offset + pos));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;
    pos += static_cast<size_t>(n);
  }
  return 0;
}

uint64_t payload_hash(Bytes b) {
  return std::hash<std::string_view>{}(
      std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

// EVENT_DESC's view of the attrs.
std::vector<EventDescEntry> event_descs(const std::vector<AttrEntry>& attrs) {
  std::vector<EventDescEntry> events;
  for (const AttrEntry& a : attrs) events.push_back({&a.attr, &a.name, &a.ids});
  return events;
}

}  // namespace

Result<FileWriter> FileWriter::create(const std::string& path, std::vector<AttrEntry> attrs,
                                      const OutputOpen& how) {
  OutputOpen open_how = how;
  open_how.mode = 0600;
  FileWriter w;
  BPFPROF_ASSIGN_OR_RETURN(w.out_, open_output(path, open_how));
  w.path_ = path;
  w.attrs_ = std::move(attrs);
  w.buffer_.reserve(kBufferSize);
  if (Status s = w.write_preamble(); !s.ok()) {
    w.abandon();
    return std::move(s).error();
  }
  return w;
}

FileWriter::FileWriter(FileWriter&&) noexcept = default;
FileWriter& FileWriter::operator=(FileWriter&&) noexcept = default;
FileWriter::~FileWriter() = default;

std::vector<uint64_t>& FileWriter::attr_ids_mutable(size_t attr_index) {
  BPFPROF_CHECK(!data_started_ && attr_index < attrs_.size());
  ids_dirty_ = true;
  return attrs_[attr_index].ids;
}

// Header placeholder (data.size 0, no features), then all id arrays, then the
// attr section, as perf writes them; data starts right after.
Status FileWriter::write_preamble() {
  std::vector<std::byte> out(kFileHeaderSize);
  std::vector<FileSection> id_sections;
  for (const AttrEntry& a : attrs_) {
    id_sections.push_back({out.size(), a.ids.size() * sizeof(uint64_t)});
    for (uint64_t id : a.ids) append_pod(out, id);
  }
  const uint64_t attrs_offset = out.size();
  for (size_t i = 0; i < attrs_.size(); ++i) {
    perf_event_attr attr{};
    std::memcpy(&attr, &attrs_[i].attr, perf::kAttrSizeWritten);
    attr.size = perf::kAttrSizeWritten;
    const auto* p = reinterpret_cast<const std::byte*>(&attr);
    out.insert(out.end(), p, p + perf::kAttrSizeWritten);
    append_pod(out, id_sections[i]);
  }
  data_offset_ = out.size();
  FileHeader h;
  h.attrs = {attrs_offset, data_offset_ - attrs_offset};
  h.data = {data_offset_, 0};
  std::memcpy(out.data(), &h, sizeof h);
  if (int err = pwrite_all(out_.fd.get(), out, 0)) return io_error("writing", path_, err);
  // A rewrite with fewer ids must not leave stale bytes before the data.
  if (out_.regular && ::ftruncate(out_.fd.get(), static_cast<off_t>(data_offset_)) != 0)
    return io_error("truncating", path_, errno);
  if (::lseek(out_.fd.get(), static_cast<off_t>(data_offset_), SEEK_SET) < 0)
    return io_error("seeking in", path_, errno);
  return ok_status();
}

Status FileWriter::freeze_preamble() {
  if (data_started_) return ok_status();
  data_started_ = true;
  if (ids_dirty_) return write_preamble();
  return ok_status();
}

Status FileWriter::append(Bytes records) {
  if (failed_) return Error(first_error_);
  if (compressor_ && !compressor_->empty()) BPFPROF_TRY(drain_compressor(true));
  return append_raw(records);
}

Status FileWriter::enable_compression(int level, uint32_t mmap_len) {
  BPFPROF_ASSIGN_OR_RETURN(compressor_, RecordCompressor::create(level, mmap_len));
  Features f;
  f.compression = compressor_->feature();
  std::map<int, std::vector<std::byte>> sections = encode_features(f, {});
  const std::vector<std::byte>& payload = sections.at(kFeatCompressed);
  std::vector<std::byte> rec;
  const size_t size = (sizeof(perf_event_header) + 8 + payload.size() + 7) & ~size_t{7};
  perf_event_header h{perf::kRecordHeaderFeature, 0, static_cast<uint16_t>(size)};
  append_pod(rec, h);
  append_pod(rec, uint64_t{kFeatCompressed});
  rec.insert(rec.end(), payload.begin(), payload.end());
  rec.resize(size);
  return append(rec);
}

Status FileWriter::append_compressed(Bytes records) {
  if (!compressor_) return append(records);
  if (failed_) return Error(first_error_);
  compressor_->add(records);
  return drain_compressor(false);
}

Status FileWriter::drain_compressor(bool all) {
  packed_.clear();
  if (Status s = compressor_->take(packed_, all); !s.ok()) {
    failed_ = true;
    first_error_ = s.error();
    return s;
  }
  if (packed_.empty()) return ok_status();
  return append_raw(packed_);
}

void FileWriter::add_compression(Features& features) const {
  if (compressor_) features.compression = compressor_->feature();
}

Status FileWriter::append_raw(Bytes records) {
  if (failed_) return Error(first_error_);
  if (!data_started_) {
    Status s = freeze_preamble();
    if (!s.ok()) {
      failed_ = true;
      first_error_ = s.error();
      return s;
    }
  }
  if (buffer_.size() + records.size() > kBufferSize && !buffer_.empty()) BPFPROF_TRY(flush());
  if (records.size() >= kDirectWrite) {
    // Large spans (a recorder's ring contents) go to write(2) from where they
    // are, in order after what is buffered: one copy fewer per byte.
    BPFPROF_TRY(flush());
    if (int err = write_all(out_.fd.get(), records, written_)) {
      failed_ = true;
      first_error_ = io_error("writing", path_, err);
      return Error(first_error_);
    }
    return ok_status();
  }
  buffer_.insert(buffer_.end(), records.begin(), records.end());
  if (buffer_.size() >= kBufferSize) return flush();
  return ok_status();
}

Status FileWriter::flush() {
  if (failed_) return Error(first_error_);
  if (buffer_.empty()) return ok_status();
  int err = write_all(out_.fd.get(), buffer_, written_);
  buffer_.clear();
  if (err != 0) {
    failed_ = true;
    first_error_ = io_error("writing", path_, err);
    return Error(first_error_);
  }
  return ok_status();
}

Status FileWriter::append_in_stream(int feat, Bytes payload) {
  std::vector<std::byte> records;
  append_in_stream_records(records, feat, payload);
  if (feat == kFeatBpfprofKallsyms) {
    // Where it lands: the section at close refers to it, if it is the same.
    kallsyms_in_stream_ = InStreamCopy{data_bytes(), records.size(), payload_hash(payload)};
  }
  return append(records);
}

Status FileWriter::append_in_stream(const Features& features) {
  for (const auto& [feat, bytes] : encode_features(features, event_descs(attrs_))) {
    BPFPROF_TRY(append_in_stream(feat, bytes));
  }
  return ok_status();
}

Status FileWriter::finish_round() {
  perf_event_header round{perf::kRecordFinishedRound, 0, sizeof(perf_event_header)};
  BPFPROF_TRY(append(as_bytes_of(&round, sizeof round)));
  BPFPROF_TRY(flush());
  round_end_ = written_;
  if (!out_.regular) return ok_status();
  // 104 bytes per round; a failure here is a failed write like any other.
  const uint64_t no_features[4] = {};
  if (Status s = write_header(round_end_, no_features); !s.ok()) {
    failed_ = true;
    first_error_ = s.error();
    return s;
  }
  return ok_status();
}

uint64_t FileWriter::data_bytes() const { return written_ + buffer_.size(); }

Status FileWriter::write_header(uint64_t data_size, const uint64_t features_bitmap[4]) {
  FileHeader h;
  h.attrs = {data_offset_ - attrs_.size() * kAttrEntrySize, attrs_.size() * kAttrEntrySize};
  h.data = {data_offset_, data_size};
  std::memcpy(h.adds_features, features_bitmap, sizeof h.adds_features);
  if (int err = pwrite_all(out_.fd.get(), as_bytes_of(&h, sizeof h), 0))
    return io_error("writing header of", path_, err);
  return ok_status();
}

Status FileWriter::write_features(const Features& features, uint64_t data_size,
                                  uint64_t bitmap[4]) {
  std::map<int, std::vector<std::byte>> sections = encode_features(features, event_descs(attrs_));
  // The kallsyms snapshot (megabytes) is stored once: when the data kept
  // holds the same bytes in-stream, the section says where they are.
  auto ks = sections.find(kFeatBpfprofKallsyms);
  if (ks != sections.end() && kallsyms_in_stream_ &&
      kallsyms_in_stream_->at + kallsyms_in_stream_->size <= data_size &&
      kallsyms_in_stream_->hash == payload_hash(ks->second)) {
    ks->second = encode_kallsyms_in_stream_ref(data_offset_ + kallsyms_in_stream_->at,
                                               kallsyms_in_stream_->size);
  }

  // The table, then each section where the table says (not copied into one
  // buffer first: the BPF sections of a recording with churn are megabytes).
  const uint64_t table_at = data_offset_ + data_size;
  uint64_t payload_at = table_at + sections.size() * sizeof(FileSection);
  std::vector<std::byte> table;
  for (const auto& [feat, bytes] : sections) {
    append_pod(table, FileSection{payload_at, bytes.size()});
    payload_at += bytes.size();
  }
  uint64_t at = table_at;
  if (int err = pwrite_all(out_.fd.get(), table, at))
    return io_error("writing features of", path_, err);
  at += table.size();
  for (const auto& [feat, bytes] : sections) {
    if (int err = pwrite_all(out_.fd.get(), bytes, at)) {
      return io_error("writing features of", path_, err);
    }
    at += bytes.size();
  }
  for (const auto& [feat, bytes] : sections) set_feature_bit(bitmap, feat);
  return ok_status();
}

Status FileWriter::close(Features features) {
  if (!out_.fd.valid()) return make_error(Errc::kInternal, "closing " + path_ + " twice");
  if (!failed_ && !data_started_) {
    Status s = freeze_preamble();
    if (!s.ok()) {
      failed_ = true;
      first_error_ = s.error();
    }
  }
  if (!failed_ && compressor_) (void)drain_compressor(true);
  if (!failed_) (void)flush();
  add_compression(features);
  if (failed_) return close_after_error(features);

  const uint64_t no_features[4] = {};
  uint64_t bitmap[4] = {};
  Status s = write_features(features, written_, bitmap);
  if (!s.ok()) {
    // Keep the data readable: no feature table, header without features.
    if (out_.regular) (void)::ftruncate(out_.fd.get(), static_cast<off_t>(data_offset_ + written_));
    (void)write_header(written_, no_features);
    out_.fd.reset();
    return s;
  }
  s = write_header(written_, bitmap);
  int close_err = ::close(out_.fd.release()) == 0 ? 0 : errno;
  if (!s.ok()) return s;
  if (close_err != 0) return io_error("closing", path_, close_err);
  return ok_status();
}

// The device filled up (or another write error): cut back to the last
// complete round, so every record in the file is whole and every round that
// perf sees is finished, then give features a try.
Status FileWriter::close_after_error(const Features& features) {
  uint64_t keep = round_end_;
  const uint64_t no_features[4] = {};
  Error err = first_error_;
  if (out_.regular && ::ftruncate(out_.fd.get(), static_cast<off_t>(data_offset_ + keep)) != 0) {
    out_.fd.reset();
    return err;
  }
  if (keep == 0) {
    // Nothing complete was recorded. perf refuses a data section of size 0,
    // so the data becomes one FINISHED_ROUND record (the blocks the cut
    // freed make room for it); if even that fails, no file is left.
    perf_event_header round{perf::kRecordFinishedRound, 0, sizeof(perf_event_header)};
    if (!out_.regular ||
        pwrite_all(out_.fd.get(), as_bytes_of(&round, sizeof round), data_offset_) != 0) {
      err.message +=
          out_.regular ? "; nothing was recorded, so no file is left" : "; nothing was recorded";
      abandon();
      return err;
    }
    keep = sizeof round;
    err.message += "; nothing was recorded before it: the file holds no samples";
  } else {
    char kept[64];
    std::snprintf(kept, sizeof kept, "; kept %.1f MB up to the last complete round",
                  static_cast<double>(keep) / 1e6);
    err.message += kept;
  }
  if (!write_header(keep, no_features).ok()) {
    out_.fd.reset();
    return err;
  }
  uint64_t bitmap[4] = {};
  if (write_features(features, keep, bitmap).ok()) {
    (void)write_header(keep, bitmap);
  } else if (out_.regular) {
    (void)::ftruncate(out_.fd.get(), static_cast<off_t>(data_offset_ + keep));
    (void)write_header(keep, no_features);
  }
  out_.fd.reset();
  return err;
}

void FileWriter::abandon() {
  abandon_output(out_);
  failed_ = true;
}

}  // namespace bpfprof::perfdata
