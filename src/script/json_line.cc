// SPDX-License-Identifier: Apache-2.0
// The JSON form of a script line: one object per sample, its frames as an
// array with callchains.
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/aggregate.h"
#include "script/json_string.h"
#include "script/line_parts.h"

namespace bpfprof::script {
namespace {

// The JSON array of a sample's frames, leaf first:
// [{"ip":"0x..","sym":..,"off":..,"dso":..[,"bpf_prog_id":..]},..].
void append_json_callchain(std::string& t, const symbols::Symbolizer& sym,
                           const std::vector<analysis::SymbolizedFrame>& frames) {
  t += ",\"callchain\":[";
  std::string buf;
  for (size_t i = 0; i < frames.size(); i++) {
    const analysis::SymbolizedFrame& fr = frames[i];
    if (i) t += ',';
    const JsonString name(fr.frame.symbol), dso(fr.frame.dso);
    buf.resize(name.size() + dso.size() + kPad);
    fmt::format_to(std::back_inserter(t), "{{\"ip\":\"0x{:x}\",\"sym\":", fr.ip);
    t.append(buf.data(), static_cast<size_t>(name.put(buf.data()) - buf.data()));
    fmt::format_to(std::back_inserter(t), ",\"off\":{},\"dso\":",
                   offset_known(fr.frame, fr.ip) ? fr.ip - fr.frame.symbol_start : 0);
    t.append(buf.data(), static_cast<size_t>(dso.put(buf.data()) - buf.data()));
    if (fr.frame.bpf_program != 0) {
      fmt::format_to(std::back_inserter(t), ",\"bpf_prog_id\":{}",
                     sym.bpf_programs()[fr.frame.bpf_program - 1].id);
    }
    t += '}';
  }
  t += ']';
}

}  // namespace

void format_json(const analysis::Session& session, const analysis::OrderedSample& ref,
                 const perf::Sample& sample, const ScriptOptions& options, LineScratch& scratch,
                 TextBuffer& out) {
  const symbols::Symbolizer& sym = session.symbolizer();
  std::vector<analysis::SymbolizedFrame>& frames = scratch.frames;
  const std::string_view comm = sym.comm(sample.pid, sample.tid, sample.time);
  analysis::symbolize_sample(sym, sample, ref.record.cpumode(), false, frames);
  const symbols::Frame& leaf = frames.empty() ? kNoFrame : frames.front().frame;
  const uint64_t ip = frames.empty() ? sample.ip : frames.front().ip;
  const uint64_t off = offset_known(leaf, ip) ? ip - leaf.symbol_start : 0;
  // {"comm":..,"pid":..,"tid":..,"cpu":..,"time":..,"period":..,"ip":"0x..",
  //  "sym":..,"off":..,"dso":..[,"bpf_prog_id":..,"bpf_prog":..,"owner":..,
  //  "owner_cgroup":..,"attach":..[,"cgroup":..]][,"bpf_cost":..,
  //  "bpf_cost_prog_ids":[..][,"dispatch_estimated":true]]}, as
  // nlohmann::ordered_json dumps it.
  const JsonString comm_json(comm), sym_json(leaf.symbol), dso_json(leaf.dso);
  const symbols::BpfProgram* prog =
      leaf.bpf_program != 0 ? &sym.bpf_programs()[leaf.bpf_program - 1] : nullptr;
  std::optional<JsonString> prog_json, owner_json, owner_cgroup_json, attach_json, cgroup_json;
  std::string cgroup_text;  // JsonString views it
  if (prog != nullptr) {
    prog_json.emplace(prog->name);
    const perfdata::Features& features = session.reader().features();
    std::vector<LineScratch::Owner>& owners = scratch.owners;
    if (owners.size() < leaf.bpf_program) owners.resize(sym.bpf_programs().size());
    LineScratch::Owner& owner = owners[leaf.bpf_program - 1];
    if (owner.name.empty()) {
      owner.name = analysis::program_owner(sym, features, *prog);
      owner.cgroup = analysis::program_owner_cgroup(sym, features, *prog);
    }
    owner_json.emplace(owner.name);
    owner_cgroup_json.emplace(owner.cgroup);
    if (!scratch.attach_index) scratch.attach_index = analysis::attach_index(features);
    std::vector<std::string>& points = scratch.attach;
    if (points.size() < leaf.bpf_program) points.resize(sym.bpf_programs().size());
    std::string& attach = points[leaf.bpf_program - 1];
    if (attach.empty()) attach = analysis::program_attach(features, *scratch.attach_index, prog->id);
    attach_json.emplace(attach);
    if (sample.cgroup != 0) {
      const std::string_view path = sym.cgroup_path(sample.cgroup);
      cgroup_text = path.empty() ? fmt::format("[cgroup id {}]", sample.cgroup) : std::string(path);
      cgroup_json.emplace(cgroup_text);
    }
  }
  // Whom the sample is charged to, from its kernel chain.
  bool charged = false;
  if (!sample.callchain.empty()) {
    if (!scratch.cost) {
      scratch.cost = std::make_unique<analysis::CostModel>(sym, session.reader().features());
    }
    analysis::symbolize_for_charge(sym, sample, ref.record.cpumode(), scratch.chain);
    charged = scratch.cost->classify(scratch.chain, analysis::chain_truncated(sample),
                                     sample.pid, sample.time, scratch.cost_cache, scratch.charge,
                                     nullptr) == analysis::CostOutcome::kCharged;
  }
  char* p = out.reserve(kLineFixed + comm_json.size() + sym_json.size() + dso_json.size() +
                        (charged ? 96 + 11 * scratch.charge.programs.size() : 0) +
                        (prog_json ? prog_json->size() + owner_json->size() +
                                         owner_cgroup_json->size() + attach_json->size() + 52
                                   : 0) +
                        (cgroup_json ? cgroup_json->size() + 16 : 0));
  p = put(p, "{\"comm\":");
  p = comm_json.put(p);
  p = put(p, ",\"pid\":");
  p = put_int(p, signed_id(sample.pid));
  p = put(p, ",\"tid\":");
  p = put_int(p, signed_id(sample.tid));
  p = put(p, ",\"cpu\":");
  p = put_uint(p, sample.cpu);
  p = put(p, ",\"time\":");
  p = put_uint(p, sample.time);
  p = put(p, ",\"period\":");
  p = put_uint(p, sample.period);
  p = put(p, ",\"ip\":\"0x");
  p = put_hex(p, ip);
  p = put(p, "\",\"sym\":");
  p = sym_json.put(p);
  p = put(p, ",\"off\":");
  p = put_uint(p, off);
  p = put(p, ",\"dso\":");
  p = dso_json.put(p);
  if (prog != nullptr) {
    // Names repeat across program instances (same code, same tag): the id
    // says which instance ran.
    p = put(p, ",\"bpf_prog_id\":");
    p = put_uint(p, prog->id);
    p = put(p, ",\"bpf_prog\":");
    p = prog_json->put(p);
    p = put(p, ",\"owner\":");
    p = owner_json->put(p);
    p = put(p, ",\"owner_cgroup\":");
    p = owner_cgroup_json->put(p);
    p = put(p, ",\"attach\":");
    p = attach_json->put(p);
    if (cgroup_json) {
      p = put(p, ",\"cgroup\":");
      p = cgroup_json->put(p);
    }
  }
  if (charged) {
    static constexpr const char* kKinds[] = {"self", "callees", "dispatch"};
    p = put(p, ",\"bpf_cost\":\"");
    p = put(p, kKinds[static_cast<int>(scratch.charge.kind)]);
    p = put(p, "\",\"bpf_cost_prog_ids\":[");
    for (size_t i = 0; i < scratch.charge.programs.size(); i++) {
      if (i) p = put(p, ",");
      p = put_uint(p, sym.bpf_programs()[scratch.charge.programs[i] - 1].id);
    }
    p = put(p, "]");
    if (scratch.charge.programs.size() > 1) p = put(p, ",\"dispatch_estimated\":true");
  }
  if (options.callchain) {
    out.commit(p);
    std::string& t = scratch.text;
    t.clear();
    analysis::symbolize_sample(sym, sample, ref.record.cpumode(), true, scratch.chain);
    append_json_callchain(t, sym, scratch.chain);
    t += "}\n";
    out.append(t);
    return;
  }
  p = put(p, "}\n");
  out.commit(p);
}

}  // namespace bpfprof::script
