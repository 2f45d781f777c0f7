// SPDX-License-Identifier: Apache-2.0
#include "base/output_open.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "testing/subprocess.h"

namespace bpfprof {
namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

TEST(OpenOutputTest, RefusesADanglingSymlinkWithoutCreatingItsTarget) {
  testing::TempDir dir;
  const std::string target = dir.file("planted-target");
  const std::string link = dir.file("out.data");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  for (bool keep_old : {false, true}) {
    OutputOpen how;
    how.keep_old = keep_old;
    auto r = open_output(link, how);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
    EXPECT_EQ(r.error().message, link + " is a symbolic link: refusing to write through it");
    EXPECT_FALSE(exists(target));
  }
  auto w = write_file(link, "x");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, Errc::kInvalidArgument);
  EXPECT_FALSE(exists(target));
}

TEST(OpenOutputTest, RefusesASymlinkToAnExistingFileAndLeavesItAlone) {
  testing::TempDir dir;
  const std::string target = dir.file("victim");
  { std::ofstream(target) << ""; }
  ASSERT_EQ(::chmod(target.c_str(), 0644), 0);
  const std::string link = dir.file("out.data");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  for (bool keep_old : {false, true}) {
    OutputOpen how;
    how.keep_old = keep_old;
    auto r = open_output(link, how);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::kInvalidArgument);
  }
  // A link to a nonempty file is not rotated either.
  { std::ofstream(target) << "precious"; }
  OutputOpen how;
  how.keep_old = true;
  EXPECT_FALSE(open_output(link, how).ok());
  struct stat st{};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(contents(target), "precious");
  EXPECT_FALSE(exists(link + ".old"));
}

TEST(OpenOutputTest, RefusesASymlinkAtTheOldName) {
  testing::TempDir dir;
  const std::string path = dir.file("out.data");
  const std::string target = dir.file("elsewhere");
  { std::ofstream(path) << "previous"; }
  ASSERT_EQ(::symlink(target.c_str(), (path + ".old").c_str()), 0);
  OutputOpen how;
  how.keep_old = true;
  auto r = open_output(path, how);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, path + ".old is a symbolic link: refusing to write through it");
  EXPECT_EQ(contents(path), "previous");
  EXPECT_FALSE(exists(target));
}

TEST(OpenOutputTest, RotatesAndCreatesAfresh) {
  testing::TempDir dir;
  const std::string path = dir.file("out.data");
  { std::ofstream(path) << "previous"; }
  OutputOpen how;
  how.keep_old = true;
  auto r = open_output(path, how);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->rotated);
  EXPECT_TRUE(r->regular);
  EXPECT_EQ(contents(path + ".old"), "previous");
  EXPECT_EQ(contents(path), "");
  struct stat st{};
  ASSERT_EQ(::fstat(r->fd.get(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
}

TEST(OpenOutputTest, WriteFileReplacesARegularFile) {
  testing::TempDir dir;
  const std::string path = dir.file("flame.svg");
  { std::ofstream(path) << "a much longer previous content"; }
  ASSERT_TRUE(write_file(path, "new").ok());
  EXPECT_EQ(contents(path), "new");
  // No temporary file is left beside it.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) entries += !e.is_directory();
  EXPECT_EQ(entries, 1);
}

// The uid of a user other than us and root, for files "another user" made.
constexpr uid_t kOther = 65534;

ino_t inode_of(int fd) {
  struct stat st{};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// Another user pre-creates the output's name and keeps it open: whatever
// bpfprof writes goes to a new file of its own, never through their fd.
TEST(OpenOutputTest, AFileAnotherUserMadeIsMovedAsideNeverWritten) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make files another user owns";
  testing::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);
  for (bool keep_old : {false, true}) {
    for (bool empty : {true, false}) {
      SCOPED_TRACE(std::string(keep_old ? "record" : "open") + (empty ? ", empty" : ", not empty"));
      const std::string path = dir.file("planted.data");
      ::unlink(path.c_str());
      ::unlink((path + ".old").c_str());
      { std::ofstream(path) << (empty ? "" : "theirs"); }
      ASSERT_EQ(::chown(path.c_str(), kOther, kOther), 0);
      ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
      UniqueFd theirs(::open(path.c_str(), O_RDONLY));
      ASSERT_TRUE(theirs.valid());
      OutputOpen how;
      how.keep_old = keep_old;
      auto r = open_output(path, how);
      ASSERT_TRUE(r.ok()) << r.error().to_string();
      ASSERT_EQ(::write(r->fd.get(), "secret", 6), 6);
      EXPECT_NE(inode_of(r->fd.get()), inode_of(theirs.get()));
      char buf[16];
      const ssize_t n = ::pread(theirs.get(), buf, sizeof buf, 0);
      EXPECT_EQ(std::string(buf, static_cast<size_t>(std::max<ssize_t>(n, 0))), empty ? "" : "theirs");
      struct stat st{};
      ASSERT_EQ(::lstat(path.c_str(), &st), 0);
      EXPECT_EQ(st.st_uid, 0u);
      EXPECT_EQ(st.st_mode & 0777, 0600u);
      EXPECT_EQ(r->rotated, keep_old && !empty);
      EXPECT_EQ(exists(path + ".old"), keep_old && !empty);
    }
  }
  // write_file (export, merge) likewise: a new file renamed over theirs.
  const std::string out = dir.file("flame.html");
  { std::ofstream(out) << ""; }
  ASSERT_EQ(::chown(out.c_str(), kOther, kOther), 0);
  UniqueFd theirs(::open(out.c_str(), O_RDONLY));
  ASSERT_TRUE(write_file(out, "secret").ok());
  char buf[16];
  EXPECT_EQ(::pread(theirs.get(), buf, sizeof buf, 0), 0);
  struct stat st{};
  ASSERT_EQ(::lstat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(contents(out), "secret");
}

TEST(OpenOutputTest, FifosAndSocketsAreRefused) {
  testing::TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  auto r = open_output(fifo);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            fifo + " is a FIFO: refusing to write to it");
  Status w = write_file(fifo, "x");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message, r.error().message);
  EXPECT_EQ(write_file(dir.path(), "x").error().message, dir.path() + " is a directory");
}

