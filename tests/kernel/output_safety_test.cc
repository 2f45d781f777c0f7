// SPDX-License-Identifier: Apache-2.0
// What `record`, `export` and `merge` do with the path they write: a symbolic
// link there (dangling or not, at the output or at its .old) or a linked
// directory another user planted on the way is refused with one line and
// exit 2, and nothing is created where it points; a file another user made
// at the name is moved aside, never written; a full disk, before or after
// the first round, keeps a file both bpfprof and Linux perf read.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "perfdata/in_stream.h"
#include "perfdata/reader.h"
#include "perfdata/writer.h"
#include "testing/paths.h"
#include "testing/perfdata_fixtures.h"
#include "testing/record_builder.h"
#include "testing/subprocess.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

bool exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

RunResult record(const std::string& out) {
  return run({kBin + "/bpfprof", "record", "-a", "-F", "99", "-d", "0.3", "-q", "-o", out});
}

class OutputSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) BPFPROF_KERNEL_SKIP("not root: record needs CAP_PERFMON and CAP_BPF");
  }
  TempDir dir_;
};

TEST_F(OutputSafetyTest, RecordRefusesASymlinkAtTheOutputAndAtItsOldName) {
  const std::string target = dir_.file("planted");
  const std::string link = dir_.file("out.data");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  RunResult r = record(link);
  if (r.exit_code == 2 && r.err.find("needs CAP") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + r.err);
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "bpfprof record: " + link +
                       " is a symbolic link: refusing to write through it\n");
  EXPECT_FALSE(exists(target));

  // An existing recording is rotated to .old, unless .old is a link.
  const std::string path = dir_.file("real.data");
  { std::ofstream(path) << "previous"; }
  ASSERT_EQ(::symlink(target.c_str(), (path + ".old").c_str()), 0);
  r = record(path);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(path + ".old is a symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(contents(path), "previous");
  EXPECT_FALSE(exists(target));
}

TEST_F(OutputSafetyTest, ExportAndMergeRefuseASymlink) {
  const std::string data = dir_.file("rec.data");
  RunResult r = record(data);
  if (r.exit_code == 2 && r.err.find("needs CAP") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + r.err);
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string target = dir_.file("planted");
  const std::string link = dir_.file("flame.svg");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{kBin + "/bpfprof", "export", "-q", "-i", data, "--format", "svg",
                                 "-o", link},
        std::vector<std::string>{kBin + "/bpfprof", "merge", "-q", "-o", link, data}}) {
    r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << argv[1] << ": " << r.err;
    EXPECT_EQ(r.err, "bpfprof " + argv[1] + ": " + link +
                         " is a symbolic link: refusing to write through it\n");
    EXPECT_FALSE(exists(target));
  }
}

// A tmpfs of `size` at dir/name, unmounted (lazily) when it goes.
struct SmallFs {
  std::string at;
  bool mounted = false;
  SmallFs(const std::string& dir, const std::string& size) : at(dir) {
    mounted = ::mkdir(at.c_str(), 0700) == 0 &&
              ::mount("bpfprof-test", at.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallFs() {
    if (mounted) ::umount2(at.c_str(), MNT_DETACH);
  }
};

// perf (Linux's) reads what a failed recording left: report and script.
void expect_perf_reads(const std::string& path) {
  RunResult rep = run({"perf", "report", "--stdio", "-i", path});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  RunResult script = run({"perf", "script", "-i", path});
  EXPECT_EQ(script.exit_code, 0) << script.err;
}

// An 8 KiB filesystem: the header, ids and attrs fit, the first round does
// not. The file stays valid but empty (perf refuses a data size of 0: it
// holds one FINISHED_ROUND), and the one line says so.
TEST_F(OutputSafetyTest, FullDiskBeforeTheFirstRoundLeavesAnEmptyFilePerfReads) {
  SmallFs fs(dir_.file("small"), "8k");
  if (!fs.mounted) BPFPROF_KERNEL_SKIP(std::string("mounting an 8 KiB tmpfs: ") + std::strerror(errno));
  const std::string out = fs.at + "/out.data";
  RunResult r = record(out);
  if (r.exit_code == 2 && r.err.find("needs CAP") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + r.err);
  }
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was recorded before it: the file holds no samples"),
            std::string::npos)
      << r.err;
  ASSERT_TRUE(exists(out));
  auto reader = perfdata::FileReader::open(out);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  EXPECT_EQ(reader->attrs().size(), 2u);
  EXPECT_GT(reader->data_size(), 0u);
  RunResult report = run({kBin + "/bpfprof", "report", "-q", "-i", out});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  expect_perf_reads(out);
}

