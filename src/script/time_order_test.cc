// SPDX-License-Identifier: Apache-2.0
// script prints samples in time order across its time windows: recordings
// whose rounds hold samples out of order (testing/time_window_recording.h)
// against a plain stable sort by time.
#include "script/script.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/time_order.h"
#include "testing/subprocess.h"
#include "testing/time_window_recording.h"

namespace bpfprof::script {
namespace {

using bpfprof::testing::generate;
using bpfprof::testing::open_session;
using bpfprof::testing::stable_sorted_offsets;
using bpfprof::testing::write_recording;

class ScriptTimeOrder : public ::testing::Test {
 protected:
  bpfprof::testing::TempDir dir_;
};

// script's lines name the samples by tid: their order must be the stable
// sort's. The recording spans several windows (over 2 MiB).
TEST_F(ScriptTimeOrder, WriteScriptPrintsTheStableSort) {
  const std::string path = dir_.file("big.data");
  write_recording(path, generate(9, 2000, 40, 10, 2), 16);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  ASSERT_GT(session->reader().data_size(), 2u << 20);
  ASSERT_GT(analysis::plan_time_windows(*session, 1 << 20).size(), 1u);
  std::vector<uint64_t> expected;
  for (uint64_t offset : stable_sorted_offsets(*session)) {
    auto r = session->record_at(offset);
    ASSERT_TRUE(r.ok());
    const perfdata::FileAttr* attr = session->reader().attr_for(*r);
    ASSERT_NE(attr, nullptr);
    auto s = perf::Sample::parse(*r, attr->layout);
    ASSERT_TRUE(s.ok());
    expected.push_back(s->tid);
  }
  for (unsigned threads : {1u, 3u}) {
    const std::string out_path = dir_.file("out" + std::to_string(threads) + ".json");
    std::FILE* out = std::fopen(out_path.c_str(), "w");
    ASSERT_NE(out, nullptr);
    ScriptOptions o;
    o.format = ScriptFormat::kJson;
    o.threads = threads;
    const Status written = write_script(*session, o, out);
    std::fclose(out);
    ASSERT_TRUE(written.ok()) << written.error().to_string();
    std::ifstream in(out_path);
    std::vector<uint64_t> got;
    for (std::string line; std::getline(in, line);) {
      got.push_back(nlohmann::json::parse(line).at("tid").get<uint64_t>());
    }
    EXPECT_EQ(got, expected) << threads << " threads";
  }
}

TEST_F(ScriptTimeOrder, WriteErrorEndsTheScript) {
  const std::string path = dir_.file("full.data");
  write_recording(path, generate(11, 500, 40, 10), 16);
  auto session = open_session(path);
  ASSERT_TRUE(session);
  ASSERT_FALSE(analysis::plan_time_windows(*session, 1 << 20).empty());
  std::FILE* out = std::fopen("/dev/full", "w");
  if (out == nullptr) GTEST_SKIP() << "no /dev/full";
  const Status written = write_script(*session, ScriptOptions{}, out);
  std::fclose(out);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().to_string().find("writing the script output"), std::string::npos)
      << written.error().to_string();
}

}  // namespace
}  // namespace bpfprof::script

