// SPDX-License-Identifier: Apache-2.0
#include "export/pprof.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/output_open.h"
#include "base/utf8.h"
#include "export/gzip.h"
#include "profile/group.h"
#include "proto/profile.pb.h"

namespace bpfprof::exporter {
namespace {

namespace pb = perftools::profiles;
using profile::FrameKind;

// The second sample value's type, from the recording's sampling event.
struct PeriodType {
  std::string type, unit;
  bool operator==(const PeriodType&) const = default;
};

PeriodType period_type(const analysis::Header& h) {
  for (const std::string& event : h.events) {
    std::string_view name(event);
    name = name.substr(0, name.find(':'));  // "cpu-clock:u" -> "cpu-clock"
    if (name == "dummy") continue;          // the side-band event
    if (name == "cpu-clock" || name == "task-clock") return {"cpu", "nanoseconds"};
    return {std::string(name), "count"};
  }
  return {"cpu", "nanoseconds"};
}

// "file:line" (as profile frames carry BPF lines) split at the last colon.
std::pair<std::string_view, int64_t> split_line(std::string_view line) {
  size_t colon = line.rfind(':');
  if (colon == std::string_view::npos) return {line, 0};
  int64_t n = 0;
  std::string_view digits = line.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return {line, 0};
  return {line.substr(0, colon), n};
}

// [start, limit) over the program's functions; 0, 0 when no address is known.
std::pair<uint64_t, uint64_t> jit_range(const analysis::ProgramRow& prog) {
  uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  for (const analysis::FunctionRow& f : prog.functions) {
    if (f.addr == 0) continue;
    lo = std::min(lo, f.addr);
    hi = std::max(hi, f.addr + f.len);
  }
  if (hi <= lo) return {0, 0};
  return {lo, hi};
}

// Appends a key part; parts are separated by NUL, which symbols never contain.
void key_part(std::string& key, std::string_view part) {
  key.append(part);
  key.push_back('\0');
}
void key_part(std::string& key, uint64_t n) {
  key.append(reinterpret_cast<const char*>(&n), sizeof n);
}

}  // namespace

struct PprofBuilder::Impl {
  BpfIdentity identity;
  bool bpf_only = false;
  pb::Profile p;
  std::unordered_map<std::string, int64_t> strings;
  std::unordered_map<std::string, uint64_t> mappings, functions, locations;
  std::unordered_map<std::string, int> samples;  // labels + stack -> index in p.sample
  size_t sources = 0;
  uint64_t total_samples = 0, total_period = 0;
  std::optional<PeriodType> period;

  int64_t str(std::string_view s) {
    auto it = strings.find(std::string(s));
    if (it != strings.end()) return it->second;
    int64_t id = p.string_table_size();
    // profile.proto strings must be UTF-8; recorded names may not be.
    p.add_string_table(valid_utf8(s));
    strings.emplace(std::string(s), id);
    return id;
  }

  void set_value_type(pb::ValueType* v, std::string_view type, std::string_view unit) {
    v->set_type(str(type));
    v->set_unit(str(unit));
  }

  uint64_t mapping(const std::string& key, std::string_view filename, std::string_view build_id,
                   uint64_t start, uint64_t limit) {
    auto it = mappings.find(key);
    if (it != mappings.end()) return it->second;
    pb::Mapping* m = p.add_mapping();
    uint64_t id = static_cast<uint64_t>(p.mapping_size());
    m->set_id(id);
    m->set_memory_start(start);
    m->set_memory_limit(limit);
    m->set_filename(str(filename));
    if (!build_id.empty()) m->set_build_id(str(build_id));
    // Every location carries its function: readers must not try to symbolize
    // addresses against these files (they are not on the reader's machine).
    m->set_has_functions(true);
    mappings.emplace(key, id);
    return id;
  }

