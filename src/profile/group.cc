// SPDX-License-Identifier: Apache-2.0
#include "profile/group.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

namespace bpfprof::profile {
namespace {

constexpr SortKey kAllKeys[] = {SortKey::kProg, SortKey::kSym,  SortKey::kDso,
                                SortKey::kComm, SortKey::kPid,  SortKey::kLine,
                                SortKey::kCgroup, SortKey::kContainer, SortKey::kOwner,
                                SortKey::kAttach};

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// `<prefix><64 hex>.scope` -> the id, else empty.
std::string_view scope_id(std::string_view segment, std::string_view prefix) {
  if (!segment.starts_with(prefix) || !segment.ends_with(".scope")) return {};
  std::string_view id = segment.substr(prefix.size(), segment.size() - prefix.size() - 6);
  return is_hex64(id) ? id : std::string_view();
}

// The value of `key` for samples with this leaf and thread; `charged`, when
// not 0, is the program they are charged to (GroupOptions::cost_total) as
// `kind` says.
std::string value_of(SortKey key, const Frame* leaf, const Thread& thread,
                     const GroupOptions& options, uint32_t charged, ChargeKind kind) {
  const std::vector<std::string>& program_names = options.program_names;
  if (charged != 0 && (key == SortKey::kProg || key == SortKey::kOwner || key == SortKey::kAttach)) {
    const std::vector<std::string>& values = key == SortKey::kProg    ? options.program_names
                                             : key == SortKey::kOwner ? options.program_owners
                                                                      : options.program_attach;
    if (charged <= values.size()) return values[charged - 1];
    return key == SortKey::kProg ? fmt::format("[program {}]", charged) : "[unknown]";
  }
  switch (key) {
    case SortKey::kProg:
      // A trampoline or dispatcher belongs to no program: its own name says most.
      if (leaf != nullptr && leaf->kind == FrameKind::kBpfImage) return std::string(leaf->symbol);
      if (leaf == nullptr || leaf->bpf_program == 0) return "[not bpf]";
      if (leaf->bpf_program <= program_names.size()) return program_names[leaf->bpf_program - 1];
      return fmt::format("[program {}]", leaf->bpf_program);
    case SortKey::kSym:
      return leaf ? std::string(leaf->symbol) : "[unknown]";
    case SortKey::kDso:
      return leaf ? std::string(leaf->dso) : "[unknown]";
    case SortKey::kComm:
      return std::string(thread.comm);
    case SortKey::kPid:
      return fmt::format("{}:{}", thread.pid, thread.comm);
    case SortKey::kLine:
      // A program's callees and dispatch are not its lines: say which they are.
      if (charged != 0 && kind == ChargeKind::kCallee) return "[callees]";
      if (charged != 0 && kind == ChargeKind::kDispatch) return "[dispatch]";
      return leaf && !leaf->line.empty() ? std::string(leaf->line) : "[unknown]";
    case SortKey::kCgroup:
      return thread.cgroup.empty() ? "[unknown]" : std::string(thread.cgroup);
    case SortKey::kContainer:
      if (thread.cgroup.empty() || thread.cgroup.starts_with("[")) return "[unknown]";
      return container_of(thread.cgroup);
    case SortKey::kOwner:
      if (leaf == nullptr || leaf->kind != FrameKind::kBpf || leaf->bpf_program == 0) {
        return "[not bpf]";
      }
      if (leaf->bpf_program <= options.program_owners.size()) {
        return options.program_owners[leaf->bpf_program - 1];
      }
      return "[unknown]";
    case SortKey::kAttach:
      if (leaf == nullptr || leaf->kind != FrameKind::kBpf || leaf->bpf_program == 0) {
        return "[not bpf]";
      }
      if (leaf->bpf_program <= options.program_attach.size()) {
        return options.program_attach[leaf->bpf_program - 1];
      }
      return "[unknown]";
  }
  return "";
}

// Callers-tree node while building: children by (symbol, dso).
struct BuildNode {
  uint64_t samples = 0;
  std::map<std::pair<std::string_view, std::string_view>, std::unique_ptr<BuildNode>> children;
};

CallNode finish_node(const std::string_view symbol, std::string_view dso, const BuildNode& b) {
  CallNode out{std::string(symbol), std::string(dso), b.samples, {}};
  out.children.reserve(b.children.size());
  for (const auto& [key, child] : b.children) {
    out.children.push_back(finish_node(key.first, key.second, *child));
  }
  std::stable_sort(out.children.begin(), out.children.end(),
                   [](const CallNode& a, const CallNode& b) { return a.samples > b.samples; });
  return out;
}

}  // namespace

std::string_view sort_key_name(SortKey key) {
  switch (key) {
    case SortKey::kProg: return "prog";
    case SortKey::kSym: return "sym";
    case SortKey::kDso: return "dso";
    case SortKey::kComm: return "comm";
    case SortKey::kPid: return "pid";
    case SortKey::kLine: return "line";
    case SortKey::kCgroup: return "cgroup";
    case SortKey::kContainer: return "container";
    case SortKey::kOwner: return "owner";
    case SortKey::kAttach: return "attach";
  }
  return "?";
}

bool needs_cgroups(const std::vector<SortKey>& keys) {
  return std::any_of(keys.begin(), keys.end(), [](SortKey k) {
    return k == SortKey::kCgroup || k == SortKey::kContainer;
  });
}

std::string container_of(std::string_view path) {
  static constexpr std::pair<std::string_view, std::string_view> kScopes[] = {
      {"docker-", "docker"},
      {"cri-containerd-", "containerd"},
      {"crio-", "cri-o"},
      {"libpod-", "podman"},
  };
  // The innermost segment that names a container wins.
  std::string_view rest = path;
  std::string_view parent;
  std::string found;
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    for (const auto& [prefix, runtime] : kScopes) {
      if (std::string_view id = scope_id(segment, prefix); !id.empty()) {
        found = fmt::format("{}:{}", runtime, id.substr(0, 12));
      }
    }
    if (is_hex64(segment)) {
      found = fmt::format("{}:{}", parent == "docker" ? "docker" : "container", segment.substr(0, 12));
    }
    if (!segment.empty()) parent = segment;
  }
  return found.empty() ? std::string(path) : found;
}