// A filesystem that holds the first round (the state at start) and a little
// more: the recording keeps its complete rounds, and both readers read them.
TEST_F(OutputSafetyTest, FullDiskAfterTheFirstRoundKeepsWhatWasRecorded) {
  // Where the first round ends in a recording like this one.
  const std::string ref = dir_.file("ref.data");
  RunResult r = record(ref);
  if (r.exit_code == 2 && r.err.find("needs CAP") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + r.err);
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto reader = perfdata::FileReader::open(ref);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  uint64_t first_round_end = 0;
  ASSERT_TRUE(reader->for_each_record([&](const perf::RecordView& v, uint64_t) {
                 if (first_round_end == 0 && v.header.type == perf::kRecordFinishedRound)
                   first_round_end = v.offset + v.header.size;
               }).ok());
  ASSERT_GT(first_round_end, 0u);
  // Room for the first round, give or take what the host does meanwhile,
  // and far less than 2 s of samples at 4 kHz with callchains.
  const uint64_t size = (first_round_end + (512 << 10)) / 4096 * 4096;
  SmallFs fs(dir_.file("medium"), std::to_string(size));
  if (!fs.mounted) BPFPROF_KERNEL_SKIP(std::string("mounting a tmpfs: ") + std::strerror(errno));
  const std::string out = fs.at + "/out.data";
  r = run({kBin + "/bpfprof", "record", "-a", "-g", "-F", "4000", "-d", "2", "-q", "-o", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("up to the last complete round"), std::string::npos) << r.err;
  auto kept = perfdata::FileReader::open(out);
  ASSERT_TRUE(kept.ok()) << kept.error().to_string();
  EXPECT_GE(kept->data_size(), first_round_end - reader->data_offset() - (64 << 10));
  RunResult report = run({kBin + "/bpfprof", "report", "-q", "-i", out});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  expect_perf_reads(out);
}

// A failure before the recording runs is one line, whatever notices (the
// PMU fallback on a machine without one) came before it: they are folded in.
TEST_F(OutputSafetyTest, FailuresToStartAreOneLine) {
  const std::string missing = dir_.file("no/such/dir/out.data");
  const std::vector<std::vector<std::string>> cases = {
      {kBin + "/bpfprof", "record", "-a", "-d", "0.2", "-o", missing},
      {kBin + "/bpfprof", "record", "-a", "-d", "0.2", "-o", dir_.path()},
      {kBin + "/bpfprof", "record", "-a", "-d", "0.2", "-o", "/dev/full"},
      {kBin + "/bpfprof", "record", "-o", dir_.file("x.data"), "--", "/nonexistent/command"},
      {kBin + "/bpfprof", "top", "-n", "1"},  // stdin is /dev/null: not a terminal
  };
  for (const auto& argv : cases) {
    RunResult r = run(argv);
    EXPECT_NE(r.exit_code, 0) << argv.back();
    EXPECT_EQ(lines(r.err), 1u) << argv.back() << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("bpfprof " + argv[1] + ": ")) << r.err;
  }
  // top's output that cannot be written fails like every command's.
  RunResult top = run({"sh", "-c", kBin + "/bpfprof top --format json -n 2 -d 0.2 >/dev/full"});
  EXPECT_EQ(top.exit_code, 1) << top.err;
  EXPECT_EQ(lines(top.err), 1u) << top.err;
  EXPECT_NE(top.err.find("writing standard output: No space left on device"), std::string::npos)
      << top.err;
}

