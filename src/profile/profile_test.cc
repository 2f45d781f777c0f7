// SPDX-License-Identifier: Apache-2.0
#include "profile/profile.h"

#include <string>

#include <gtest/gtest.h>

namespace bpfprof::profile {
namespace {

class ProfileTest : public ::testing::Test {
 protected:
  // Frames built from temporary strings, so interning must copy them.
  FrameId frame(Profile& p, const std::string& sym, const std::string& dso = "[kernel.kallsyms]",
                FrameKind kind = FrameKind::kKernel, uint32_t prog = 0) {
    return p.add_frame(Frame{sym, dso, "", kind, prog, 0});
  }
  Thread thread(uint32_t pid, const std::string& comm) { return Thread{pid, pid, comm}; }
};

TEST_F(ProfileTest, FramesAndStacksAreInternedOnce) {
  Profile p;
  FrameId a = frame(p, std::string("a"));
  FrameId b = frame(p, std::string("b"));
  EXPECT_EQ(frame(p, std::string("a")), a);
  EXPECT_NE(frame(p, "a", "other.so", FrameKind::kUser), a);
  EXPECT_EQ(p.frame_count(), 3u);
  StackId s1 = p.add_stack({a, b});
  EXPECT_EQ(p.add_stack({a, b}), s1);
  EXPECT_NE(p.add_stack({b, a}), s1);
  EXPECT_EQ(p.frame(p.stack(s1)[1]).symbol, "b");
  EXPECT_EQ(p.leaf(s1)->symbol, "a");
}

TEST_F(ProfileTest, SamplesCountedByStackAndThread) {
  Profile p;
  StackId s = p.add_stack({frame(p, "x")});
  for (int i = 0; i < 5; i++) p.add_sample(s, thread(10, std::string("cat")), 100, 1000 + i);
  p.add_sample(s, thread(11, "dog"), 7, 500);
  EXPECT_EQ(p.samples().size(), 2u);
  EXPECT_EQ(p.total().samples, 6u);
  EXPECT_EQ(p.total().period, 507u);
  EXPECT_EQ(p.first_time(), 500u);
  EXPECT_EQ(p.last_time(), 1004u);
  auto it = p.samples().find(SampleKey{s, thread(10, "cat")});
  ASSERT_NE(it, p.samples().end());
  EXPECT_EQ(it->second.samples, 5u);
  EXPECT_EQ(it->second.period, 500u);
}

TEST_F(ProfileTest, MergePreservesCountsAndRemapsIds) {
  Profile a, b;
  StackId sa = a.add_stack({frame(a, "f"), frame(a, "main", "/bin/x", FrameKind::kUser)});
  a.add_sample(sa, thread(1, "x"), 1, 10);
  a.diagnostics()[Diag::kSamplesBad] = 2;
  // b interns in another order, so its ids differ from a's.
  FrameId g = frame(b, "g");
  FrameId f = frame(b, "f");
  FrameId m = frame(b, "main", "/bin/x", FrameKind::kUser);
  StackId sb_same = b.add_stack({f, m});
  StackId sb_other = b.add_stack({g});
  b.add_sample(sb_other, thread(1, "x"), 3, 5);
  b.add_sample(sb_same, thread(1, "x"), 4, 20);
  b.add_sample(sb_same, thread(1, "x"), 4, 21);
  b.diagnostics()[Diag::kSamplesBad] = 1;
  b.diagnostics()[Diag::kCgroupUnknown] = 4;

  a.merge(b);
  EXPECT_EQ(a.total().samples, 4u);
  EXPECT_EQ(a.total().period, 12u);
  EXPECT_EQ(a.frame_count(), 3u);
  EXPECT_EQ(a.samples().size(), 2u);
  EXPECT_EQ(a.samples().at(SampleKey{sa, thread(1, "x")}).samples, 3u);
  EXPECT_EQ(a.first_time(), 5u);
  EXPECT_EQ(a.last_time(), 21u);
  // Diagnostics add up by kind, as the samples do.
  EXPECT_EQ(a.diagnostics()[Diag::kSamplesBad], 3u);
  EXPECT_EQ(a.diagnostics()[Diag::kCgroupUnknown], 4u);
  EXPECT_EQ(a.diagnostics()[Diag::kRecordsBad], 0u);
}

TEST_F(ProfileTest, ViewsSurviveMove) {
  Profile p;
  StackId s = p.add_stack({frame(p, std::string(40, 'z'))});
  p.add_sample(s, thread(1, "short"), 1, 1);
  Profile moved = std::move(p);
  EXPECT_EQ(moved.leaf(s)->symbol, std::string(40, 'z'));
  EXPECT_EQ(moved.samples().begin()->first.thread.comm, "short");
}

}  // namespace
}  // namespace bpfprof::profile