  uint64_t function(std::string_view name, std::string_view file) {
    std::string key;
    key_part(key, name);
    key_part(key, file);
    auto it = functions.find(key);
    if (it != functions.end()) return it->second;
    pb::Function* f = p.add_function();
    uint64_t id = static_cast<uint64_t>(p.function_size());
    f->set_id(id);
    f->set_name(str(name));
    f->set_system_name(str(name));
    if (!file.empty()) f->set_filename(str(file));
    functions.emplace(std::move(key), id);
    return id;
  }

  uint64_t location(const profile::Frame& frame, const analysis::ReportData& data, size_t source) {
    const bool bpf = frame.kind == FrameKind::kBpf && frame.bpf_program != 0 &&
                     frame.bpf_program <= data.programs.size();
    uint64_t mapping_id = 0, address = 0;
    if (bpf) {
      const size_t index = frame.bpf_program - 1;
      const analysis::ProgramRow& prog = data.programs[index];
      std::string key = "bpf";
      uint64_t start = 0, limit = 0;
      if (identity == BpfIdentity::kInstance) {
        key_part(key, source);
        key_part(key, index);
        std::tie(start, limit) = jit_range(prog);
        if (frame.bpf_function < prog.functions.size()) {
          address = prog.functions[frame.bpf_function].addr;
        }
      } else {
        key_part(key, prog.tag);
        key_part(key, prog.name);
      }
      mapping_id = mapping(key, "[bpf] " + prog.name, prog.tag, start, limit);
    } else {
      std::string key = "dso";
      key_part(key, frame.dso);
      mapping_id = mapping(key, frame.dso, "", 0, 0);
    }
    auto [file, line] = split_line(frame.line);
    uint64_t function_id = function(frame.symbol, file);
    if (line != 0) {
      pb::Mapping* m = p.mutable_mapping(static_cast<int>(mapping_id - 1));
      m->set_has_filenames(true);
      m->set_has_line_numbers(true);
    }
    std::string key;
    for (uint64_t part : {mapping_id, function_id, static_cast<uint64_t>(line), address}) {
      key_part(key, part);
    }
    auto it = locations.find(key);
    if (it != locations.end()) return it->second;
    pb::Location* l = p.add_location();
    uint64_t id = static_cast<uint64_t>(p.location_size());
    l->set_id(id);
    l->set_mapping_id(mapping_id);
    l->set_address(address);
    pb::Line* ln = l->add_line();
    ln->set_function_id(function_id);
    ln->set_line(line);
    locations.emplace(std::move(key), id);
    return id;
  }

  void str_label(std::vector<pb::Label>& labels, std::string_view key, std::string_view value) {
    // String index 0 ("") would read back as a numeric label.
    if (value.empty()) return;
    pb::Label& l = labels.emplace_back();
    l.set_key(str(key));
    l.set_str(str(value));
  }
  void num_label(std::vector<pb::Label>& labels, std::string_view key, int64_t value) {
    pb::Label& l = labels.emplace_back();
    l.set_key(str(key));
    l.set_num(value);
  }

