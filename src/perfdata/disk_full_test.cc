// SPDX-License-Identifier: Apache-2.0
// A write error for real: the child process gets a small RLIMIT_FSIZE (with
// SIGXFSZ ignored, writes past it fail with EFBIG), records rounds until the
// writer reports the error, and closes. The parent then checks the file is a
// valid perf.data holding exactly the rounds that completed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "perfdata/reader.h"
#include "testing/perfdata_fixtures.h"
#include "perfdata/writer.h"
#include "testing/subprocess.h"

namespace bpfprof::perfdata {
namespace {

constexpr int kSamplesPerRound = 20;  // 20 x 56 + 8 = 1128 bytes per round
constexpr int kMaxRounds = 100;

struct ChildReport {
  int complete_rounds = -1;
  bool close_failed = false;
  char message[256] = {};
};

// Runs in the forked child: no gtest macros, only the report.
ChildReport record_until_full(const std::string& path, rlim_t limit, const Features& features) {
  ChildReport rep;
  signal(SIGXFSZ, SIG_IGN);
  rlimit rl{limit, limit};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return rep;
  auto w = FileWriter::create(path, testing::two_attrs());
  if (!w.ok()) return rep;
  rep.complete_rounds = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool ok = true;
    for (int i = 0; i < kSamplesPerRound && ok; ++i) {
      bpfprof::testing::SampleValues s;
      s.id = testing::kSampleId;
      s.ip = 0xffffffffc0001010;
      s.pid = s.tid = 1;
      s.time = static_cast<uint64_t>(round * kSamplesPerRound + i + 1);
      s.period = 1;
      ok = w->append(bpfprof::testing::sample_record(testing::kSampleType, s, perf::kMiscKernel))
               .ok();
    }
    if (!ok || !w->finish_round().ok()) break;
    ++rep.complete_rounds;
  }
  Status s = w->close(features);
  rep.close_failed = !s.ok();
  if (!s.ok()) std::snprintf(rep.message, sizeof rep.message, "%s", s.error().message.c_str());
  return rep;
}

ChildReport run_child(const std::string& path, rlim_t limit, const Features& features) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    ChildReport rep = record_until_full(path, limit, features);
    ssize_t n = write(fds[1], &rep, sizeof rep);
    _exit(n == static_cast<ssize_t>(sizeof rep) ? 0 : 1);
  }
  close(fds[1]);
  ChildReport rep;
  ssize_t n = read(fds[0], &rep, sizeof rep);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(n, static_cast<ssize_t>(sizeof rep));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return rep;
}

void expect_complete_rounds(const std::string& path, int rounds) {
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->truncated_header());
  int samples = 0, finished = 0;
  uint64_t last_time = 0;
  Status s = r->for_each_record([&](const perf::RecordView& v, uint64_t) {
    if (v.header.type == perf::kRecordFinishedRound) ++finished;
    if (v.header.type == perf::kRecordSample) {
      ++samples;
      last_time = r->attr_for(v)->layout.time_of(v).value_or(0);
    }
  });
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(finished, rounds);
  EXPECT_EQ(samples, rounds * kSamplesPerRound);
  EXPECT_EQ(last_time, static_cast<uint64_t>(rounds * kSamplesPerRound));
}

class DiskFullTest : public ::testing::Test {
 protected:
  bpfprof::testing::TempDir dir_;
};

TEST_F(DiskFullTest, KeepsCompleteRoundsAndFeaturesThatFit) {
  const std::string path = dir_.file("full.data");
  Features f;
  f.hostname = "h";
  f.arch = "x86_64";
  // 424 bytes of header/ids/attrs + 6 rounds = 7192; the 7th round would end
  // at 8320, so 1100 bytes stay free for the features after the cut.
  ChildReport rep = run_child(path, 8292, f);
  ASSERT_EQ(rep.complete_rounds, 6);
  EXPECT_TRUE(rep.close_failed);
  EXPECT_NE(std::string(rep.message).find("File too large"), std::string::npos) << rep.message;
  EXPECT_NE(std::string(rep.message).find("up to the last complete round"), std::string::npos)
      << rep.message;
  EXPECT_NE(std::string(rep.message).find(path), std::string::npos) << rep.message;
  expect_complete_rounds(path, rep.complete_rounds);
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->features().hostname, "h");
  EXPECT_EQ(r->features().arch, "x86_64");
  EXPECT_EQ(r->attrs().size(), 2u);
  EXPECT_EQ(r->attrs()[0].name, "cpu-clock");
}

// Full before the first round completed: perf refuses a data section of
// size 0, so the file keeps one FINISHED_ROUND record and says it holds no
// samples; both readers open it.
TEST_F(DiskFullTest, FullBeforeTheFirstRoundLeavesAReadableEmptyFile) {
  const std::string path = dir_.file("empty.data");
  Features f;
  f.hostname = "h";
  ChildReport rep = run_child(path, 600, f);
  ASSERT_EQ(rep.complete_rounds, 0);
  EXPECT_TRUE(rep.close_failed);
  EXPECT_NE(std::string(rep.message).find("nothing was recorded before it: the file holds no samples"),
            std::string::npos)
      << rep.message;
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->data_size(), sizeof(perf_event_header));
  int records = 0, finished = 0;
  ASSERT_TRUE(r->for_each_record([&](const perf::RecordView& v, uint64_t) {
                 ++records;
                 finished += v.header.type == perf::kRecordFinishedRound;
               }).ok());
  EXPECT_EQ(records, 1);
  EXPECT_EQ(finished, 1);
}

TEST_F(DiskFullTest, DropsFeaturesThatDoNotFit) {
  const std::string path = dir_.file("full2.data");
  Features f;
  f.hostname = "h";
  f.bpf_btf = {{1, std::vector<std::byte>(20000, std::byte{7})}};
  ChildReport rep = run_child(path, 8192, f);
  ASSERT_GT(rep.complete_rounds, 2);
  EXPECT_TRUE(rep.close_failed);
  expect_complete_rounds(path, rep.complete_rounds);
  auto r = FileReader::open(path);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_feature(kFeatHostname));
  EXPECT_TRUE(r->features().bpf_btf.empty());
}

}  // namespace
}  // namespace bpfprof::perfdata