// A recording whose writer was killed (no feature table: what it learned is
// in-stream) with its kallsyms snapshot damaged in one chunk, and every sample
// cut short: `report` counts one unreadable section and says the kernel
// symbols are damaged, and without -q says once on stderr what was lost;
// `export` has nothing to export and fails with its one error line.
TEST(DamagedFileTest, DiagnosticsSayWhatHappenedOnce) {
  TempDir dir;
  const std::string path = dir.file("damaged.data");
  {
    auto w = perfdata::FileWriter::create(path, two_attrs());
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    ByteVec records;
    perfdata::append_in_stream_records(records, perfdata::kFeatBpfprofKallsyms,
                                       std::vector<std::byte>(300000, std::byte{'x'}));
    // The second chunk claims another offset.
    const size_t second = load_unaligned<uint16_t>(records.data() + 6);
    const uint64_t wrong = 7;
    std::memcpy(records.data() + second + 32, &wrong, sizeof wrong);
    ASSERT_TRUE(w->append(records).ok());
    for (uint64_t t = 1; t <= 50; ++t) {
      SampleValues v;
      v.id = kSampleId;
      v.ip = 0xffffffff81000000 + t;
      v.pid = v.tid = 1;
      v.time = t;
      v.period = 1;
      ByteVec sample = sample_record(kSampleType, v, perf::kMiscKernel);
      // Cut short: the header says 16 bytes, the sample type needs more.
      const uint16_t size = 16;
      std::memcpy(sample.data() + 6, &size, sizeof size);
      sample.resize(size);
      ASSERT_TRUE(w->append(sample).ok());
    }
    ASSERT_TRUE(w->finish_round().ok());
    // No close: as SIGKILL leaves it.
  }
  RunResult rep = run({kBin + "/bpfprof", "report", "-q", "--format", "json", "-i", path});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("\"feature_sections_unreadable\": 1"), std::string::npos) << rep.out;
  RunResult text = run({kBin + "/bpfprof", "report", "-q", "-i", path});
  EXPECT_NE(text.out.find("kernel symbols: damaged"), std::string::npos) << text.out;
  EXPECT_EQ(text.err, "");
  RunResult warned = run({kBin + "/bpfprof", "report", "-i", path});
  EXPECT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_EQ(warned.out, text.out);
  EXPECT_EQ(warned.err, "bpfprof report: warning: " + path +
                            ": 1 feature_sections_unreadable, 50 samples_bad: part of the "
                            "recording could not be used (see the diagnostics of bpfprof report)\n");
  RunResult exp = run({kBin + "/bpfprof", "export", "-q", "--format", "pprof", "-i", path, "-o",
                       dir.file("out.pb.gz")});
  EXPECT_EQ(exp.exit_code, 1) << exp.err;
  EXPECT_EQ(exp.err, "bpfprof export: " + path +
                         ": every sample is damaged (samples_bad=50): nothing to export\n");
  EXPECT_FALSE(exists(dir.file("out.pb.gz")));
  // A failure is its error line alone, -q or not.
  RunResult loud = run({kBin + "/bpfprof", "export", "--format", "pprof", "-i", path, "-o",
                        dir.file("out.pb.gz")});
  EXPECT_EQ(loud.exit_code, 1) << loud.err;
  EXPECT_EQ(loud.err, exp.err);
}

