// SPDX-License-Identifier: Apache-2.0
// metadata_from_value on BTF built here: the variables of a ".rodata"
// section from a value's bytes, those past the bytes given left out and
// counted, and any other section not metadata.
#include "bpf/metadata.h"

#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "bpf/owned_btf.h"

namespace bpfprof::bpf {
namespace {

// A section `name` of 64 bytes: bpf_metadata_name (char[16]) at 0,
// other_var (u32) at 16, bpf_metadata_count (u32) at 20 and
// bpf_metadata_late (u32) at 60. Its type id in *sec_id.
OwnedBtf section_btf(const char* name, int* sec_id) {
  OwnedBtf b(btf__new_empty());
  const int u32 = btf__add_int(b.get(), "unsigned int", 4, 0);
  const int chr = btf__add_int(b.get(), "char", 1, BTF_INT_SIGNED);
  const int str = btf__add_array(b.get(), u32, chr, 16);
  const int v_name = btf__add_var(b.get(), "bpf_metadata_name", BTF_VAR_GLOBAL_ALLOCATED, str);
  const int v_other = btf__add_var(b.get(), "other_var", BTF_VAR_GLOBAL_ALLOCATED, u32);
  const int v_count = btf__add_var(b.get(), "bpf_metadata_count", BTF_VAR_GLOBAL_ALLOCATED, u32);
  const int v_late = btf__add_var(b.get(), "bpf_metadata_late", BTF_VAR_GLOBAL_ALLOCATED, u32);
  *sec_id = btf__add_datasec(b.get(), name, 64);
  btf__add_datasec_var_info(b.get(), v_name, 0, 16);
  btf__add_datasec_var_info(b.get(), v_other, 16, 4);
  btf__add_datasec_var_info(b.get(), v_count, 20, 4);
  btf__add_datasec_var_info(b.get(), v_late, 60, 4);
  return b;
}

std::vector<std::byte> value_of_section() {
  std::vector<std::byte> v(64);
  std::memcpy(v.data(), "probe one", 10);
  const uint32_t other = 5, count = 42, late = 7;
  std::memcpy(v.data() + 16, &other, 4);
  std::memcpy(v.data() + 20, &count, 4);
  std::memcpy(v.data() + 60, &late, 4);
  return v;
}

TEST(MetadataFromValueTest, TheVariablesOfRodata) {
  int sec = 0;
  OwnedBtf b = section_btf(".rodata", &sec);
  ASSERT_GT(sec, 0);
  size_t cut = 0;
  auto m = metadata_from_value(b.get(), static_cast<uint32_t>(sec), value_of_section(), &cut);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, (Metadata{{"name", "probe one"},
                          {"count", "42", MetadataKind::kNumber},
                          {"late", "7", MetadataKind::kNumber}}));
  EXPECT_EQ(cut, 0u);
}

TEST(MetadataFromValueTest, VariablesPastTheBytesGivenAreLeftOutAndCounted) {
  int sec = 0;
  OwnedBtf b = section_btf(".rodata", &sec);
  std::vector<std::byte> first = value_of_section();
  first.resize(22);  // name whole, count cut in half, late beyond
  size_t cut = 0;
  auto m = metadata_from_value(b.get(), static_cast<uint32_t>(sec), first, &cut);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, (Metadata{{"name", "probe one"}}));
  EXPECT_EQ(cut, 2u);
  EXPECT_EQ(metadata_from_value(b.get(), static_cast<uint32_t>(sec), {}, &cut), Metadata{});
  EXPECT_EQ(cut, 5u);
}

TEST(MetadataFromValueTest, OnlyTheRodataSectionIsMetadata) {
  int sec = 0;
  OwnedBtf data = section_btf(".data", &sec);
  EXPECT_FALSE(metadata_from_value(data.get(), static_cast<uint32_t>(sec), value_of_section()));
  OwnedBtf rodata = section_btf(".rodata", &sec);
  EXPECT_FALSE(metadata_from_value(rodata.get(), 1, value_of_section()));  // an int, not a section
  EXPECT_FALSE(metadata_from_value(rodata.get(), 1000, value_of_section()));  // no such type
}

}  // namespace
}  // namespace bpfprof::bpf
