// SPDX-License-Identifier: Apache-2.0
#include "report/script.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/sample_frames.h"
#include "report/time_order.h"

namespace bpfprof::report {
namespace {

// Samples formatted per batch: bounded memory however long the recording,
// and enough per batch that starting the threads does not show.
constexpr size_t kBatch = 1 << 14;

void format_sample(const Session& session, const OrderedSample& ref, ScriptFormat format,
                   std::vector<SymbolizedFrame>& frames, std::string& out) {
  auto sample = perf::Sample::parse(ref.record, *ref.layout);
  if (!sample.ok()) {
    // Pass 1 accepted the header; a body that does not parse is still a sample.
    out += format == ScriptFormat::kJson
               ? fmt::format("{{\"error\":\"bad sample at byte offset 0x{:x}\"}}\n", ref.record.offset)
               : fmt::format("# bad sample at byte offset 0x{:x}\n", ref.record.offset);
    return;
  }
  const symbols::Symbolizer& sym = session.symbolizer();
  symbolize_sample(sym, *sample, ref.record.cpumode(), false, frames);
  symbols::Frame leaf;
  uint64_t ip = sample->ip;
  if (!frames.empty()) {
    leaf = frames.front().frame;
    ip = frames.front().ip;
  }
  const bool known = leaf.kind != symbols::FrameKind::kUnknown &&
                     leaf.unknown == symbols::Unknown::kNone && leaf.symbol_start <= ip;
  const uint64_t off = known ? ip - leaf.symbol_start : 0;
  std::string_view comm = sym.comm(sample->pid, sample->tid, sample->time);
  if (format == ScriptFormat::kJson) {
    nlohmann::ordered_json j{{"comm", comm},
                             {"pid", sample->pid},
                             {"tid", sample->tid},
                             {"cpu", sample->cpu},
                             {"time", sample->time},
                             {"period", sample->period},
                             {"ip", fmt::format("0x{:x}", ip)},
                             {"sym", leaf.symbol},
                             {"off", off},
                             {"dso", leaf.dso}};
    if (leaf.bpf_program != 0) {
      // Names repeat across program instances (same code, same tag): the id
      // says which instance ran.
      const symbols::BpfProgram& p = sym.bpf_programs()[leaf.bpf_program - 1];
      j["bpf_prog_id"] = p.id;
      j["bpf_prog"] = p.name;
    }
    out += j.dump();
    out += '\n';
    return;
  }
  std::string where = known ? fmt::format("{}+0x{:x}", leaf.symbol, off) : std::string(leaf.symbol);
  out += fmt::format("{:>16} {:>7}/{:<7} [{:03}] {}.{:06}: {:16x} {} ({})\n", comm, sample->pid,
                     sample->tid, sample->cpu, sample->time / 1000000000,
                     sample->time % 1000000000 / 1000, ip, where, leaf.dso);
}

}  // namespace

Status write_script(const Session& session, const ScriptOptions& options, std::FILE* out) {
  const unsigned threads = options.threads ? options.threads
                                           : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> texts(threads);
  std::vector<std::vector<SymbolizedFrame>> frames(threads);
  Status walked = for_each_in_time_order(
      session, kBatch, [&](std::span<const OrderedSample> batch) -> Status {
        const size_t per = (batch.size() + threads - 1) / threads;
        auto work = [&](unsigned t) {
          texts[t].clear();
          const size_t b = std::min(batch.size(), t * per), e = std::min(batch.size(), b + per);
          for (size_t i = b; i < e; i++) {
            format_sample(session, batch[i], options.format, frames[t], texts[t]);
          }
        };
        std::vector<std::thread> pool;
        for (unsigned t = 1; t < threads && t * per < batch.size(); t++) pool.emplace_back(work, t);
        work(0);
        for (std::thread& th : pool) th.join();
        for (unsigned t = 0; t < threads; t++) {
          if (t > 0 && t * per >= batch.size()) break;
          if (std::fwrite(texts[t].data(), 1, texts[t].size(), out) != texts[t].size()) {
            return make_sys_error("writing the script output", errno);
          }
        }
        return ok_status();
      });
  if (!walked.ok()) return walked;
  if (std::fflush(out) != 0) return make_sys_error("writing the script output", errno);
  return ok_status();
}

}  // namespace bpfprof::report
