// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the perf.data reader (file mode, pipe mode, zstd records,
// feature table). Opens the input, walks every record, attributes it, and
// parses it under its attr's layout.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "perfdata/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bpfprof;
  const Bytes input(reinterpret_cast<const std::byte*>(data), size);
  auto reader = perfdata::FileReader::from_bytes(input);
  if (!reader.ok()) return 0;
  for (const perfdata::FileAttr& a : reader->attrs()) fuzz::keep(a.ids.size() + a.name.size());
  fuzz::keep(reader->features().kallsyms ? reader->features().kallsyms->size() : 0);
  Status s = reader->for_each_record([&](const perf::RecordView& r, uint64_t at) {
    fuzz::keep(at);
    if (const perfdata::FileAttr* attr = reader->attr_for(r)) fuzz::parse_all(r, attr->layout);
  });
  fuzz::keep(s.ok() + reader->stats().records_skipped);
  return 0;
}
