// SPDX-License-Identifier: Apache-2.0
// The names bpfprof computes for JIT'd functions must equal what the running
// kernel registers: its PERF_RECORD_KSYMBOL records and /proc/kallsyms.
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <map>

#include "bpf/query.h"
#include "host/kernel_maps.h"
#include "testing/bpf_programs.h"

namespace bpfprof::bpf {
namespace {

// Collects KSYMBOL registrations from a dummy event on every online CPU.
class KsymbolObserver {
 public:
  static constexpr size_t kDataPages = 16;

  ~KsymbolObserver() {
    for (Ring& r : rings_) munmap(r.base, r.bytes);
  }

  // Fails the test on error; returns false when the event cannot be opened.
  bool open() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < ncpu; ++cpu) {
      perf_event_attr attr{};
      attr.size = sizeof attr;
      attr.type = PERF_TYPE_SOFTWARE;
      attr.config = PERF_COUNT_SW_DUMMY;
      attr.ksymbol = 1;
      int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, static_cast<int>(cpu), -1,
                                        PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) {
        std::cout << "perf_event_open on cpu " << cpu << ": " << std::strerror(errno) << "\n";
        return false;
      }
      Ring r;
      r.fd.reset(fd);
      r.bytes = (kDataPages + 1) * page_;
      void* base = mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) {
        ADD_FAILURE() << "mmap: " << std::strerror(errno);
        return false;
      }
      r.base = static_cast<uint8_t*>(base);
      rings_.push_back(std::move(r));
    }
    return true;
  }

  // Registered names by address (unregisters are dropped: we only load here).
  std::multimap<uint64_t, std::string> drain() {
    std::multimap<uint64_t, std::string> out;
    for (Ring& r : rings_) {
      auto* meta = reinterpret_cast<perf_event_mmap_page*>(r.base);
      const uint8_t* data = r.base + page_;
      const uint64_t size = kDataPages * page_;
      uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
      uint64_t tail = meta->data_tail;
      while (tail < head) {
        perf_event_header h;
        copy_out(data, size, tail, &h, sizeof h);
        std::vector<uint8_t> rec(h.size);
        copy_out(data, size, tail, rec.data(), h.size);
        if (h.type == PERF_RECORD_KSYMBOL && h.size > 24) {
          uint64_t addr;
          uint16_t flags;
          std::memcpy(&addr, rec.data() + 8, 8);
          std::memcpy(&flags, rec.data() + 22, 2);
          const char* name = reinterpret_cast<const char*>(rec.data() + 24);
          if (!(flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER)) {
            out.emplace(addr, std::string(name, strnlen(name, h.size - 24)));
          }
        }
        tail += h.size;
      }
      __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    }
    return out;
  }

 private:
  struct Ring {
    UniqueFd fd;
    uint8_t* base = nullptr;
    size_t bytes = 0;
  };

  static void copy_out(const uint8_t* data, uint64_t size, uint64_t pos, void* dst, size_t n) {
    auto* d = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = data[(pos + i) % size];
  }

  size_t page_ = 4096;
  std::vector<Ring> rings_;
};

std::vector<std::string> names_at(const std::vector<KallsymsEntry>& ks, uint64_t addr) {
  std::vector<std::string> out;
  for (const KallsymsEntry& e : ks) {
    if (e.addr == addr) out.push_back(e.name);
  }
  return out;
}

std::vector<std::string> names_at(const std::multimap<uint64_t, std::string>& m, uint64_t addr) {
  std::vector<std::string> out;
  for (auto [it, end] = m.equal_range(addr); it != end; ++it) out.push_back(it->second);
  return out;
}

