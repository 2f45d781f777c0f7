// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the pipe-mode reader (`perf record -o -` streams). The
// input is the stream after its 16-byte header, which the target supplies,
// so every mutation lands in the records: HEADER_ATTR (attr.size, ids),
// HEADER_FEATURE payloads, EVENT_UPDATE names, COMPRESSED records, then the
// walk with attribution and parsing under each record's attr.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "perfdata/file_format.h"
#include "perfdata/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bpfprof;
  std::vector<std::byte> stream(perfdata::kPipeHeaderSize + size);
  const uint64_t header[2] = {perfdata::kMagic, perfdata::kPipeHeaderSize};
  std::memcpy(stream.data(), header, sizeof header);
  if (size != 0) std::memcpy(stream.data() + perfdata::kPipeHeaderSize, data, size);
  auto reader = perfdata::FileReader::from_bytes(stream);
  if (!reader.ok()) return 0;
  for (const perfdata::FileAttr& a : reader->attrs()) fuzz::keep(a.ids.size() + a.name.size());
  fuzz::keep(reader->features().bpf_prog_info.size() + reader->feature_errors().size());
  Status s = reader->for_each_record([&](const perf::RecordView& r, uint64_t at) {
    fuzz::keep(at);
    if (const perfdata::FileAttr* attr = reader->attr_for(r)) fuzz::parse_all(r, attr->layout);
  });
  fuzz::keep(s.ok() + reader->stats().records_skipped);
  return 0;
}
