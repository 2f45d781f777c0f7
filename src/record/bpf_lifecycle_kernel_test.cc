// SPDX-License-Identifier: Apache-2.0
// Real-kernel test: while `bpfprof record -a` runs (as a subprocess), this
// test loads and unloads a tiny program; the file must tell its whole life
// with the kernel's own name, and carry its bpf_prog_info.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "perf/records.h"
#include "perfdata/reader.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::record {
namespace {

constexpr const char* kProgName = "bpfprof_lc";

bpf_insn insn(uint8_t code, uint8_t dst, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.imm = imm;
  return i;
}

// The /proc/kallsyms name of the function at `addr`.
std::string kallsyms_name_at(uint64_t addr) {
  std::ifstream in("/proc/kallsyms");
  std::string line;
  char want[32];
  std::snprintf(want, sizeof want, "%016llx ", static_cast<unsigned long long>(addr));
  while (std::getline(in, line)) {
    if (line.rfind(want, 0) != 0 || line.find("[bpf]") == std::string::npos) continue;
    size_t name_at = line.find(' ', 17);
    size_t end = line.find('\t', name_at + 1);
    return line.substr(name_at + 1, end - name_at - 1);
  }
  return "";
}

off_t file_size(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

TEST(BpfLifecycleTest, LoadAndUnloadDuringRecording) {
  bpfprof::testing::TempDir dir;
  const std::string data = dir.file("lifecycle.data");
  bpfprof::testing::Background rec(
      {std::string(BPFPROF_BIN_DIR) + "/bpfprof", "record", "-a", "-d", "5", "-q", "-o", data});
  // The file grows past its header once synthesis is written; from then on
  // the side-band events are live.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (file_size(data) < 4096 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(file_size(data), 4096) << "the recorder never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  const bpf_insn prog[] = {insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0),
                           insn(BPF_JMP | BPF_EXIT, 0, 0)};
  int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, kProgName, "GPL", prog, 2, nullptr);
  if (fd < 0 && (-fd == EPERM || -fd == EACCES)) {
    BPFPROF_KERNEL_SKIP(std::string("bpf_prog_load: ") + std::strerror(-fd));
  }
  ASSERT_GE(fd, 0) << std::strerror(-fd);
  bpf_prog_info info{};
  uint64_t jited_ksym = 0;
  info.nr_jited_ksyms = 1;
  info.jited_ksyms = reinterpret_cast<uint64_t>(&jited_ksym);
  uint32_t len = sizeof info;
  ASSERT_EQ(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
  const uint32_t id = info.id;
  const std::string kallsyms_name = kallsyms_name_at(jited_ksym);
  ASSERT_FALSE(kallsyms_name.empty()) << "program not in /proc/kallsyms";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(rec.stop(SIGINT), 0) << "SIGINT ends a recording cleanly";

  auto reader = perfdata::FileReader::open(data);
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  bool ksym_register = false, ksym_unregister = false, load = false, unload = false;
  uint64_t load_time = 0, unload_time = 0;
  auto status = reader->for_each_record([&](const perf::RecordView& r, uint64_t) {
    const perfdata::FileAttr* attr = reader->attr_for(r);
    ASSERT_NE(attr, nullptr);
    if (r.header.type == perf::kRecordKsymbol) {
      auto k = perf::Ksymbol::parse(r, attr->layout);
      ASSERT_TRUE(k.ok());
      // Another process's program may get the address before or after ours
      // (the JIT reuses it): only our name counts, and both events must come.
      if (k->addr != jited_ksym || k->name != kallsyms_name) return;
      EXPECT_EQ(k->ksym_type, perf::kKsymTypeBpf);
      EXPECT_GT(k->sample_id.time, 0u) << "a live record with its real time";
      (k->unregister() ? ksym_unregister : ksym_register) = true;
    } else if (r.header.type == perf::kRecordBpfEvent) {
      auto b = perf::BpfEvent::parse(r, attr->layout);
      ASSERT_TRUE(b.ok());
      if (b->id != id) return;
      if (b->type == perf::kBpfEventProgLoad) {
        load = true;
        load_time = b->sample_id.time;
      } else if (b->type == perf::kBpfEventProgUnload) {
        unload = true;
        unload_time = b->sample_id.time;
      }
    }
  });
  ASSERT_TRUE(status.ok()) << status.error().to_string();
  EXPECT_TRUE(ksym_register) << "no KSYMBOL register of " << kallsyms_name << " at its address";
  EXPECT_TRUE(ksym_unregister) << "no KSYMBOL unregister of " << kallsyms_name;
  EXPECT_TRUE(load);
  EXPECT_TRUE(unload);
  EXPECT_GT(load_time, 0u) << "live, not synthesized";
  EXPECT_GT(unload_time, load_time);
  bool has_info = false;
  for (const auto& p : reader->features().bpf_prog_info) {
    if (p.id() != id) continue;
    has_info = true;
    ASSERT_EQ(p.jited_ksyms.size(), 1u);
    EXPECT_EQ(p.jited_ksyms[0], jited_ksym);
  }
  EXPECT_TRUE(has_info) << "BPF_PROG_INFO entry for id " << id;
}

}  // namespace
}  // namespace bpfprof::record
