// SPDX-License-Identifier: Apache-2.0
// BPF source lines against the real kernel: load testdata/lines_progs.bpf.c,
// fetch what the recorder would store (bpf_prog_info + BTF), then check that
// the Symbolizer maps JIT addresses to file:line and text from the file alone.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "bpf/query.h"
#include "symbols/bpf_lines.h"
#include "testing/paths.h"
#include "testing/symbolizer_feeder.h"

namespace bpfprof::symbols {
namespace {

struct ObjectCloser {
  void operator()(bpf_object* o) const { bpf_object__close(o); }
};
using ObjectPtr = std::unique_ptr<bpf_object, ObjectCloser>;

// 1-based line of the first line of the source that contains `marker`.
uint32_t line_of(const std::string& marker) {
  std::ifstream in(BPFPROF_LINES_PROGS_SRC);
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  return 0;
}

// JIT address of the first line_info entry for `line` inside [lo, hi).
uint64_t jit_addr_of_line(const bpf::ProgInfo& p, uint32_t line, uint64_t lo, uint64_t hi) {
  const uint32_t rec = p.info.line_info_rec_size;
  for (size_t i = 0; i < p.jited_line_info.size() && (i + 1) * rec <= p.line_info.size(); ++i) {
    bpf_line_info li;
    std::memcpy(&li, p.line_info.data() + i * rec, sizeof li);
    const uint64_t a = p.jited_line_info[i];
    if (BPF_LINE_INFO_LINE_NUM(li.line_col) == line && a >= lo && a < hi) return a;
  }
  return 0;
}

class BpfLinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    obj_.reset(bpf_object__open_file(BPFPROF_LINES_PROGS_OBJ, nullptr));
    ASSERT_TRUE(obj_) << "open " << BPFPROF_LINES_PROGS_OBJ << ": " << std::strerror(errno);
    int rc = bpf_object__load(obj_.get());
    if (rc == -EPERM) GTEST_SKIP() << "kernel refused to load BPF programs (EPERM)";
    ASSERT_EQ(rc, 0) << std::strerror(-rc);
    bpf_program* prog = bpf_object__find_program_by_name(obj_.get(), "lines_main");
    ASSERT_NE(prog, nullptr);
    auto info = bpf::read_prog_info(bpf_program__fd(prog));
    ASSERT_TRUE(info.ok()) << info.error().to_string();
    ASSERT_EQ(info->jited_ksyms.size(), 2u) << "main + lines_sub";
    auto btf = bpf::read_btf(info->info.btf_id);
    ASSERT_TRUE(btf.ok()) << btf.error().to_string();
    features_.bpf_prog_info.push_back(std::move(info).value());
    features_.bpf_btf.push_back(std::move(btf).value());
  }

  // A Symbolizer that saw the program's KSYMBOLs and PROG_LOAD at time 0.
  std::unique_ptr<Symbolizer> symbolizer(bool with_btf) {
    if (!with_btf) features_.bpf_btf.clear();
    auto sym = std::make_unique<Symbolizer>(features_, Symbolizer::Options{});
    testing::Feeder f(*sym);
    const bpf::ProgInfo& p = features_.bpf_prog_info[0];
    for (size_t i = 0; i < p.jited_ksyms.size(); ++i) {
      f.ksym(0, p.jited_ksyms[i], p.jited_func_lens[i], bpf::ksym_name(p.prog_tags[i], "f" + std::to_string(i)));
    }
    f.load(0, p.id(), p.tag());
    sym->finish();
    return sym;
  }

  ObjectPtr obj_;
  perfdata::Features features_;
};

TEST_F(BpfLinesTest, JitAddressToSourceLine) {
  auto sym = symbolizer(/*with_btf=*/true);
  const bpf::ProgInfo& p = features_.bpf_prog_info[0];
  struct Case {
    const char* marker;
    size_t function;
  };
  for (const Case& c : {Case{"MAIN_MARKER", 0}, Case{"SUB_MARKER", 1}}) {
    SCOPED_TRACE(c.marker);
    const uint32_t line = line_of(c.marker);
    ASSERT_NE(line, 0u);
    const uint64_t lo = p.jited_ksyms[c.function], hi = lo + p.jited_func_lens[c.function];
    const uint64_t addr = jit_addr_of_line(p, line, lo, hi);
    ASSERT_NE(addr, 0u) << "no line info for line " << line;
    Frame fr = sym->lookup(0, addr + 1, 5, /*kernel=*/true);
    ASSERT_EQ(fr.kind, FrameKind::kBpf);
    EXPECT_EQ(fr.bpf_function, c.function);
    auto sl = sym->bpf_line(fr, addr + 1);
    ASSERT_TRUE(sl.has_value());
    EXPECT_EQ(sl->line, line);
    EXPECT_TRUE(sl->file.ends_with("lines_progs.bpf.c")) << sl->file;
    EXPECT_NE(sl->text.find(c.marker), std::string_view::npos) << sl->text;
  }
  EXPECT_EQ(sym->bpf_programs()[0].name, "lines_main");
}

TEST_F(BpfLinesTest, NoBtfNoLine) {
  auto sym = symbolizer(/*with_btf=*/false);
  const uint64_t addr = features_.bpf_prog_info[0].jited_ksyms[0];
  Frame fr = sym->lookup(0, addr + 1, 5, true);
  ASSERT_EQ(fr.kind, FrameKind::kBpf);
  EXPECT_FALSE(sym->bpf_line(fr, addr + 1).has_value());
  Frame kernel;
  kernel.kind = FrameKind::kKernel;
  EXPECT_FALSE(sym->bpf_line(kernel, addr + 1).has_value());
}

}  // namespace
}  // namespace bpfprof::symbols
