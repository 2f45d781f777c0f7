// SPDX-License-Identifier: Apache-2.0
// FileReader::for_each_record: the data section (or pipe stream) in file
// order. COMPRESSED records (perf record -z, perf-data-format.md 6.1) form one
// zstd stream per file; their output is parsed as records with a record that
// straddles two COMPRESSED records carried over. Memory stays bounded: output
// is produced into a fixed window, whole records are handed out, and only a
// partial record (< 64 KiB) is kept between steps.
#include <zstd.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "perfdata/file_format.h"
#include "perfdata/in_stream.h"
#include "perfdata/reader.h"

namespace bpfprof::perfdata {

using RecordFn = std::function<void(const perf::RecordView&, uint64_t)>;

namespace {

constexpr size_t kMaxRecord = 65535;
constexpr size_t kWindow = 256 << 10;
// Plain files are read in pieces of this size: a few times the largest
// record, small enough to stay in the CPU's cache while it is parsed.
constexpr size_t kReadWindow = 512 << 10;
// Bound on one COMPRESSED record's output: perf never puts more than its
// comp_mmap_len of ring data behind one; without the feature, a generous cap
// that still stops a hostile stream from expanding forever.
constexpr uint64_t kDefaultOutputLimit = 64ull << 20;
constexpr uint64_t kMaxOutputLimit = 256ull << 20;

struct DStreamFree {
  void operator()(ZSTD_DStream* s) const { ZSTD_freeDStream(s); }
};

}  // namespace

// Walks one input; the friend of FileReader that owns the zstd state.
class RecordWalker {
 public:
  RecordWalker(const FileReader& reader, const RecordFn& fn, bool ranged = false,
               ReaderStats* skipped = nullptr, FileReader::HoldBytes* hold = nullptr)
      : reader_(reader), fn_(fn), ranged_(ranged), skipped_(skipped), hold_(hold) {}

  Status walk();
  // The records starting in data bytes [begin, end), without COMPRESSED
  // records and without touching stats() (so walks may run in parallel).
  Status walk_range(size_t begin, size_t end);

 private:
  // The data bytes from `pos` on that are at hand: at least `n` of them
  // unless the data section (or the file) ends first. Opened files are read
  // with pread into read_buf_ (n <= kReadWindow), or into *hold_ (the whole
  // range at once); other inputs are in memory.
  Result<Bytes> bytes_at(size_t pos, size_t n);
  // Reads data bytes [pos, pos + n) of an opened file into `to`; fewer if
  // the file became shorter than its header says.
  Result<size_t> pread_data(size_t pos, size_t n, std::byte* to) const;
  // One whole record at data byte `pos`: COMPRESSED records are decompressed,
  // others delivered; `pos` moves past it and any payload that follows it.
  // False: stop the walk (a killed recorder's cut-off tail).
  Result<bool> step(const perf::RecordView& r, size_t& pos);
  // Hands one whole record to the callback, or counts it as skipped.
  void deliver(const perf::RecordView& r, uint64_t at, bool nested);
  Status decompress(const perf::RecordView& r);
  // Hands out the whole records at the front of the window; keeps the rest.
  Status drain_window(uint64_t at);
  Status finish();

