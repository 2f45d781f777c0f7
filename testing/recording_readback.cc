// SPDX-License-Identifier: Apache-2.0
#include "testing/recording_readback.h"

#include <fstream>

#include <gtest/gtest.h>

#include "perf/records.h"

namespace bpfprof::testing {

Recording read_recording(const std::string& path) {
  Recording rec;
  auto reader = perfdata::FileReader::open(path);
  EXPECT_TRUE(reader.ok()) << (reader.ok() ? "" : reader.error().to_string());
  if (!reader.ok()) return rec;

  auto status = reader->for_each_record([&](const perf::RecordView& r, uint64_t offset) {
    rec.records++;
    const perfdata::FileAttr* attr = reader->attr_for(r);
    if (!attr) {
      ADD_FAILURE() << "record of type " << r.header.type << " at " << offset << " has no attr";
      return;
    }
    const perf::SampleLayout& layout = attr->layout;
    switch (r.header.type) {
      case perf::kRecordKsymbol: {
        auto k = perf::Ksymbol::parse(r, layout);
        ASSERT_TRUE(k.ok()) << k.error().to_string();
        rec.ksymbols.push_back({k->sample_id.time, k->addr, k->len, k->ksym_type, k->unregister(),
                                std::string(k->name)});
        break;
      }
      case perf::kRecordBpfEvent: {
        auto b = perf::BpfEvent::parse(r, layout);
        ASSERT_TRUE(b.ok()) << b.error().to_string();
        bpf::Tag tag;
        std::copy(std::begin(b->tag), std::end(b->tag), tag.begin());
        rec.bpf_events.push_back({b->sample_id.time, b->type, b->id, bpf::tag_hex(tag)});
        break;
      }
      case perf::kRecordSample: {
        auto s = perf::Sample::parse(r, layout);
        ASSERT_TRUE(s.ok()) << s.error().to_string();
        rec.samples.push_back({s->time, s->ip, s->pid, s->tid});
        break;
      }
      case perf::kRecordMmap:
      case perf::kRecordMmap2:
        if (layout.time_of(r).value_or(0) == 0) rec.synthesized_mmaps++;
        break;
      default:
        break;
    }
  });
  EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().to_string());
  for (const auto& p : reader->features().bpf_prog_info) rec.prog_info[p.id()] = p;
  for (const auto& b : reader->features().bpf_btf) rec.btf_sizes[b.id] = b.data.size();
  return rec;
}

std::vector<TruthProgram> read_truth(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no truth file " << path;
  std::vector<TruthProgram> out;
  if (!in.good()) return out;
  nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& p : j.at("programs")) {
    TruthProgram t;
    t.id = p.at("id").get<uint32_t>();
    t.name = p.at("name").get<std::string>();
    t.tag = p.at("tag").get<std::string>();
    t.kind = p.at("kind").get<std::string>();
    t.load_ns = p.at("load_ns").get<uint64_t>();
    t.unload_ns = p.at("unload_ns").get<uint64_t>();
    t.load_duration_ns = p.value("load_duration_ns", uint64_t{0});
    t.load_tid = p.value("load_tid", uint32_t{0});
    for (const auto& f : p.at("functions")) {
      t.functions.push_back(
          {f.at("ksym").get<std::string>(), f.at("addr").get<uint64_t>(), f.at("len").get<uint32_t>()});
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace bpfprof::testing