// A symbolic link on the way to the output is followed only where no other
// user could have planted it or swapped it.
TEST(OpenOutputTest, SymlinkedDirectoriesOthersControlAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make links another user owns";
  testing::TempDir dir;
  const std::string sticky = dir.file("sticky");
  const std::string target = dir.file("root-only");
  ASSERT_EQ(::mkdir(sticky.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
  { std::ofstream(target + "/out.x") << "precious"; }

  // Theirs, in a sticky world-writable directory: refused.
  ASSERT_EQ(::symlink(target.c_str(), (sticky + "/reports").c_str()), 0);
  ASSERT_EQ(::lchown((sticky + "/reports").c_str(), kOther, kOther), 0);
  Status w = write_file(sticky + "/reports/out.x", "overwritten");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message, sticky + "/reports is a symbolic link another user could have planted "
                               "(owner uid 65534, in a directory others can write): refusing to follow it");
  OutputOpen keep;
  keep.keep_old = true;
  EXPECT_FALSE(open_output(sticky + "/reports/out.x", keep).ok());
  EXPECT_EQ(contents(target + "/out.x"), "precious");
  EXPECT_FALSE(exists(target + "/out.x.old"));

  // Root's own link in the same sticky directory: nobody else can replace
  // it there, so it is followed.
  ASSERT_EQ(::symlink(target.c_str(), (sticky + "/mine").c_str()), 0);
  ASSERT_TRUE(write_file(sticky + "/mine/new.x", "ok").ok());
  EXPECT_EQ(contents(target + "/new.x"), "ok");

  // Root's link in a directory another user owns: they could swap it.
  const std::string theirs = dir.file("theirs");
  ASSERT_EQ(::mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(target.c_str(), (theirs + "/link").c_str()), 0);
  ASSERT_EQ(::chown(theirs.c_str(), kOther, kOther), 0);
  EXPECT_FALSE(write_file(theirs + "/link/out.x", "overwritten").ok());
  EXPECT_EQ(contents(target + "/out.x"), "precious");

  // A relative path through a link, with empty and "." components.
  ASSERT_EQ(::chdir(sticky.c_str()), 0);
  ASSERT_TRUE(write_file("./mine//rel.x", "rel").ok());
  ASSERT_EQ(::chdir("/"), 0);
  EXPECT_EQ(contents(target + "/rel.x"), "rel");
}

}  // namespace
}  // namespace bpfprof