  const FileReader& reader_;
  const RecordFn& fn_;
  std::unique_ptr<ZSTD_DStream, DStreamFree> zstd_;
  std::vector<std::byte> window_;
  // Not zeroed (pread fills it): zeroing 512 KiB first was a quarter of a
  // small report's page faults.
  std::unique_ptr<std::byte[]> read_buf_;
  size_t read_at_ = 0, read_len_ = 0;  // data bytes [read_at_, read_at_ + read_len_) are in read_buf_
  size_t have_ = 0;         // bytes of the window holding output not yet handed out
  uint64_t skip_ = 0;       // trailing payload of a decompressed record still to drop
  uint64_t stream_pos_ = 0; // decompressed bytes handed out or dropped so far
  uint64_t last_compressed_at_ = 0;
  const bool ranged_;
  ReaderStats* const skipped_;  // ranged walks: where skipped records are counted, if anywhere
  FileReader::HoldBytes* const hold_;   // ranged walks: the range read whole, if given
  size_t hold_at_ = 0, hold_len_ = 0;   // data bytes [hold_at_, hold_at_ + hold_len_) are in *hold_
  size_t range_end_ = 0;                // the walked range's end (data bytes)
  bool hold_read_ = false;
};

void RecordWalker::deliver(const perf::RecordView& r, uint64_t at, bool nested) {
  ReaderStats& stats = reader_.stats_;
  const uint32_t type = r.header.type;
  // Header records; type 65 (HEADER_EVENT_TYPE) carries bpfprof's in-stream
  // features, taken at open.
  if (type == perf::kRecordHeaderAttr || type == perf::kRecordHeaderFeature ||
      type == kRecordInStream)
    return;
  if (ranged_) {
    // The full walk counted what is skipped here, or the caller counts it.
    if (known_record_type(type)) {
      fn_(r, at);
    } else if (skipped_) {
      skipped_->unknown_record_types[type]++;
      skipped_->records_skipped++;
    }
    return;
  }
  if (!known_record_type(type)) {
    stats.unknown_record_types[type]++;
    stats.records_skipped++;
    return;
  }
  if (nested && type == perf::kRecordCompressed) {
    stats.records_skipped++;
    return;
  }
  fn_(r, at);
}

Status RecordWalker::walk() {
  BPFPROF_TRY(walk_range(0, reader_.data_size_));
  return finish();
}

Result<bool> RecordWalker::step(const perf::RecordView& r, size_t& pos) {
  const FileReader& rd = reader_;
  if (r.header.type == perf::kRecordCompressed) {
    if (ranged_) {
      return make_error_at(Errc::kUnsupported, r.offset,
                           "COMPRESSED record in a ranged walk (one zstd stream: walk it whole)");
    }
    BPFPROF_TRY(decompress(r));
  } else {
    deliver(r, r.offset, false);
  }
  pos += r.header.size;
  const uint64_t extra = trailing_payload(r.header.type, r.bytes);
  if (extra > rd.data_size_ - pos) {
    if (rd.truncated_header_) return false;
    return make_error_at(Errc::kTruncated, rd.data_offset_ + pos,
                         "payload of " + std::to_string(extra) +
                             " bytes after the record exceeds the data section");
  }
  pos += static_cast<size_t>(extra);
  return true;
}

Result<size_t> RecordWalker::pread_data(size_t pos, size_t n, std::byte* to) const {
  const FileReader& rd = reader_;
  size_t got = 0;
  while (got < n) {
    const ssize_t r =
        ::pread(rd.fd_->get(), to + got, n - got, static_cast<off_t>(rd.data_offset_ + pos + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return make_sys_error(
          "reading the data section at byte offset " + std::to_string(rd.data_offset_ + pos + got),
          errno);
    }
    if (r == 0) break;  // the file became shorter than its header says
    got += static_cast<size_t>(r);
  }
  return got;
}

Result<Bytes> RecordWalker::bytes_at(size_t pos, size_t n) {
  const FileReader& rd = reader_;
  if (!rd.fd_) return rd.file_.subspan(rd.data_offset_ + pos, rd.data_size_ - pos);
  if (hold_) {
    // The first call reads the range whole, and the largest record that
    // can start at its end: every record the walk hands out lies inside.
    // What it holds from `pos` is all there is (fewer than `n` bytes only
    // where the data or the file ends).
    (void)n;
    if (!hold_read_) {
      const size_t want = std::min(range_end_ + kMaxRecord, rd.data_size_) - hold_at_;
      // Grown, never shrunk (HoldBytes' growth writes nothing, but a
      // shrink and regrow would reallocate).
      if (hold_->size() < want) hold_->resize(want);
      BPFPROF_ASSIGN_OR_RETURN(hold_len_, pread_data(hold_at_, want, hold_->data()));
      hold_read_ = true;
    }
    if (pos < hold_at_ || pos - hold_at_ > hold_len_) return Bytes();
    return Bytes(hold_->data() + (pos - hold_at_), hold_len_ - (pos - hold_at_));
  }
  if (pos < read_at_ || pos - read_at_ + n > read_len_) {
    if (!read_buf_) {
      read_buf_ = std::make_unique_for_overwrite<std::byte[]>(kReadWindow);
      prefault(read_buf_.get(), kReadWindow);  // pread would fault its pages one by one
    }
    const size_t want = std::min(kReadWindow, rd.data_size_ - pos);
    BPFPROF_ASSIGN_OR_RETURN(read_len_, pread_data(pos, want, read_buf_.get()));
    read_at_ = pos;
  }
  return Bytes(read_buf_.get() + (pos - read_at_), read_len_ - (pos - read_at_));
}

Status RecordWalker::walk_range(size_t begin, size_t end) {
  const FileReader& rd = reader_;
  constexpr size_t kHeader = sizeof(perf::RecordHeader);
  size_t pos = begin;
  hold_at_ = begin;
  range_end_ = end;
  perf::RecordView view;
  while (pos < end) {
    BPFPROF_ASSIGN_OR_RETURN(Bytes held, bytes_at(pos, kHeader));
    // Every whole record already held, without asking for bytes again.
    size_t used = 0;
    while (pos < end && held.size() - used >= kHeader) {
      view.header = load_unaligned<perf::RecordHeader>(held.data() + used);
      if (view.header.size < kHeader || view.header.size > held.size() - used) break;
      view.offset = rd.data_offset_ + pos;
      view.bytes = held.subspan(used, view.header.size);
      // Kernel records (every SAMPLE among them) are known, never COMPRESSED
      // and carry no payload after them: handed out without step()'s checks.
      if (view.header.type >= perf::kRecordMmap && view.header.type <= perf::kRecordAuxOutputHwId) {
        fn_(view, view.offset);
        pos += view.header.size;
        used += view.header.size;
        continue;
      }
      const size_t before = pos;
      BPFPROF_ASSIGN_OR_RETURN(bool go_on, step(view, pos));
      if (!go_on) return ok_status();
      used += pos - before;  // a trailing payload may end beyond what is held
      if (used > held.size()) break;
    }
    if (used != 0) continue;
    bool whole = false;
    if (held.size() >= kHeader) {
      view.header = load_unaligned<perf::RecordHeader>(held.data());
      if (view.header.size >= kHeader && view.header.size > held.size()) {
        BPFPROF_ASSIGN_OR_RETURN(held, bytes_at(pos, view.header.size));
      }
      whole = view.header.size >= kHeader && view.header.size <= held.size();
    }
    if (whole) {
      view.offset = rd.data_offset_ + pos;
      view.bytes = held.first(view.header.size);
    } else {
      // What is held from pos is all there is: record_at names what is wrong.
      auto checked = perf::record_at(held, 0, rd.data_offset_ + pos);
      if (checked.ok()) {
        return make_error_at(Errc::kInternal, rd.data_offset_ + pos, "record walk lost its window");
      }
      // A killed recorder may leave half a record at the end of the file.
      if (rd.truncated_header_ && checked.error().code == Errc::kTruncated) break;
      return std::move(checked).error();
    }
    BPFPROF_ASSIGN_OR_RETURN(bool go_on, step(view, pos));
    if (!go_on) break;
  }
  return ok_status();
}

Status RecordWalker::decompress(const perf::RecordView& r) {
  ReaderStats& stats = reader_.stats_;
  const uint64_t at = r.offset;
  const Features& f = reader_.features_;
  if (f.compression && f.compression->type != kCompZstd) {
    return make_error_at(Errc::kUnsupported, at,
                         "COMPRESSED record: compression type " +
                             std::to_string(f.compression->type) + " is not zstd");
  }
  uint64_t limit = kDefaultOutputLimit;
  if (f.compression && f.compression->mmap_len != 0)
    limit = std::clamp<uint64_t>(f.compression->mmap_len, kMaxRecord, kMaxOutputLimit);
  if (!zstd_) {
    zstd_.reset(ZSTD_createDStream());
    if (!zstd_) return make_error_at(Errc::kInternal, at, "ZSTD_createDStream failed");
    ZSTD_initDStream(zstd_.get());
    window_.resize(kMaxRecord + kWindow);
  }
  stats.compressed_records++;
  last_compressed_at_ = at;
  ZSTD_inBuffer in{r.bytes.data() + 8, r.bytes.size() - 8, 0};
  uint64_t produced = 0;
  for (;;) {
    ZSTD_outBuffer out{window_.data(), window_.size(), have_};
    const size_t ret = ZSTD_decompressStream(zstd_.get(), &out, &in);
    if (ZSTD_isError(ret)) {
      return make_error_at(Errc::kBadRecord, at,
                           std::string("COMPRESSED record: zstd: ") + ZSTD_getErrorName(ret));
    }
    const size_t got = out.pos - have_;
    produced += got;
    stats.decompressed_bytes += got;
    if (produced > limit) {
      return make_error_at(Errc::kBadRecord, at,
                           "COMPRESSED record decompresses to more than " +
                               std::to_string(limit) + " bytes");
    }
    have_ = out.pos;
    const bool full = out.pos == out.size;
    BPFPROF_TRY(drain_window(at));
    // Done when the input is used up and zstd did not stop for lack of room.
    if (in.pos == in.size && !full) break;
    if (got == 0 && in.pos == in.size && have_ == window_.size()) {
      return make_error_at(Errc::kInternal, at, "decompression window stuck");
    }
  }
  return ok_status();
}

Status RecordWalker::drain_window(uint64_t at) {
  size_t pos = 0;
  for (;;) {
    if (skip_ > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, have_ - pos));
      pos += n;
      skip_ -= n;
      stream_pos_ += n;
      if (skip_ > 0) break;
    }
    if (have_ - pos < sizeof(perf::RecordHeader)) break;
    const auto h = load_unaligned<perf::RecordHeader>(window_.data() + pos);
    if (h.size < sizeof(perf::RecordHeader)) {
      return make_error_at(Errc::kBadRecord, at,
                           "decompressed record of type " + std::to_string(h.type) +
                               " at stream byte " + std::to_string(stream_pos_) + " has size " +
                               std::to_string(h.size) + " < 8");
    }
    if (h.size > have_ - pos) break;  // straddles: wait for more output
    perf::RecordView v;
    v.header = h;
    v.bytes = Bytes(window_.data() + pos, h.size);
    v.offset = at;
    deliver(v, at, true);
    pos += h.size;
    stream_pos_ += h.size;
    skip_ = trailing_payload(h.type, v.bytes);
  }
  std::memmove(window_.data(), window_.data() + pos, have_ - pos);
  have_ -= pos;
  return ok_status();
}

