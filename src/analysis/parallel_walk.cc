// SPDX-License-Identifier: Apache-2.0
// Pass 1 over a large plain file in two halves at once: a record boundary is
// guessed near the middle and believed only if the first half's walk ends
// exactly there.
#include <algorithm>
#include <system_error>
#include <thread>

#include "analysis/pass1.h"
#include "base/byte_cursor.h"
#include "perfdata/file_format.h"

namespace bpfprof::analysis {
namespace {

// A guessed record boundary is believed after this many plausible headers in
// a row (or the data end); the walk before it must also land on it exactly.
constexpr int kBoundaryChain = 32;
// How far past the middle a boundary is looked for.
constexpr uint64_t kBoundarySearch = 1 << 20;

// Whether `data` holds, from `pos`, kBoundaryChain plausible record headers
// in a row (or plausible ones up to its end exactly).
bool plausible_records_at(Bytes data, size_t pos) {
  for (int i = 0; i < kBoundaryChain; i++) {
    if (pos == data.size()) return true;
    if (data.size() - pos < sizeof(perf::RecordHeader)) return false;
    const auto h = load_unaligned<perf::RecordHeader>(data.data() + pos);
    if (h.size < sizeof(perf::RecordHeader) || h.size % 8 != 0 || h.size > data.size() - pos ||
        !known_type(h.type) || h.type == perf::kRecordCompressed ||
        perfdata::trailing_payload(h.type, data.subspan(pos, h.size)) != 0) {
      return false;
    }
    pos += h.size;
  }
  return true;
}

// A likely record boundary at or after the middle of the data section
// (8-byte aligned, as perf and bpfprof write records); 0 if none is found.
uint64_t guess_boundary(Bytes data) {
  const size_t from = data.size() / 2 / 8 * 8;
  const size_t to = std::min(data.size(), from + kBoundarySearch);
  for (size_t pos = from; pos + sizeof(perf::RecordHeader) <= to; pos += 8) {
    if (plausible_records_at(data, pos)) return pos;
  }
  return 0;
}

}  // namespace

// Two halves at once when the file is large and plain: the second half starts
// at a guessed record boundary, which only counts if the first half's walk
// ends exactly there. Anything else (no boundary found, a walk that does not
// land on it, any error, a COMPRESSED record) leaves the pieces unused: the
// caller walks the whole section in one piece, which also names any error.
std::optional<Session::Pieces> Session::walk_in_parallel(uint64_t min_bytes) {
  const uint64_t size = reader_.data_size();
  const perfdata::Features& f = reader_.features();
  if (size / 2 < min_bytes || f.compression || reader_.truncated_header()) {
    return std::nullopt;
  }
  const uint64_t cut = guess_boundary(reader_.data_section());
  if (cut == 0) return std::nullopt;
  const uint64_t begin = reader_.data_offset(), seam = begin + cut, end = begin + size;
  Pieces pieces;
  pieces.push_back(std::make_unique<Piece>(*this));
  pieces.push_back(std::make_unique<Piece>(*this));
  perfdata::ReaderStats skipped[2];
  Status walked[2] = {ok_status(), ok_status()};
  auto walk = [&](int i, uint64_t from, uint64_t to) {
    walked[i] = pieces[static_cast<size_t>(i)]->walk(from, to, &skipped[i]);
  };
  try {
    std::thread second(walk, 1, seam, end);
    walk(0, begin, seam);
    second.join();
  } catch (const std::system_error&) {
    return std::nullopt;  // no thread
  }
  if (!walked[0].ok() || !walked[1].ok() || pieces[0]->last_end != seam) return std::nullopt;
  for (int i = 0; i < 2; i++) {
    for (const auto& [type, n] : skipped[i].unknown_record_types) {
      counters_[Diag::kRecordsUnknownType] += n;
    }
  }
  return pieces;
}

}  // namespace bpfprof::analysis
