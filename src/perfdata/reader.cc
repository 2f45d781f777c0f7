// SPDX-License-Identifier: Apache-2.0
// FileReader: opening (mmap, or stdin read whole), the file-mode header,
// attrs and feature table. Structure errors (header, attrs, ids, data bounds,
// feature table) fail the open; a feature payload that does not decode is kept
// as a soft error so the records stay readable. Pipe mode is in pipe.cc, the
// record walk in record_walk.cc. Layout: perf-data-format.md sections 1-3, 8.
#include "perfdata/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "base/unique_fd.h"
#include "perfdata/file_format.h"
#include "perfdata/in_stream.h"

namespace bpfprof::perfdata {

namespace {

constexpr uint64_t kOldHeaderSize = 72;  // before adds_features: no features
constexpr uint64_t kAttrSizeVer0 = 64;

// [offset, offset + size) lies inside a file of `file_size` bytes.
bool in_file(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

Error section_error(uint64_t at, const std::string& what, const FileSection& s,
                    uint64_t file_size) {
  return make_error_at(Errc::kTruncated, at,
                       what + " section [" + std::to_string(s.offset) + ", +" +
                           std::to_string(s.size) + ") exceeds file size " +
                           std::to_string(file_size));
}

bool overlap(const FileSection& a, const FileSection& b) {
  return a.size != 0 && b.size != 0 && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

// What a feature section `s` (inside the file) shares bytes with: the header,
// the attrs, the data, or what `taken` lists (the feature table, the features
// decoded before it).
std::optional<std::string> overlapped(
    const FileSection& s, const FileHeader& h,
    const std::vector<std::pair<std::string, FileSection>>& taken) {
  if (overlap(s, {0, kFileHeaderSize})) return "the file header";
  if (overlap(s, h.attrs)) return "the attr section";
  if (overlap(s, h.data)) return "the data section";
  for (const auto& [name, t] : taken) {
    if (overlap(s, t)) return name;
  }
  return std::nullopt;
}

// Reads all of `fd` (stdin, a pipe, a FIFO) into memory.
Result<std::shared_ptr<std::vector<std::byte>>> read_all(int fd, const std::string& path) {
  auto out = std::make_shared<std::vector<std::byte>>();
  size_t used = 0;
  for (;;) {
    if (out->size() - used < (1u << 20)) out->resize(std::max<size_t>(out->size() * 2, 4u << 20));
    ssize_t n = ::read(fd, out->data() + used, out->size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_sys_error("reading " + path, errno);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  out->resize(used);
  out->shrink_to_fit();
  return out;
}

}  // namespace

Result<FileReader> FileReader::open(const std::string& path) {
  const bool is_stdin = path == "-";
  UniqueFd owned(is_stdin ? -1 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!is_stdin && !owned.valid()) return make_sys_error("opening " + path, errno);
  const int fd = is_stdin ? STDIN_FILENO : owned.get();
  const std::string name = is_stdin ? std::string("stdin") : path;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_sys_error("stat " + name, errno);
  FileReader r;
  if (S_ISREG(st.st_mode) && !is_stdin) {
    const size_t len = static_cast<size_t>(st.st_size);
    if (len == 0) return make_error_at(Errc::kTruncated, 0, name + ": empty file");
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return make_sys_error("mapping " + name, errno);
    r.mapping_ = std::shared_ptr<void>(p, [len](void* q) { ::munmap(q, len); });
    r.file_ = Bytes(static_cast<const std::byte*>(p), len);
    r.mapped_ = true;
    r.fd_ = std::make_shared<const UniqueFd>(std::move(owned));
  } else {
    // A pipe cannot be mapped; the simplest correct thing is one copy.
    BPFPROF_ASSIGN_OR_RETURN(auto bytes, read_all(fd, name));
    if (bytes->empty()) return make_error_at(Errc::kTruncated, 0, name + ": empty input");
    r.file_ = Bytes(bytes->data(), bytes->size());
    r.mapping_ = std::move(bytes);
  }
  Status s = r.parse();
  if (!s.ok()) return std::move(s).error().with_context(name);
  return r;
}

Result<FileReader> FileReader::from_bytes(Bytes data) {
  FileReader r;
  r.file_ = data;
  BPFPROF_TRY(r.parse());
  return r;
}

bool FileReader::has_feature(int feat) const { return feature_bit(features_bitmap_, feat); }

void FileReader::drop_pages(uint64_t begin, uint64_t end) const {
  if (!mapped_) return;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // Only whole pages inside the range: a neighbour's bytes may be in use.
  const uint64_t from = (begin + page - 1) / page * page;
  const uint64_t to = std::min<uint64_t>(end, file_.size()) / page * page;
  if (from >= to) return;
  // Advice only: a failure leaves the pages resident, nothing else.
  (void)::madvise(const_cast<std::byte*>(file_.data()) + from, to - from, MADV_DONTNEED);
}

Status FileReader::parse() {
  ByteCursor c(file_);
  BPFPROF_ASSIGN_OR_RETURN(uint64_t magic, c.u64("magic"));
  if (magic == kMagicSwapped)
    return make_error_at(Errc::kUnsupported, 0, "big-endian perf.data not supported");
  if (magic != kMagic) {
    if (std::memcmp(file_.data(), "PERFFILE", 8) == 0)
      return make_error_at(Errc::kUnsupported, 0, "perf.data version 1 not supported");
    return make_error_at(Errc::kBadMagic, 0, "not a perf.data file");
  }
  BPFPROF_ASSIGN_OR_RETURN(uint64_t header_size, c.u64("header size"));
  // perf checks for the pipe header first, even on regular files.
  if (header_size == kPipeHeaderSize) return parse_pipe();
  if (header_size != kFileHeaderSize && header_size != kOldHeaderSize)
    return make_error_at(Errc::kBadRecord, 8,
                         "header size " + std::to_string(header_size) + " is not 104");
  return parse_file();
}

Status FileReader::parse_file() {
  const uint64_t file_size = file_.size();
  const uint64_t header_size = load_unaligned<uint64_t>(file_.data() + 8);
  FileHeader h;
  BPFPROF_ASSIGN_OR_RETURN(Bytes hb, ByteCursor(file_).bytes(header_size, "file header"));
  std::memcpy(&h, hb.data(), std::min<size_t>(header_size, sizeof h));
  if (header_size == kOldHeaderSize) std::memset(h.adds_features, 0, sizeof h.adds_features);
  std::memcpy(features_bitmap_, h.adds_features, sizeof features_bitmap_);

  // Attrs: stride attr_size, the ids section in the last 16 bytes of each entry.
  if (h.attr_size < kAttrSizeVer0 + sizeof(FileSection))
    return make_error_at(Errc::kBadRecord, 16,
                         "attr_size " + std::to_string(h.attr_size) + " below 80");
  if (!in_file(h.attrs.offset, h.attrs.size, file_size))
    return section_error(24, "attr", h.attrs, file_size);
  // perf counts attrs as attrs.size / attr_size: a size that leaves a
  // remainder (or no attr at all) would silently drop events and leave
  // every record without its attr.
  if (h.attrs.size == 0)
    return make_error_at(Errc::kBadRecord, 32, "attrs.size is 0: the file has no events");
  if (h.attrs.size % h.attr_size != 0)
    return make_error_at(Errc::kBadRecord, 16,
                         "attr_size " + std::to_string(h.attr_size) +
                             " does not divide attrs.size " + std::to_string(h.attrs.size));
  const uint64_t nr_attrs = h.attrs.size / h.attr_size;
  const uint64_t max_attr_bytes = h.attr_size - sizeof(FileSection);
  for (uint64_t i = 0; i < nr_attrs; ++i) {
    const uint64_t at = h.attrs.offset + i * h.attr_size;
    Bytes entry = file_.subspan(at, h.attr_size);
    uint32_t attr_bytes = load_unaligned<uint32_t>(entry.data() + 4);
    if (attr_bytes == 0) attr_bytes = kAttrSizeVer0;  // perf's rule for ancient files
    if (attr_bytes < kAttrSizeVer0 || attr_bytes > max_attr_bytes)
      return make_error_at(Errc::kBadRecord, at + 4,
                           "attr.size " + std::to_string(attr_bytes) + " does not fit attr_size " +
                               std::to_string(h.attr_size));
    perf_event_attr attr{};
    // Newer writers' larger attrs: keep the fields we know, the rest is zero.
    std::memcpy(&attr, entry.data(), std::min<size_t>(attr_bytes, sizeof attr));
    const auto ids = load_unaligned<FileSection>(entry.data() + max_attr_bytes);
    if (!in_file(ids.offset, ids.size, file_size))
      return section_error(at + max_attr_bytes, "ids", ids, file_size);
    std::vector<uint64_t> id_list(ids.size / 8);
    for (uint64_t k = 0; k < id_list.size(); ++k)
      id_list[k] = load_unaligned<uint64_t>(file_.data() + ids.offset + 8 * k);
    BPFPROF_TRY(add_attr(attr, std::move(id_list), at));
  }

  // Data; a header never finalised (data.size 0, no features) means the
  // recorder died: the data runs to the end of the file.
  data_offset_ = h.data.offset;
  data_size_ = h.data.size;
  const bool no_features =
      !(h.adds_features[0] | h.adds_features[1] | h.adds_features[2] | h.adds_features[3]);
  if (data_size_ == 0 && no_features && data_offset_ < file_size) {
    truncated_header_ = true;
    data_size_ = file_size - data_offset_;
  }
  if (!in_file(data_offset_, data_size_, file_size))
    return section_error(40, "data", h.data, file_size);

  // Feature table: one section per set bit, ascending, right after the data.
  const uint64_t table_at = data_offset_ + data_size_;
  uint64_t nr_feats = 0;
  for (uint64_t w : features_bitmap_) nr_feats += std::popcount(w);
  // None: the recorder did not close the file (killed); what it learned is
  // in the data as in-stream records.
  if (nr_feats == 0) return take_in_stream_features();
  if (!in_file(table_at, nr_feats * sizeof(FileSection), file_size))
    return make_error_at(Errc::kTruncated, table_at,
                         "feature table of " + std::to_string(nr_feats) +
                             " entries exceeds file size " + std::to_string(file_size));
  std::vector<std::string> event_names;
  // Sections decoded so far, the table first.
  std::vector<std::pair<std::string, FileSection>> taken = {
      {"the feature table", FileSection{table_at, nr_feats * sizeof(FileSection)}}};
  uint64_t entry_at = table_at;
  for (int feat = 0; feat < kFeatureBits; ++feat) {
    // Every set bit owns a table entry, even the reserved bit 0.
    if (!((features_bitmap_[feat / 64] >> (feat % 64)) & 1)) continue;
    const auto s = load_unaligned<FileSection>(file_.data() + entry_at);
    entry_at += sizeof(FileSection);
    if (feat == 0) continue;
    if (!in_file(s.offset, s.size, file_size)) {
      damaged_features_.insert(feat);
      feature_errors_.push_back(section_error(entry_at - sizeof(FileSection),
                                              "feature " + std::to_string(feat), s, file_size));
      continue;
    }
    if (auto other = overlapped(s, h, taken)) {
      damaged_features_.insert(feat);
      feature_errors_.push_back(make_error_at(
          Errc::kBadRecord, entry_at - sizeof(FileSection),
          "feature " + std::to_string(feat) + " section [" + std::to_string(s.offset) + ", +" +
              std::to_string(s.size) + ") overlaps " + *other));
      continue;
    }
    taken.emplace_back("feature " + std::to_string(feat), s);
    decode_one_feature(feat, file_.subspan(s.offset, s.size), s.offset, event_names);
  }
  if (auto ref = kallsyms_in_stream_ref(features_.kallsyms_packed)) {
    const uint64_t at = features_.kallsyms_packed_at;
    features_.kallsyms_packed = {};
    if (Status st = take_kallsyms_in_stream(ref->first, ref->second, at); !st.ok()) {
      damaged_features_.insert(kFeatBpfprofKallsyms);
      feature_errors_.push_back(std::move(st).error());
    }
  }
  // EVENT_DESC names go to the attrs by position (perf does the same).
  for (size_t i = 0; i < event_names.size() && i < attrs_.size(); ++i)
    attrs_[i].name = std::move(event_names[i]);
  attach_maps(features_.bpf_maps, features_.bpf_prog_info);
  attach_metadata(features_.bpf_metadata, features_.bpf_prog_info);
  return ok_status();
}

Status FileReader::add_attr(const perf_event_attr& attr, std::vector<uint64_t> ids, uint64_t at) {
  FileAttr fa;
  fa.attr = attr;
  auto layout = perf::SampleLayout::from_attr(fa.attr);
  if (!layout.ok()) {
    Error e = std::move(layout).error().with_context("attr " + std::to_string(attrs_.size()));
    e.offset = at;
    return e;
  }
  fa.layout = std::move(layout).value();
  for (uint64_t id : ids) {
    if (attr_by_id_.emplace(id, attrs_.size()).second) few_ids_.push_back({id, attrs_.size()});
  }
  fa.ids = std::move(ids);
  attrs_.push_back(std::move(fa));
  return ok_status();
}

// Section 250 of version 4: the snapshot is the blob of the in-stream
// records at [offset, offset + size) of the data.
Status FileReader::take_kallsyms_in_stream(uint64_t offset, uint64_t size, uint64_t section_at) {
  const uint64_t data_end = data_offset_ + data_size_;
  if (offset < data_offset_ || offset > data_end || size > data_end - offset) {
    return make_error_at(Errc::kBadRecord, section_at,
                         "feature 250 refers to records at [" + std::to_string(offset) + ", +" +
                             std::to_string(size) + ") outside the data");
  }
  const Bytes records = file_.subspan(offset, size);
  InStreamCollector collector;
  for (size_t pos = 0; pos < records.size();) {
    BPFPROF_ASSIGN_OR_RETURN(perf::RecordView r, perf::record_at(records, pos, offset));
    if (!is_in_stream(r)) {
      return make_error_at(Errc::kBadRecord, offset + pos,
                           "feature 250 refers to a record that is not in-stream");
    }
    BPFPROF_TRY(collector.add(r));
    pos += r.header.size;
  }
  BPFPROF_TRY(collector.finish());
  if (collector.blobs().size() != 1 || collector.blobs()[0].feat != kFeatBpfprofKallsyms) {
    return make_error_at(Errc::kBadRecord, offset,
                         "feature 250 refers to records that are not one kallsyms snapshot");
  }
  features_.kallsyms_packed = owned_blobs_.emplace_back(std::move(collector.blobs()[0].bytes));
  features_.kallsyms_packed_at = offset + kInStreamHeaderSize;
  return ok_status();
}

Status FileReader::take_in_stream_features() {
  InStreamCollector collector;
  const Bytes data = file_.subspan(data_offset_, data_size_);
  for (size_t pos = 0; pos < data.size();) {
    auto r = perf::record_at(data, pos, data_offset_);
    if (!r.ok()) break;  // the record walk reports it
    if (is_in_stream(*r)) {
      if (Status s = collector.add(*r); !s.ok()) feature_errors_.push_back(std::move(s).error());
    }
    pos += r->header.size;
    const uint64_t extra = trailing_payload(r->header.type, r->bytes);
    if (extra > data.size() - pos) break;
    pos += static_cast<size_t>(extra);
  }
  if (Status s = collector.finish(); !s.ok()) feature_errors_.push_back(std::move(s).error());
  damaged_features_.insert(collector.dropped().begin(), collector.dropped().end());
  std::vector<std::string> event_names;
  std::vector<bpf::ProgInfo> infos;
  std::vector<bpf::BtfBlob> btfs;
  std::optional<AttachSection> attach;
  std::optional<OwnersSection> owners;
  for (InStreamCollector::Blob& b : collector.blobs()) {
    set_feature_bit(features_bitmap_, b.feat);
    features_in_stream_ = true;
    // Kept by the reader: views into it (the kallsyms snapshot) stay valid.
    const Bytes payload = owned_blobs_.emplace_back(std::move(b.bytes));
    // Offsets in its errors: the payload starts after the first record's
    // in-stream header (exact within the first chunk; a blob of several
    // chunks has their headers in between).
    decode_one_feature(b.feat, payload, b.at + kInStreamHeaderSize, event_names);
    // BPF entries arrive in many blobs, one per round that learned some.
    if (b.feat == kFeatBpfProgInfo) {
      for (bpf::ProgInfo& p : features_.bpf_prog_info) infos.push_back(std::move(p));
      features_.bpf_prog_info.clear();
    } else if (b.feat == kFeatBpfBtf) {
      for (bpf::BtfBlob& t : features_.bpf_btf) btfs.push_back(std::move(t));
      features_.bpf_btf.clear();
    } else if (b.feat == kFeatBpfprofAttach && features_.attach) {
      if (!attach) attach.emplace();
      for (AttachEntry& e : features_.attach->entries) attach->entries.push_back(std::move(e));
      attach->links_lost = std::max(attach->links_lost, features_.attach->links_lost);
      attach->perf_fds_lost = std::max(attach->perf_fds_lost, features_.attach->perf_fds_lost);
      attach->fd_dirs_unreadable =
          std::max(attach->fd_dirs_unreadable, features_.attach->fd_dirs_unreadable);
      features_.attach.reset();
    } else if (b.feat == kFeatBpfprofOwners && features_.owners) {
      // The holders at start, then the loaders' cgroups as they are learned.
      if (!owners) owners.emplace();
      OwnersSection& o = *features_.owners;
      owners->scanned.insert(owners->scanned.end(), o.scanned.begin(), o.scanned.end());
      owners->holders.insert(owners->holders.end(), o.holders.begin(), o.holders.end());
      owners->loaders.insert(owners->loaders.end(), o.loaders.begin(), o.loaders.end());
      features_.owners.reset();
    }
  }
  if (attach) features_.attach = std::move(attach);
  if (owners) features_.owners = std::move(owners);
  // Keyed by id, the first entry wins (as in the sections).
  std::set<uint32_t> seen;
  for (bpf::ProgInfo& p : infos) {
    if (seen.insert(p.id()).second) features_.bpf_prog_info.push_back(std::move(p));
  }
  seen.clear();
  for (bpf::BtfBlob& t : btfs) {
    if (seen.insert(t.id).second) features_.bpf_btf.push_back(std::move(t));
  }
  for (size_t i = 0; i < event_names.size() && i < attrs_.size(); ++i)
    attrs_[i].name = std::move(event_names[i]);
  attach_maps(features_.bpf_maps, features_.bpf_prog_info);
  attach_metadata(features_.bpf_metadata, features_.bpf_prog_info);
  return ok_status();
}

void FileReader::decode_one_feature(int feat, Bytes payload, uint64_t at,
                                    std::vector<std::string>& event_names) {
  // perf 6.1 numbers end below kFeatLast61; ours sit far above.
  if (feat >= kFeatLast61 && (feat < kFeatBpfprofMetadata || feat > kFeatBpfprofVdso)) {
    stats_.unknown_features++;
  }
  Status st = decode_feature(feat, payload, at, features_, event_names);
  if (!st.ok()) {
    damaged_features_.insert(feat);
    feature_errors_.push_back(std::move(st).error());
  }
}

const FileAttr* FileReader::attr_for(const perf::RecordView& r) const {
  if (attrs_.empty()) return nullptr;
  if (attrs_.size() == 1) return &attrs_[0];
  // All attrs of a valid file agree on where the id sits (IDENTIFIER).
  std::optional<uint64_t> id = attrs_[0].layout.id_of(r);
  if (!id || *id == 0) return &attrs_[0];
  // A recording has an id per event and CPU: mostly few, scanned in order.
  if (few_ids_.size() <= kFewIds) {
    for (const auto& [known, index] : few_ids_) {
      if (known == *id) return &attrs_[index];
    }
    return nullptr;
  }
  auto it = attr_by_id_.find(*id);
  return it == attr_by_id_.end() ? nullptr : &attrs_[it->second];
}

}  // namespace bpfprof::perfdata