Status RecordWalker::finish() {
  if (have_ == 0 && skip_ == 0) return ok_status();
  if (reader_.truncated_header_) return ok_status();
  return make_error_at(Errc::kTruncated, last_compressed_at_,
                       "compressed data ends inside a record (" + std::to_string(have_) +
                           " bytes left over)");
}

Status FileReader::for_each_record(const RecordFn& fn) const {
  const uint64_t unknown_features = stats_.unknown_features;
  stats_ = ReaderStats{};
  stats_.unknown_features = unknown_features;
  RecordWalker walker(*this, fn);
  return walker.walk();
}

Status FileReader::for_each_record_in(uint64_t begin, uint64_t end, const RecordFn& fn,
                                      ReaderStats* skipped, HoldBytes* hold) const {
  const uint64_t data_end = data_offset_ + data_size_;
  if (begin < data_offset_ || begin > end || end > data_end) {
    return make_error_at(Errc::kInternal, begin,
                         "record range [" + std::to_string(begin) + ", " + std::to_string(end) +
                             ") outside the data section");
  }
  RecordWalker walker(*this, fn, /*ranged=*/true, skipped, hold);
  return walker.walk_range(static_cast<size_t>(begin - data_offset_),
                           static_cast<size_t>(end - data_offset_));
}

}  // namespace bpfprof::perfdata