std::string valid_sort_keys() {
  std::string out;
  for (SortKey k : kAllKeys) {
    if (!out.empty()) out += ", ";
    out += sort_key_name(k);
  }
  return out;
}

Result<std::vector<SortKey>> parse_sort_keys(const std::vector<std::string>& args) {
  std::vector<SortKey> keys;
  for (const std::string& arg : args) {
    size_t start = 0;
    while (start <= arg.size()) {
      size_t comma = arg.find(',', start);
      if (comma == std::string::npos) comma = arg.size();
      std::string_view word(arg.data() + start, comma - start);
      start = comma + 1;
      if (word.empty()) continue;
      auto it = std::find_if(std::begin(kAllKeys), std::end(kAllKeys),
                             [&](SortKey k) { return sort_key_name(k) == word; });
      if (it == std::end(kAllKeys)) {
        return make_error(Errc::kInvalidArgument,
                          fmt::format("unknown sort key '{}' (valid keys: {})", word,
                                      valid_sort_keys()));
      }
      if (std::find(keys.begin(), keys.end(), *it) == keys.end()) keys.push_back(*it);
    }
  }
  if (keys.empty()) keys.push_back(SortKey::kSym);
  return keys;
}

bool is_bpf_leaf(const Frame* leaf) {
  return leaf != nullptr && (leaf->kind == FrameKind::kBpf || leaf->kind == FrameKind::kBpfImage);
}