// For each function of the program behind `fd`: the computed name (no
// kallsyms) must be the kernel's KSYMBOL name and its kallsyms name, and
// resolving with kallsyms must give the same.
void expect_names_match(int fd, const std::multimap<uint64_t, std::string>& ksymbols,
                        const char* what) {
  auto computed = read_prog_info(fd, {}, nullptr);
  ASSERT_TRUE(computed.ok()) << computed.error().to_string();
  auto kallsyms = host::read_kallsyms();  // as the recorder reads it
  ASSERT_TRUE(kallsyms.ok()) << kallsyms.error().to_string();
  auto from_kallsyms = read_prog_info(fd, kallsyms->bpf, nullptr);
  ASSERT_TRUE(from_kallsyms.ok()) << from_kallsyms.error().to_string();
  ProgInfo with_btf = *computed;  // resolve directly from a BTF blob we pass in
  if (with_btf.info.btf_id != 0) {
    auto btf = read_btf(with_btf.info.btf_id);
    ASSERT_TRUE(btf.ok()) << btf.error().to_string();
    resolve_ksym_names(with_btf, {}, &*btf);
  } else {
    resolve_ksym_names(with_btf, {}, nullptr);
  }
  const ProgInfo& p = *computed;
  ASSERT_EQ(p.ksym_names.size(), p.jited_ksyms.size());
  std::cout << what << ": id " << p.id() << " name '" << p.name() << "' tag " << tag_hex(p.tag())
            << " btf_id " << p.info.btf_id << "\n";
  for (size_t i = 0; i < p.jited_ksyms.size(); ++i) {
    uint64_t addr = p.jited_ksyms[i];
    std::vector<std::string> in_kallsyms = names_at(kallsyms->bpf, addr);
    std::vector<std::string> in_ksymbol = names_at(ksymbols, addr);
    std::cout << "  func " << i << " prog_tag " << tag_hex(p.prog_tags.at(i)) << " computed "
              << p.ksym_names[i] << "\n";
    for (const auto& n : in_kallsyms) std::cout << "    kallsyms " << n << "\n";
    for (const auto& n : in_ksymbol) std::cout << "    KSYMBOL  " << n << "\n";
    EXPECT_EQ(in_ksymbol, std::vector<std::string>{p.ksym_names[i]}) << what << " func " << i;
    EXPECT_EQ(in_kallsyms, std::vector<std::string>{p.ksym_names[i]}) << what << " func " << i;
    EXPECT_EQ(from_kallsyms->ksym_names[i], p.ksym_names[i]) << what << " func " << i;
    EXPECT_EQ(with_btf.ksym_names[i], p.ksym_names[i]) << what << " func " << i;
  }
}

class KsymNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!observer_.open()) GTEST_SKIP() << "cannot observe KSYMBOL records (see above)";
  }
  KsymbolObserver observer_;
};

TEST_F(KsymNamesTest, ProgramsWithBtf) {
  auto obj = testing::load_query_progs();
  if (!obj.ok() && obj.error().sys_errno == EPERM) {
    GTEST_SKIP() << "kernel refused to load BPF programs: " << obj.error().to_string();
  }
  ASSERT_TRUE(obj.ok()) << obj.error().to_string();
  auto ksymbols = observer_.drain();
  expect_names_match(testing::prog_fd_in(obj->get(), "query_main_calls_sub"), ksymbols, "bpf2bpf with BTF");
  expect_names_match(testing::prog_fd_in(obj->get(), "query_single_function"), ksymbols, "single with BTF");
}

TEST_F(KsymNamesTest, ProgramsWithoutBtf) {
  struct Case {
    const char* what;
    std::string name;
    bool subprog;
  };
  const Case cases[] = {
      {"single named, no BTF", "raw_single", false},
      {"single unnamed, no BTF", "", false},
      {"bpf2bpf named, no BTF", "raw_calls", true},
      {"bpf2bpf unnamed, no BTF", "", true},
  };
  std::vector<UniqueFd> fds;
  for (const Case& c : cases) {
    auto fd = testing::load_raw_prog(c.name, c.subprog);
    if (!fd.ok() && fd.error().sys_errno == EPERM) {
      GTEST_SKIP() << "kernel refused to load BPF programs: " << fd.error().to_string();
    }
    ASSERT_TRUE(fd.ok()) << c.what << ": " << fd.error().to_string();
    fds.push_back(std::move(fd).value());
  }
  auto ksymbols = observer_.drain();
  for (size_t i = 0; i < fds.size(); ++i) {
    expect_names_match(fds[i].get(), ksymbols, cases[i].what);
  }
}

}  // namespace
}  // namespace bpfprof::bpf