// Another user's doings in a shared sticky directory (as /tmp): nothing they
// planted receives a byte, and every output is a new file of root's.
class SharedDirTest : public OutputSafetyTest {
 protected:
  void SetUp() override {
    OutputSafetyTest::SetUp();
    if (::testing::Test::IsSkipped()) return;
    sticky_ = dir_.file("sticky");
    ASSERT_EQ(::mkdir(sticky_.c_str(), 0777), 0);
    ASSERT_EQ(::chmod(sticky_.c_str(), 01777), 0);
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);  // the other user reaches sticky/
    data_ = dir_.file("rec.data");
    RunResult r = record(data_);
    if (r.exit_code == 2 && r.err.find("needs CAP") != std::string::npos) {
      BPFPROF_KERNEL_SKIP("recording refused: " + r.err);
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Runs `script` as another user (nobody) through setpriv.
  static std::vector<std::string> as_other(const std::string& script) {
    return {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script};
  }
  // The commands that write a file, each writing to `out`.
  std::vector<std::vector<std::string>> writers(const std::string& out) const {
    return {{kBin + "/bpfprof", "record", "-a", "-F", "99", "-d", "0.3", "-q", "-o", out},
            {kBin + "/bpfprof", "export", "-q", "-i", data_, "--format", "pprof", "-o", out},
            {kBin + "/bpfprof", "merge", "-q", "-o", out, data_}};
  }
  std::string sticky_, data_;
};

TEST_F(SharedDirTest, AFileAnotherUserHoldsOpenReceivesNothing) {
  for (const auto& argv : writers(sticky_ + "/out")) {
    SCOPED_TRACE(argv[1]);
    for (const std::string name : {"out", "out.old"}) {
      ::unlink((sticky_ + "/" + name).c_str());
    }
    // They make the name (and the .old record would rotate to) and keep
    // both open for reading.
    Background other(as_other("cd " + sticky_ + " && : >out && : >out.old && chmod 666 out out.old"
                              " && exec 3<out 4<out.old && echo ready && exec sleep 30"));
    ASSERT_EQ(other.wait_for_line("ready"), "ready");
    RunResult r = run(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Then root's previous output at the name, theirs at .old: record moves
    // root's to .old (over theirs), the others replace it.
    r = run(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    struct stat st{};
    ASSERT_EQ(::lstat((sticky_ + "/out").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_GT(st.st_size, 0);
    const std::string fds = "/proc/" + std::to_string(other.pid()) + "/fd/";
    EXPECT_EQ(contents(fds + "3"), "") << "their open file received bytes";
    EXPECT_EQ(contents(fds + "4"), "") << "their open .old received bytes";
    if (argv[1] == "record") {
      ASSERT_EQ(::lstat((sticky_ + "/out.old").c_str(), &st), 0);
      EXPECT_EQ(st.st_uid, 0u) << "root's previous recording is the .old now";
      EXPECT_GT(st.st_size, 0);
    }
  }
}

TEST_F(SharedDirTest, PlantedFifosAndLinkedDirectoriesAreRefused) {
  const std::string root_only = dir_.file("root-only");
  ASSERT_EQ(::mkdir(root_only.c_str(), 0700), 0);
  { std::ofstream(root_only + "/out") << "precious"; }
  RunResult made = run(as_other("cd " + sticky_ + " && mkfifo fifo && ln -s " + root_only + " reports"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  for (const auto& argv : writers(sticky_ + "/fifo")) {
    RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << argv[1] << ": " << r.err;
    EXPECT_EQ(r.err, "bpfprof " + argv[1] + ": " + sticky_ +
                         "/fifo is a FIFO: refusing to write to it\n");
  }
  for (const auto& argv : writers(sticky_ + "/reports/out")) {
    RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << argv[1] << ": " << r.err;
    EXPECT_EQ(r.err, "bpfprof " + argv[1] + ": " + sticky_ +
                         "/reports is a symbolic link another user could have planted (owner uid "
                         "65534, in a directory others can write): refusing to follow it\n");
    EXPECT_EQ(contents(root_only + "/out"), "precious");
    EXPECT_FALSE(exists(root_only + "/out.old"));
  }
}

}  // namespace
}  // namespace bpfprof::testing
