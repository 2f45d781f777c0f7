// SPDX-License-Identifier: Apache-2.0
// Test-only builders of whole perf.data inputs in memory: pipe-mode streams
// (HEADER_ATTR, HEADER_FEATURE, EVENT_UPDATE) and zstd COMPRESSED records, plus
// a small mixed record stream. Used by the reader tests and the fuzz corpus
// generator (fuzz/make_corpus.cc).
#pragma once

#include <zstd.h>

#include <cstring>
#include <string>
#include <vector>

#include "perfdata/file_format.h"
#include "testing/perfdata_fixtures.h"
#include "testing/record_builder.h"

namespace bpfprof::testing {


inline ByteVec pipe_header() {
  ByteVec out;
  append_pod(out, perfdata::kMagic);
  append_pod(out, perfdata::kPipeHeaderSize);
  return out;
}

// HEADER_ATTR with attr.size = `attr_size` and the ids at byte `ids_at`
// (perf 6.1: attr.size 128, ids at 136).
inline ByteVec header_attr_record(const perf_event_attr& attr, const std::vector<uint64_t>& ids,
                                  uint32_t attr_size = perf::kAttrSizeWritten,
                                  size_t ids_at = 8 + perf::kAttrSizeWritten) {
  RecordWriter w(perf::kRecordHeaderAttr, 0);
  perf_event_attr a = attr;
  a.size = attr_size;
  ByteVec body(ids_at - 8);
  std::memcpy(body.data(), &a, std::min<size_t>(body.size(), sizeof a));
  w.bytes(body);
  for (uint64_t id : ids) w.u64(id);
  return w.finish();
}

inline ByteVec header_feature_record(uint64_t feat, const std::vector<std::byte>& payload) {
  RecordWriter w(perf::kRecordHeaderFeature, 0);
  w.u64(feat).bytes(ByteVec(payload.begin(), payload.end()));
  return w.finish();
}

inline ByteVec event_update_name_record(uint64_t id, std::string_view name) {
  RecordWriter w(perfdata::kRecordEventUpdate, 0);
  w.u64(perfdata::kEventUpdateName).u64(id).padded_string(name);
  return w.finish();
}

// A few records of every kind the reader cares about, attributed to the
// two_attrs() ids: synthesized COMM/KSYMBOL/BPF_EVENT, samples, a FINISHED_ROUND.
inline ByteVec mixed_records(size_t samples = 6) {
  const TrailerValues synth{7, 7, 0, 0, 0, 0};
  const TrailerValues live{7, 7, 5000, kDummyId, 0, 1};
  const uint8_t tag[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ByteVec out = concat({
      comm_record(kSampleType, 7, 7, "demo", synth),
      mmap2_record(kSampleType, {.pid = 7, .tid = 7, .start = 0x400000, .len = 0x1000,
                                 .prot = 5, .flags = 2, .filename = "/bin/demo"}, synth),
      ksymbol_record(kSampleType, 0xffffffffc0001000, 0x100, perf::kKsymTypeBpf, 0,
                     "bpf_prog_0102030405060708_demo", live),
      bpf_event_record(kSampleType, perf::kBpfEventProgLoad, 0, 42, tag, live),
      finished_round_record(),
  });
  for (size_t i = 0; i < samples; ++i) {
    SampleValues s;
    s.id = kSampleId + (i & 1);
    s.ip = 0xffffffffc0001010 + i;
    s.pid = s.tid = 7;
    s.time = 6000 + i;
    s.cpu = static_cast<uint32_t>(i & 1);
    s.period = 1000;
    ByteVec r = sample_record(kSampleType, s, perf::kMiscKernel);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

// `records` through one zstd stream, flushed per `flush_every` input bytes,
// its output cut into COMPRESSED records of at most `max_payload` bytes (so
// decompressed records straddle COMPRESSED records), as perf record -z does.
inline ByteVec compressed_records(const ByteVec& records, size_t max_payload = 64,
                                  size_t flush_every = 100) {
  ZSTD_CStream* cs = ZSTD_createCStream();
  ZSTD_initCStream(cs, 1);
  ByteVec z(ZSTD_compressBound(records.size()) + 1024);
  size_t zlen = 0;
  for (size_t at = 0; at < records.size(); at += flush_every) {
    ZSTD_inBuffer in{records.data() + at, std::min(flush_every, records.size() - at), 0};
    ZSTD_outBuffer out{z.data(), z.size(), zlen};
    while (in.pos < in.size) ZSTD_compressStream(cs, &out, &in);
    while (ZSTD_flushStream(cs, &out) != 0) {
    }
    zlen = out.pos;
  }
  ZSTD_freeCStream(cs);
  ByteVec out;
  for (size_t at = 0; at < zlen; at += max_payload) {
    const size_t n = std::min(max_payload, zlen - at);
    RecordWriter w(perf::kRecordCompressed, 0);
    w.bytes(ByteVec(z.begin() + static_cast<ptrdiff_t>(at),
                    z.begin() + static_cast<ptrdiff_t>(at + n)));
    ByteVec r = w.finish();
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

// A pipe-mode stream as perf record -o - writes it: attrs, features + end
// marker, names, then `records`.
inline ByteVec pipe_stream(const ByteVec& records, const perfdata::Features& features = {}) {
  ByteVec out = pipe_header();
  std::vector<perfdata::EventDescEntry> none;
  for (const perfdata::AttrEntry& a : two_attrs()) {
    ByteVec r = header_attr_record(a.attr, a.ids);
    out.insert(out.end(), r.begin(), r.end());
  }
  for (const auto& [feat, payload] : perfdata::encode_features(features, none)) {
    ByteVec r = header_feature_record(static_cast<uint64_t>(feat), payload);
    out.insert(out.end(), r.begin(), r.end());
  }
  ByteVec end = header_feature_record(perfdata::kFeatLast61, {});
  out.insert(out.end(), end.begin(), end.end());
  for (const perfdata::AttrEntry& a : two_attrs()) {
    ByteVec r = event_update_name_record(a.ids[0], a.name);
    out.insert(out.end(), r.begin(), r.end());
  }
  out.insert(out.end(), records.begin(), records.end());
  return out;
}

}  // namespace bpfprof::testing
