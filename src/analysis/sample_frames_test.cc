// SPDX-License-Identifier: Apache-2.0
// A sample's frames: callers are looked up at their call (return address
// - 1), except where that byte lies in nothing and the return address
// itself lies in a mapping (a call that ends the mapping before it).
#include "analysis/sample_frames.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "perf/abi.h"
#include "testing/symbolizer_feeder.h"

namespace bpfprof::analysis {
namespace {

constexpr uint32_t kPid = 1000;
constexpr uint64_t kLib = 0x7f0000001000;  // a mapping with nothing mapped before it

std::vector<SymbolizedFrame> frames_of(const symbols::Symbolizer& sym,
                                       const std::vector<uint64_t>& chain) {
  std::vector<uint8_t> bytes(chain.size() * 8);
  std::memcpy(bytes.data(), chain.data(), bytes.size());
  perf::Sample s;
  s.pid = s.tid = kPid;
  s.time = 100;
  s.ip = chain[1];
  s.callchain = perf::U64Array(Bytes(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
  std::vector<SymbolizedFrame> out;
  symbolize_sample(sym, s, perf::kMiscUser, /*stack=*/true, out);
  return out;
}

// One process with one file mapped, nothing below it.
class SampleFramesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::Feeder f(sym_);
    f.comm(0, kPid, kPid, "app");
    f.mmap2(0, kPid, kLib, 0x2000, 0, "/usr/lib/libdemo.so");
    sym_.finish();
  }
  perfdata::Features features_;
  symbols::Symbolizer sym_{features_, {.read_elf = false}};
};

TEST_F(SampleFramesTest, ReturnAddressAtAMappingsFirstByteNamesThatMapping) {
  const auto out = frames_of(sym_, {perf::kContextUser, kLib + 0x100, kLib, kLib + 0x800});
  ASSERT_EQ(out.size(), 3u);
  // The leaf as itself.
  EXPECT_EQ(out[0].lookup, kLib + 0x100);
  EXPECT_EQ(out[0].frame.dso, "/usr/lib/libdemo.so");
  // At the mapping's first byte: the byte before is in no mapping, so the
  // return address itself is looked up, and names the file.
  EXPECT_EQ(out[1].lookup, kLib);
  EXPECT_EQ(out[1].frame.dso, "/usr/lib/libdemo.so");
  EXPECT_NE(out[1].frame.unknown, symbols::Unknown::kNoMap);
  // Inside the mapping: the call instruction before the return address.
  EXPECT_EQ(out[2].lookup, kLib + 0x800 - 1);
  EXPECT_EQ(out[2].frame.dso, "/usr/lib/libdemo.so");
}

TEST_F(SampleFramesTest, ReturnAddressInNothingStaysUnknown) {
  const auto out = frames_of(sym_, {perf::kContextUser, kLib + 0x100, kLib + 0x10000});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].lookup, kLib + 0x10000 - 1);
  EXPECT_EQ(out[1].frame.unknown, symbols::Unknown::kNoMap);
}

}  // namespace
}  // namespace bpfprof::analysis
