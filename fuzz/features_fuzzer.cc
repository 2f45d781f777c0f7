// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the feature section decoders. The first byte picks the
// section (BPF_PROG_INFO, BPF_BTF, kallsyms, or any feature number through
// decode_feature); the rest is its payload.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "perfdata/file_format.h"
#include "perfdata/kallsyms_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bpfprof;
  if (size < 1) return 0;
  const Bytes payload(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  switch (data[0]) {
    case 0: {
      auto p = perfdata::decode_bpf_prog_info(payload, 64);
      if (p.ok()) {
        for (const bpf::ProgInfo& i : *p) fuzz::keep(i.id() + i.jited_ksyms.size());
        // What we decode we must be able to encode and decode again.
        auto again = perfdata::decode_bpf_prog_info(perfdata::encode_bpf_prog_info(*p), 0);
        if (!again.ok() || again->size() != p->size()) __builtin_trap();
      }
      break;
    }
    case 1: {
      auto b = perfdata::decode_bpf_btf(payload, 64);
      if (b.ok()) fuzz::keep(b->size());
      break;
    }
    case 2: {
      // Version 2 is searched in place, version 5's names are decompressed
      // when asked for: every lookup must stay in bounds.
      auto k = perfdata::KallsymsTable::open(payload, 64);
      if (k.ok()) {
        for (size_t i = 0; i < k->size(); ++i) {
          fuzz::keep(k->floor(k->addr(i)) + k->name(i).size());
          if (k->module(i) != 0) fuzz::keep(k->module_dso(k->module(i)).size());
        }
      }
      break;
    }
    default: {
      perfdata::Features f;
      std::vector<std::string> names;
      (void)perfdata::decode_feature(data[0], payload, 64, f, names);
      fuzz::keep(names.size() + f.cmdline.size());
      break;
    }
  }
  return 0;
}
