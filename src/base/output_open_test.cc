// SPDX-License-Identifier: Apache-2.0
#include "base/output_open.h"

#include <sys/stat.h>
#include <unistd.h>

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
  { std::ofstream(target) << ""; }  // empty: record would write into it, not rotate
  ASSERT_EQ(::chmod(target.c_str(), 0644), 0);
  const std::string link = dir.file("out.data");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  for (bool keep_old : {false, true}) {
    OutputOpen how;
    how.keep_old = keep_old;
    how.set_mode = true;
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

TEST(OpenOutputTest, WriteFileTruncatesARegularFile) {
  testing::TempDir dir;
  const std::string path = dir.file("flame.svg");
  { std::ofstream(path) << "a much longer previous content"; }
  ASSERT_TRUE(write_file(path, "new").ok());
  EXPECT_EQ(contents(path), "new");
}

}  // namespace
}  // namespace bpfprof
