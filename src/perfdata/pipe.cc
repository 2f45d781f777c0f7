// SPDX-License-Identifier: Apache-2.0
// Pipe mode (`perf record -o -`, perf-data-format.md section 9): after the
// 16-byte header everything is records. What file mode keeps in the header
// arrives as records: HEADER_ATTR (attr + ids), HEADER_FEATURE (a feature
// section's payload), EVENT_UPDATE (event names). One pass over the record
// headers at open collects them, so attrs and features are known before the
// first for_each_record, wherever in the stream they sit.
#include <cstring>

#include "perfdata/file_format.h"
#include "perfdata/reader.h"

namespace bpfprof::perfdata {
namespace {

constexpr size_t kAttrSizeVer0 = 64;
// perf 6.1 reads a HEADER_ATTR's ids at 8 + sizeof(its perf_event_attr).
constexpr size_t kIdsAt61 = 8 + perf::kAttrSizeWritten;

// The attr and ids of one HEADER_ATTR record. perf up to 6.5 writes the ids at
// 8 + sizeof(the writer's attr), which is 8 + attr.size for every perf whose
// attr.size is its own struct size; 6.6+ locate them by attr.size explicitly.
// A 6.1 perf re-emitting an attr from an older file (attr.size < 128) still
// writes the ids at 136; the gap between 8 + attr.size and 136 is then the
// zeroed tail of its struct, which no kernel event id (never 0) can be.
struct HeaderAttr {
  perf_event_attr attr{};
  std::vector<uint64_t> ids;
};

Result<HeaderAttr> parse_header_attr(const perf::RecordView& r) {
  const Bytes b = r.bytes;
  if (b.size() < 8 + kAttrSizeVer0) {
    return make_error_at(Errc::kBadRecord, r.offset,
                         "HEADER_ATTR of " + std::to_string(b.size()) +
                             " bytes cannot hold a 64-byte attr");
  }
  const uint32_t attr_size = load_unaligned<uint32_t>(b.data() + 8 + 4);
  size_t ids_at = 0;
  const bool sized = attr_size >= kAttrSizeVer0 && attr_size % 8 == 0 && 8 + attr_size <= b.size();
  if (sized && attr_size < perf::kAttrSizeWritten && b.size() >= kIdsAt61) {
    bool gap_zero = true;
    for (size_t i = 8 + attr_size; i < kIdsAt61; ++i) gap_zero &= b[i] == std::byte{0};
    ids_at = gap_zero ? kIdsAt61 : 8 + attr_size;
  } else if (sized) {
    ids_at = 8 + attr_size;
  } else if (attr_size == 0 && b.size() >= kIdsAt61) {
    ids_at = kIdsAt61;  // attr.size 0 (ancient writers): perf 6.1's fixed layout
  } else if (attr_size < kAttrSizeVer0 || attr_size % 8 != 0) {
    return make_error_at(Errc::kBadRecord, r.offset + 12,
                         "HEADER_ATTR attr.size " + std::to_string(attr_size) +
                             " is not a multiple of 8 of at least 64");
  } else {
    return make_error_at(Errc::kBadRecord, r.offset + 12,
                         "HEADER_ATTR attr.size " + std::to_string(attr_size) +
                             " does not fit the record's " + std::to_string(b.size()) + " bytes");
  }
  HeaderAttr out;
  std::memcpy(&out.attr, b.data() + 8, std::min(ids_at - 8, sizeof out.attr));
  for (size_t at = ids_at; at + 8 <= b.size(); at += 8) {
    const uint64_t id = load_unaligned<uint64_t>(b.data() + at);
    if (id != 0) out.ids.push_back(id);
  }
  return out;
}

}  // namespace

Status FileReader::parse_pipe() {
  pipe_mode_ = true;
  data_offset_ = kPipeHeaderSize;
  data_size_ = file_.size() - kPipeHeaderSize;
  const Bytes data = file_.subspan(data_offset_);
  std::vector<std::string> event_names;
  std::unordered_map<uint64_t, std::string> names_by_id;
  size_t pos = 0;
  while (pos < data.size()) {
    BPFPROF_ASSIGN_OR_RETURN(perf::RecordView r, perf::record_at(data, pos, data_offset_));
    switch (r.header.type) {
      case perf::kRecordHeaderAttr: {
        BPFPROF_ASSIGN_OR_RETURN(HeaderAttr a, parse_header_attr(r));
        BPFPROF_TRY(add_attr(a.attr, std::move(a.ids), r.offset));
        break;
      }
      case perf::kRecordHeaderFeature: {
        if (r.bytes.size() < 16) {
          return make_error_at(Errc::kBadRecord, r.offset,
                               "HEADER_FEATURE of " + std::to_string(r.bytes.size()) + " bytes");
        }
        const uint64_t feat = load_unaligned<uint64_t>(r.bytes.data() + 8);
        const Bytes payload = r.bytes.subspan(16);
        // The end marker: perf's HEADER_LAST_FEATURE with no payload.
        if (payload.empty() && feat >= kFeatLast61 && feat < kFeatureBits) break;
        if (feat == 0 || feat >= kFeatureBits) {
          stats_.unknown_features++;
          break;
        }
        const int f = static_cast<int>(feat);
        set_feature_bit(features_bitmap_, f);
        decode_one_feature(f, payload, r.offset + 16, event_names);
        break;
      }
      case kRecordEventUpdate: {
        if (r.bytes.size() < 24 || load_unaligned<uint64_t>(r.bytes.data() + 8) != kEventUpdateName)
          break;
        const uint64_t id = load_unaligned<uint64_t>(r.bytes.data() + 16);
        const Bytes s = r.bytes.subspan(24);
        const char* p = reinterpret_cast<const char*>(s.data());
        names_by_id[id] = std::string(p, strnlen(p, s.size()));
        break;
      }
      default:
        break;
    }
    pos += r.header.size;
    const uint64_t extra = trailing_payload(r.header.type, r.bytes);
    if (extra > data.size() - pos) {
      return make_error_at(Errc::kTruncated, data_offset_ + pos,
                           "payload of " + std::to_string(extra) +
                               " bytes after the record exceeds the stream");
    }
    pos += static_cast<size_t>(extra);
  }
  // EVENT_DESC by position first; EVENT_UPDATE names (what perf uses in pipe
  // mode) win.
  for (size_t i = 0; i < event_names.size() && i < attrs_.size(); ++i)
    attrs_[i].name = std::move(event_names[i]);
  for (const auto& [id, name] : names_by_id) {
    auto it = attr_by_id_.find(id);
    if (it != attr_by_id_.end()) attrs_[it->second].name = name;
  }
  return ok_status();
}

}  // namespace bpfprof::perfdata
