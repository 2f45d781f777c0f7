// SPDX-License-Identifier: Apache-2.0
// What `record`, `export` and `merge` do with the path they write: a symbolic
// link there (dangling or not, at the output or at its .old) is refused with
// one line and exit 2, and nothing is created where it points; a full disk
// keeps a readable file with a valid header.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "perfdata/reader.h"
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

// An 8 KiB filesystem: the header, ids and attrs fit, the first round does
// not. The file stays, with a valid header and no records (exit 1).
TEST_F(OutputSafetyTest, FullDiskKeepsAFileWithAValidHeader) {
  const std::string mnt = dir_.file("small");
  ASSERT_EQ(::mkdir(mnt.c_str(), 0700), 0);
  if (::mount("bpfprof-test", mnt.c_str(), "tmpfs", 0, "size=8k") != 0) {
    BPFPROF_KERNEL_SKIP(std::string("mounting an 8 KiB tmpfs: ") + std::strerror(errno));
  }
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string out = mnt + "/out.data";
  RunResult r = record(out);
  if (r.exit_code == 2 && r.err.find("needs CAP") != std::string::npos) {
    BPFPROF_KERNEL_SKIP("recording refused: " + r.err);
  }
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kept"), std::string::npos) << r.err;
  ASSERT_TRUE(exists(out));
  auto reader = perfdata::FileReader::open(out);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  EXPECT_EQ(reader->attrs().size(), 2u);
  RunResult report = run({kBin + "/bpfprof", "report", "-q", "-i", out});
  EXPECT_EQ(report.exit_code, 0) << report.err;
}

}  // namespace
}  // namespace bpfprof::testing
