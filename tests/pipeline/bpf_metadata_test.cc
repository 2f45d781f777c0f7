// SPDX-License-Identifier: Apache-2.0
// Programs' metadata from perf 6.17+'s BPF_METADATA records, on a recording
// built here as perf writes one: the records carry no time and name a
// program by a function's KSYMBOL name; the report lists each program's
// variables in JSON and under -v, and a record that does not parse is
// counted (bpf_metadata_bad) while the rest of the file reads. bpfprof's
// own section 248 (what its recorder reads from the programs' .rodata maps)
// merges into the same list.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/session.h"
#include "report/render.h"
#include "testing/perfdata_fixtures.h"
#include "testing/subprocess.h"

namespace bpfprof::analysis {
namespace {

using bpfprof::testing::ByteVec;
using bpfprof::testing::TrailerValues;
using Metadata = std::vector<std::pair<std::string, std::string>>;

constexpr uint32_t kPid = 7;
constexpr uint64_t kType = testing::kSampleType;

struct Prog {
  uint32_t id;
  uint64_t addr;
  std::string ksym;
};
const Prog kA{21, 0xffffffffc0001000, "bpf_prog_1515151515151515_handler"};
const Prog kB{22, 0xffffffffc0002000, "bpf_prog_1616161616161616_other"};
const Metadata kAMetadata{{"version", "\"1.2\""}, {"build", "7"}};

// What a report keeps of a record's entries: values as perf printed them.
bpf::Metadata printed(const Metadata& entries) {
  bpf::Metadata out;
  for (const auto& [key, value] : entries) {
    out.push_back({key, value, bpf::MetadataKind::kPrinted});
  }
  return out;
}

// A recording of two programs, three samples in each; BPF_METADATA for a
// (before its load, as perf synthesizes them), then `extra`; `features` at close.
std::string write_recording(const std::string& path, const std::vector<ByteVec>& extra,
                            const perfdata::Features& features = {}) {
  auto w = perfdata::FileWriter::create(path, testing::two_attrs(kType));
  if (!w.ok()) return w.error().to_string();
  auto side = [](uint64_t time) { return TrailerValues{kPid, kPid, time, testing::kDummyId, 0, 0}; };
  bool ok = w->append(testing::comm_record(kType, kPid, kPid, "agent", side(1))).ok();
  ok = ok && w->append(testing::bpf_metadata_record(kA.ksym, kAMetadata)).ok();
  for (const ByteVec& r : extra) ok = ok && w->append(r).ok();
  for (const Prog& p : {kA, kB}) {
    uint8_t tag[perf::kBpfTagSize];
    std::fill(std::begin(tag), std::end(tag), static_cast<uint8_t>(p.id - 6));
    ok = ok && w->append(testing::ksymbol_record(kType, p.addr, 0x100, perf::kKsymTypeBpf, 0,
                                                 p.ksym, side(10))).ok();
    ok = ok && w->append(testing::bpf_event_record(kType, perf::kBpfEventProgLoad, 0, p.id, tag,
                                                   side(10))).ok();
  }
  uint64_t t = 100;
  for (const Prog& p : {kA, kB}) {
    for (int i = 0; i < 3; i++) {
      testing::SampleValues v;
      v.id = testing::kSampleId;
      v.ip = p.addr + 0x10;
      v.pid = v.tid = kPid;
      v.time = t++;
      v.period = 10;
      ok = ok && w->append(testing::sample_record(kType, v, perf::kMiscKernel)).ok();
    }
  }
  if (!ok) return "append";
  Status closed = w->close(features);
  return closed.ok() ? "" : closed.error().to_string();
}

class BpfMetadataTest : public ::testing::Test {
 protected:
  ReportData report(const std::vector<ByteVec>& extra, const perfdata::Features& features = {}) {
    const std::string path = dir_.file("perf.data");
    EXPECT_EQ(write_recording(path, extra, features), "");
    auto session = Session::open(path, SessionOptions{});
    EXPECT_TRUE(session.ok()) << session.error().to_string();
    if (!session.ok()) return {};
    return aggregate(**session, AggregateOptions{});
  }
  static const ProgramRow& row(const ReportData& d, const Prog& p) {
    for (const ProgramRow& r : d.programs) {
      if (r.id == p.id) return r;
    }
    static const ProgramRow none;
    ADD_FAILURE() << "no program " << p.id;
    return none;
  }
  testing::TempDir dir_;
};

TEST_F(BpfMetadataTest, EachProgramShowsItsOwnVariables) {
  // b's record names another function's name: it is nobody's.
  const ReportData d =
      report({testing::bpf_metadata_record("bpf_prog_1616161616161616_gone", {{"x", "1"}})});
  ASSERT_EQ(d.programs.size(), 2u);
  EXPECT_EQ(row(d, kA).metadata, printed(kAMetadata));
  EXPECT_TRUE(row(d, kB).metadata.empty());
  EXPECT_EQ(row(d, kA).samples, 3u);
  const DiagCounts& diag = d.profile.diagnostics();
  EXPECT_EQ(diag[Diag::kBpfMetadataBad], 0u);
  EXPECT_EQ(diag[Diag::kRecordsUnknownType], 0u);

  report::RenderOptions o;
  const auto j = nlohmann::json::parse(report::render_json(d, o));
  for (const auto& p : j["programs"]) {
    if (p["name"] == "handler") {
      EXPECT_EQ(p["metadata"], (nlohmann::json{{"version", "\"1.2\""}, {"build", "7"}}));
    } else {
      EXPECT_EQ(p["metadata"], nlohmann::json::object()) << p.dump();
    }
  }
  const std::string plain = report::render_text(d, o);
  EXPECT_EQ(plain.find("metadata:"), std::string::npos) << plain;
  o.verbose = true;
  const std::string verbose = report::render_text(d, o);
  EXPECT_NE(verbose.find("metadata: version = \"1.2\""), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("metadata: build = 7"), std::string::npos) << verbose;
  EXPECT_EQ(verbose.find("metadata: x = 1"), std::string::npos) << verbose;
}

TEST_F(BpfMetadataTest, ADamagedRecordIsCountedAndTheRestReads) {
  ByteVec bad = testing::bpf_metadata_record(kB.ksym, {{"k", "v"}});
  const uint64_t wrong = 5;
  std::memcpy(bad.data() + 8 + perf::BpfMetadata::kProgNameLen, &wrong, sizeof wrong);
  const ReportData d = report({bad});
  ASSERT_EQ(d.programs.size(), 2u);
  EXPECT_EQ(d.profile.diagnostics()[Diag::kBpfMetadataBad], 1u);
  EXPECT_EQ(row(d, kA).metadata, printed(kAMetadata));
  EXPECT_TRUE(row(d, kB).metadata.empty());
  EXPECT_EQ(row(d, kB).samples, 3u);
}

TEST_F(BpfMetadataTest, Section248MergesIntoTheRecordsList) {
  perfdata::Features f;
  f.bpf_prog_info = {testing::demo_prog(kA.id, kA.addr), testing::demo_prog(kB.id, kB.addr)};
  // Each as its BPF_EVENT names it (its tag) and its KSYMBOL (its name).
  for (bpf::ProgInfo& info : f.bpf_prog_info) {
    std::memset(info.info.tag, static_cast<int>(info.id() - 6), sizeof info.info.tag);
    std::strncpy(info.info.name, info.id() == kA.id ? "handler" : "other", sizeof info.info.name);
  }
  // The record's value of a variable wins; the section adds what it lacks.
  f.bpf_prog_info[0].metadata = {{"version", "9"}, {"commit", "abc"}};
  const bpf::Metadata b_vars = {{"owner", "bpfprof-workload burner"},
                                {"kinds", "3", bpf::MetadataKind::kNumber}};
  f.bpf_prog_info[1].metadata = b_vars;
  const ReportData d = report({}, f);
  ASSERT_EQ(d.programs.size(), 2u);
  bpf::Metadata a_vars = printed(kAMetadata);
  a_vars.push_back({"commit", "abc"});
  EXPECT_EQ(row(d, kA).metadata, a_vars);
  EXPECT_EQ(row(d, kB).metadata, b_vars);
  EXPECT_EQ(d.profile.diagnostics()[Diag::kBpfMetadataBad], 0u);

  report::RenderOptions o;
  const auto j = nlohmann::json::parse(report::render_json(d, o));
  size_t seen = 0;
  for (const auto& p : j["programs"]) {
    if (p["name"] == "other") {
      seen++;
      // Typed as bpftool types them: the integer a number.
      EXPECT_EQ(p["metadata"],
                (nlohmann::json{{"owner", "bpfprof-workload burner"}, {"kinds", 3}}));
    }
  }
  EXPECT_EQ(seen, 1u) << j.dump(1);
  o.verbose = true;
  const std::string verbose = report::render_text(d, o);
  EXPECT_NE(verbose.find("metadata: owner = \"bpfprof-workload burner\""), std::string::npos)
      << verbose;
  EXPECT_NE(verbose.find("metadata: kinds = 3\n"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("metadata: commit = \"abc\""), std::string::npos) << verbose;
}

}  // namespace
}  // namespace bpfprof::analysis