std::vector<Row> group(const Profile& profile, const GroupOptions& options) {
  const bool has_sym =
      std::find(options.keys.begin(), options.keys.end(), SortKey::kSym) != options.keys.end();
  const bool by_program = std::any_of(options.keys.begin(), options.keys.end(), [](SortKey k) {
    return k == SortKey::kProg || k == SortKey::kOwner || k == SortKey::kAttach;
  });
  std::vector<Row> rows;
  std::unordered_map<std::string, size_t> index;
  std::string joined;
  // The (charged program, counts) parts of one sample key.
  std::vector<std::pair<uint32_t, Counts>> parts;
  std::vector<uint64_t> weights;
  for (const auto& [key, counts] : profile.samples()) {
    const Frame* leaf = profile.leaf(key.stack);
    const Charge* charge =
        options.cost_total && key.charge != 0 ? &profile.charge(key.charge) : nullptr;
    if (options.bpf_only && !is_bpf_leaf(leaf) && charge == nullptr) continue;
    parts.clear();
    if (charge == nullptr || !by_program) {
      parts.emplace_back(charge ? charge->programs.front() : 0, counts);
    } else {
      weights.clear();
      for (uint32_t p : charge->programs) {
        weights.push_back(p <= options.program_weights.size() ? options.program_weights[p - 1] : 0);
      }
      const std::vector<uint64_t> samples = split_by_weight(counts.samples, weights);
      const std::vector<uint64_t> period = split_by_weight(counts.period, weights);
      for (size_t i = 0; i < weights.size(); i++) {
        if (samples[i] != 0 || period[i] != 0) {
          parts.emplace_back(charge->programs[i], Counts{samples[i], period[i]});
        }
      }
    }
    for (const auto& [charged, part] : parts) {
      Row row;
      joined.clear();
      for (SortKey k : options.keys) {
        row.values.push_back(value_of(k, leaf, key.thread, options, charged,
                                      charge ? charge->kind : ChargeKind::kSelf));
        joined += row.values.back();
        joined += '\x1f';
      }
      if (has_sym) {
        row.sym_dso = leaf ? std::string(leaf->dso) : "[unknown]";
        joined += row.sym_dso;
      }
      auto [it, inserted] = index.emplace(joined, rows.size());
      if (inserted) rows.push_back(std::move(row));
      Row& target = rows[it->second];
      target.counts += part;
      if (options.with_stacks) target.stacks.emplace_back(key.stack, part);
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.counts.samples != b.counts.samples) return a.counts.samples > b.counts.samples;
    if (a.values != b.values) return a.values < b.values;
    return a.sym_dso < b.sym_dso;
  });
  return rows;
}

std::vector<uint64_t> split_by_weight(uint64_t n, std::span<const uint64_t> weights) {
  std::vector<uint64_t> out(weights.size(), 0);
  if (weights.empty()) return out;
  uint64_t sum = 0;
  for (uint64_t w : weights) sum += w;
  // No weight: equal parts.
  auto weight = [&](size_t k) -> uint64_t { return sum == 0 ? 1 : weights[k]; };
  const unsigned __int128 total = sum == 0 ? weights.size() : sum;
  uint64_t given = 0;
  std::vector<std::pair<uint64_t, size_t>> remainders;  // (remainder, index)
  for (size_t k = 0; k < weights.size(); k++) {
    const unsigned __int128 exact = static_cast<unsigned __int128>(n) * weight(k);
    out[k] = static_cast<uint64_t>(exact / total);
    remainders.emplace_back(static_cast<uint64_t>(exact % total), k);
    given += out[k];
  }
  // Largest remainders first, ties to the earlier weight.
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < n; k++, given++) out[remainders[k].second]++;
  return out;
}

CallNode callers_tree(const Profile& profile,
                      const std::vector<std::pair<StackId, Counts>>& stacks) {
  BuildNode root;
  for (const auto& [stack, counts] : stacks) {
    root.samples += counts.samples;
    BuildNode* node = &root;
    auto frames = profile.stack(stack);
    for (size_t i = 1; i < frames.size(); i++) {
      const Frame& f = profile.frame(frames[i]);
      auto& child = node->children[{f.symbol, f.dso}];
      if (!child) child = std::make_unique<BuildNode>();
      child->samples += counts.samples;
      node = child.get();
    }
  }
  return finish_node("", "", root);
}

}  // namespace bpfprof::profile
