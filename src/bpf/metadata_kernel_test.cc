// SPDX-License-Identifier: Apache-2.0
// Real-kernel tests of read_rodata_metadata: a program whose object
// declares bpf_metadata_* variables of several types, against what
// `bpftool prog show` prints for it; other maps are not metadata; a map
// gone is kNotFound.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "bpf/metadata.h"
#include "bpf/query.h"
#include "testing/bpf_programs.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::bpf {
namespace {

class MetadataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    obj_.reset(bpf_object__open_file(BPFPROF_METADATA_PROGS_OBJ, nullptr));
    ASSERT_TRUE(obj_) << "bpf_object__open_file: " << errno;
    const int rc = bpf_object__load(obj_.get());
    if (rc == -EPERM) GTEST_SKIP() << "kernel refused to load BPF programs";
    ASSERT_EQ(rc, 0);
    prog_fd_ = testing::prog_fd_in(obj_.get(), "metadata_prog");
    ASSERT_GE(prog_fd_, 0);
    auto maps = read_prog_maps(prog_fd_);
    ASSERT_TRUE(maps.ok()) << maps.error().to_string();
    maps_ = std::move(maps).value();
  }

  testing::BpfObjectPtr obj_;
  int prog_fd_ = -1;
  std::vector<MapInfo> maps_;
};

const Metadata kDeclared = {{"name", "metadata test"},
                            {"negative", "-7", MetadataKind::kNumber},
                            {"big", "18446744073709551615", MetadataKind::kNumber},
                            {"on", "true", MetadataKind::kBool},
                            {"mode", "MODE_FAST"}};

TEST_F(MetadataTest, RodataGivesTheDeclaredVariablesInOrder) {
  std::vector<Metadata> found;
  size_t candidates = 0;
  for (const MapInfo& m : maps_) {
    if (!may_hold_metadata(m)) continue;
    candidates++;
    auto read = read_rodata_metadata(m.id);
    ASSERT_TRUE(read.ok()) << read.error().to_string();
    if (read->has_value()) found.push_back(**read);
  }
  EXPECT_EQ(candidates, 2u) << ".rodata and .data are arrays of one value";
  ASSERT_EQ(found.size(), 1u) << "only .rodata is metadata";
  EXPECT_EQ(found[0], kDeclared);
}

TEST_F(MetadataTest, ValuesAreBpftools) {
  bpf_prog_info info{};
  __u32 len = sizeof info;
  ASSERT_EQ(bpf_obj_get_info_by_fd(prog_fd_, &info, &len), 0);
  testing::RunResult r =
      testing::run({"bpftool", "-j", "prog", "show", "id", std::to_string(info.id)});
  if (r.exit_code != 0) GTEST_SKIP() << "bpftool: " << r.err;
  const nlohmann::json p = nlohmann::json::parse(r.out);
  ASSERT_TRUE(p.contains("metadata")) << r.out;
  // Values and their JSON types: numbers and booleans as bpftool types them.
  nlohmann::json got = nlohmann::json::object();
  for (const MapInfo& m : maps_) {
    if (!may_hold_metadata(m)) continue;
    auto read = read_rodata_metadata(m.id);
    ASSERT_TRUE(read.ok()) << read.error().to_string();
    if (!read->has_value()) continue;
    for (const MetadataVar& v : **read) {
      got[v.name] =
          v.kind == MetadataKind::kText ? nlohmann::json(v.value) : nlohmann::json::parse(v.value);
    }
  }
  EXPECT_EQ(got, p["metadata"]) << r.out;
}

TEST_F(MetadataTest, AMapGoneIsNotFound) {
  uint32_t rodata = 0;
  for (const MapInfo& m : maps_) {
    if (m.name.ends_with(".rodata")) rodata = m.id;
  }
  ASSERT_NE(rodata, 0u);
  obj_.reset();
  // The kernel frees the map after an RCU grace period.
  Result<std::optional<Metadata>> read = std::optional<Metadata>();
  for (int i = 0; i < 200; i++) {
    read = read_rodata_metadata(rodata);
    if (!read.ok()) break;
    usleep(10000);
  }
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::kNotFound) << read.error().to_string();
}

}  // namespace
}  // namespace bpfprof::bpf
