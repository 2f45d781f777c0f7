// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the records of the in-kernel capture (capture/bpf/
// capture_abi.h) as the recorder's ring hands them over, assembled into
// programs' info and BTF (capture::CaptureAssembler). The input is a sequence
// of records, each a little-endian u16 length and that many bytes; what does
// not parse must be counted, never read past, and what is assembled must be
// self-consistent.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "capture/capture_records.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bpfprof;
  capture::CaptureAssembler a;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  while (in.size() >= 2) {
    uint16_t len = 0;
    std::memcpy(&len, in.data(), sizeof len);
    in = in.subspan(2);
    len = static_cast<uint16_t>(std::min<size_t>(len, in.size()));
    a.add(in.first(len));
    in = in.subspan(len);
  }
  a.finish();
  for (const auto& [id, p] : a.infos()) {
    // A program is either captured (with info) or incomplete, never both.
    if (!a.captured(id) || a.incomplete().count(id)) std::abort();
    if (p.info.id != id || p.info.jited_prog_len != p.jited_insns.size() ||
        p.info.nr_jited_ksyms != p.jited_ksyms.size() ||
        p.jited_ksyms.size() != p.jited_func_lens.size()) {
      std::abort();
    }
    fuzz::keep(p.func_info.size() + p.line_info.size() + p.jited_line_info.size());
  }
  for (const auto& [id, b] : a.btfs()) fuzz::keep(id + b.data.size());
  std::vector<capture::CapturedLink> links;
  std::vector<uint32_t> missed_links;
  a.take_links(links, missed_links);
  for (const capture::CapturedLink& l : links) {
    // Strings stay within their arrays; only BPF_PROG_ATTACH has no link id.
    if (l.prog_id == 0 || l.name.size() > CAPTURE_NAME_MAX || l.category.size() > CAPTURE_CATEGORY_MAX ||
        l.ifname.size() > CAPTURE_IFNAME_MAX || (l.link_id == 0) != l.has(CAPTURE_LINK_PROG_ATTACH)) {
      std::abort();
    }
    fuzz::keep(l.name.size() + l.category.size() + l.ifname.size());
  }
  for (uint32_t id : missed_links) {
    if (id == 0) std::abort();
  }
  for (const auto& [id, t] : a.test_runs()) fuzz::keep(id + t);
  fuzz::keep(a.bad_records() + a.missed());
  return 0;
}