  void add(const analysis::ReportData& data, std::string_view host);
};

void PprofBuilder::Impl::add(const analysis::ReportData& data, std::string_view host) {
  const size_t source = sources++;
  const profile::Profile& prof = data.profile;
  PeriodType type = period_type(data.header);
  // Recordings of different events have no common period unit.
  if (!period) {
    period = type;
  } else if (*period != type) {
    period = PeriodType{"period", "count"};
  }
  set_value_type(p.mutable_sample_type(1), period->type, period->unit);
  set_value_type(p.mutable_period_type(), period->type, period->unit);

  // Frames and samples go in an order fixed by their content, not by which
  // worker met them first: the ids of strings, mappings, functions and
  // locations, the order of the samples — the file's bytes — are the same
  // on every run, at any -j.
  std::vector<profile::FrameId> frames(prof.frame_count());
  for (size_t i = 0; i < frames.size(); i++) frames[i] = static_cast<profile::FrameId>(i);
  auto content = [&prof](profile::FrameId id) {
    const profile::Frame& f = prof.frame(id);
    return std::tie(f.kind, f.dso, f.symbol, f.line, f.bpf_program, f.bpf_function);
  };
  std::sort(frames.begin(), frames.end(),
            [&](profile::FrameId a, profile::FrameId b) { return content(a) < content(b); });
  std::vector<uint64_t> loc_of(prof.frame_count());
  for (profile::FrameId f : frames) loc_of[f] = location(prof.frame(f), data, source);
  // A sample without a callchain or ip is still a sample: an [unknown] leaf
  // keeps pprof's total equal to the report's.
  const uint64_t unknown = location(profile::Frame{}, data, source);

  // Samples by their locations, then what their labels come from (the
  // leaf's program, the thread): equal ones make the same pprof sample.
  using Entry = std::pair<const profile::SampleKey*, const profile::Counts*>;
  std::vector<Entry> entries;
  entries.reserve(prof.samples().size());
  for (const auto& [key, counts] : prof.samples()) entries.emplace_back(&key, &counts);
  auto leaf_program = [&prof](const profile::SampleKey& k) {
    const profile::Frame* leaf = prof.leaf(k.stack);
    return leaf == nullptr ? 0u : leaf->bpf_program;
  };
  std::sort(entries.begin(), entries.end(), [&](const Entry& x, const Entry& y) {
    const profile::SampleKey& a = *x.first;
    const profile::SampleKey& b = *y.first;
    if (a.stack != b.stack) {
      std::span<const profile::FrameId> sa = prof.stack(a.stack), sb = prof.stack(b.stack);
      auto by_location = [&](profile::FrameId l, profile::FrameId r) {
        return loc_of[l] < loc_of[r];
      };
      if (std::lexicographical_compare(sa.begin(), sa.end(), sb.begin(), sb.end(), by_location)) {
        return true;
      }
      if (std::lexicographical_compare(sb.begin(), sb.end(), sa.begin(), sa.end(), by_location)) {
        return false;
      }
    }
    return std::tuple(leaf_program(a), a.thread.pid, a.thread.tid, a.thread.comm, a.thread.cgroup,
                      a.charge) <
           std::tuple(leaf_program(b), b.thread.pid, b.thread.tid, b.thread.comm, b.thread.cgroup,
                      b.charge);
  });

  std::vector<uint64_t> stack;
  std::vector<pb::Label> labels;
  for (const auto& [key_ptr, counts_ptr] : entries) {
    const profile::SampleKey& key = *key_ptr;
    const profile::Counts& counts = *counts_ptr;
    const profile::Frame* leaf = prof.leaf(key.stack);
    if (bpf_only && !profile::is_bpf_leaf(leaf)) continue;
    stack.clear();
    for (profile::FrameId f : prof.stack(key.stack)) stack.push_back(loc_of[f]);
    if (stack.empty()) stack.push_back(unknown);
    labels.clear();
    if (leaf != nullptr && leaf->kind == FrameKind::kBpf && leaf->bpf_program != 0 &&
        leaf->bpf_program <= data.programs.size()) {
      const analysis::ProgramRow& prog = data.programs[leaf->bpf_program - 1];
      if (identity == BpfIdentity::kInstance) {
        str_label(labels, "bpf_prog_id", std::to_string(prog.id));
      }
      str_label(labels, "bpf_prog_tag", prog.tag);
      str_label(labels, "bpf_prog", prog.name);
      str_label(labels, "owner", prog.owner);
      str_label(labels, "owner_cgroup", prog.owner_cgroup);
      str_label(labels, "attach", prog.attach);
    }
    // Whom the sample is charged to (docs/cost.md): its kind, the programs
    // and their owners; several share a hook's dispatch (an estimate).
    if (key.charge != 0) {
      static constexpr std::string_view kKinds[] = {"self", "callees", "dispatch"};
      const profile::Charge& charge = prof.charge(key.charge);
      std::string names, owners;
      for (uint32_t i : charge.programs) {
        if (i > data.programs.size()) continue;
        names += (names.empty() ? "" : ",") + data.programs[i - 1].name;
        owners += (owners.empty() ? "" : ",") + data.programs[i - 1].owner;
      }
      str_label(labels, "bpf_cost", kKinds[static_cast<int>(charge.kind)]);
      str_label(labels, "bpf_cost_prog", names);
      str_label(labels, "bpf_cost_owner", owners);
      if (charge.programs.size() > 1) str_label(labels, "bpf_cost_estimated", "true");
    }
    str_label(labels, "comm", key.thread.comm);
    num_label(labels, "pid", key.thread.pid);
    // The sampled task's cgroup where the sample carries one (record --cgroup).
    if (!key.thread.cgroup.empty() && key.thread.cgroup != "[unknown]") {
      str_label(labels, "cgroup", key.thread.cgroup);
    }
    if (!host.empty()) str_label(labels, "host", host);

    std::string skey;
    for (uint64_t id : stack) key_part(skey, id);
    for (const pb::Label& l : labels) {
      key_part(skey, static_cast<uint64_t>(l.key()));
      key_part(skey, static_cast<uint64_t>(l.str()));
      key_part(skey, static_cast<uint64_t>(l.num()));
    }
    auto [it, fresh] = samples.emplace(std::move(skey), p.sample_size());
    pb::Sample* s = fresh ? p.add_sample() : p.mutable_sample(it->second);
    if (fresh) {
      for (uint64_t id : stack) s->add_location_id(id);
      for (pb::Label& l : labels) *s->add_label() = std::move(l);
      s->add_value(0);
      s->add_value(0);
    }
    s->set_value(0, s->value(0) + static_cast<int64_t>(counts.samples));
    s->set_value(1, s->value(1) + static_cast<int64_t>(counts.period));
    total_samples += counts.samples;
    total_period += counts.period;
  }
  if (total_samples != 0) p.set_period(static_cast<int64_t>(total_period / total_samples));
  const analysis::Header& h = data.header;
  const auto duration = static_cast<int64_t>(h.duration_ns());
  p.set_duration_nanos(std::max<int64_t>(p.duration_nanos(), duration));
  p.add_comment(str(fmt::format("bpfprof: host {} kernel {} arch {} events {} samples {} lost {}",
                                h.host.empty() ? "?" : h.host, h.kernel.empty() ? "?" : h.kernel,
                                h.arch.empty() ? "?" : h.arch, fmt::join(h.events, ","),
                                prof.total().samples, h.lost)));
}

PprofBuilder::PprofBuilder(BpfIdentity identity, bool bpf_only) : impl_(std::make_unique<Impl>()) {
  impl_->identity = identity;
  impl_->bpf_only = bpf_only;
  impl_->str("");  // string_table[0] must be the empty string
  impl_->set_value_type(impl_->p.add_sample_type(), "samples", "count");
  impl_->set_value_type(impl_->p.add_sample_type(), "cpu", "nanoseconds");
  impl_->set_value_type(impl_->p.mutable_period_type(), "cpu", "nanoseconds");
}

PprofBuilder::~PprofBuilder() = default;

void PprofBuilder::add(const analysis::ReportData& data, std::string_view host) {
  impl_->add(data, host);
}

std::string PprofBuilder::serialize() const {
  std::string out;
  impl_->p.SerializeToString(&out);
  return out;
}

Result<std::string> PprofBuilder::encode() const { return gzip_compress(serialize()); }

Result<std::string> render_pprof(const analysis::ReportData& data, bool bpf_only) {
  PprofBuilder b(BpfIdentity::kInstance, bpf_only);
  b.add(data);
  return b.encode();
}

Status write_pprof(const analysis::ReportData& data, const std::string& path) {
  BPFPROF_ASSIGN_OR_RETURN(std::string bytes, render_pprof(data));
  return write_file(path, bytes);
}

Status write_pprof(const analysis::ReportData& data, std::FILE* out) {
  BPFPROF_ASSIGN_OR_RETURN(std::string bytes, render_pprof(data));
  if (std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size() || std::fflush(out) != 0) {
    return make_sys_error("writing the pprof profile", errno);
  }
  return ok_status();
}

}  // namespace bpfprof::exporter
