// SPDX-License-Identifier: Apache-2.0
// Grouping a Profile by report sort keys (prog, sym, dso, comm, pid, line,
// cgroup, container, owner, attach) into rows, and the callers tree of a row for `report -g`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "profile/profile.h"

namespace bpfprof::profile {

enum class SortKey : uint8_t {
  kProg, kSym, kDso, kComm, kPid, kLine, kCgroup, kContainer, kOwner, kAttach
};

std::string_view sort_key_name(SortKey key);
// "prog, sym, dso, comm, pid, line, cgroup, container, owner, attach"
std::string valid_sort_keys();
// Whether a key needs each sample's cgroup (AggregateOptions::cgroups).
bool needs_cgroups(const std::vector<SortKey>& keys);

// The container a cgroup path belongs to, from the paths container runtimes
// create: `docker:<id>` (docker-<id>.scope, /docker/<id>), `containerd:<id>`
// (cri-containerd-<id>.scope), `cri-o:<id>` (crio-<id>.scope), `podman:<id>`
// (libpod-<id>.scope), `container:<id>` for a bare 64-hex directory (the
// cgroupfs driver under kubepods, containerd's namespaces); <id> is the first
// 12 hex digits, as runtimes print it. Any other path is returned as it is.
std::string container_of(std::string_view cgroup_path);
// Each argument may hold several comma-separated keys; repeats are dropped.
// An empty list gives the default {sym}. An unknown key is kInvalidArgument
// with a message listing the valid keys.
Result<std::vector<SortKey>> parse_sort_keys(const std::vector<std::string>& args);

// What grouping needs besides the profile: the program table's names,
// indexed by Frame::bpf_program - 1.
struct GroupOptions {
  std::vector<SortKey> keys{SortKey::kSym};
  std::vector<std::string> program_names;
  std::vector<std::string> program_owners;  // indexed like program_names (sort key owner)
  std::vector<std::string> program_attach;  // the same (sort key attach)
  bool bpf_only = false;   // keep samples whose leaf is BPF code (program or trampoline)
  bool with_stacks = false;  // fill Row::stacks (for callers trees)
  // Keys prog, owner and attach name the program a sample is charged to
  // (SampleKey::charge: self, callee or dispatch), and bpf_only keeps every
  // charged sample; a hook's dispatch shared by several programs is split by
  // program_weights (their self + callees, indexed like program_names).
  // False: the leaf's program, as `--cost self`.
  bool cost_total = false;
  std::vector<uint64_t> program_weights;
};

// One line of a table: the values of the sort keys of its samples.
struct Row {
  std::vector<std::string> values;  // one per key, in key order
  std::string sym_dso;              // dso of the symbol when the keys include sym
  Counts counts;
  std::vector<std::pair<StackId, Counts>> stacks;  // with_stacks only
};

// `n` split in proportion to `weights` (equal parts when all are 0), whole
// numbers summing to `n`: the largest remainders get the rest, ties to the
// earlier weight.
std::vector<uint64_t> split_by_weight(uint64_t n, std::span<const uint64_t> weights);

// Rows sorted by samples (descending), ties by values, so output is stable.
std::vector<Row> group(const Profile& profile, const GroupOptions& options);

// True for a leaf that --bpf-only keeps.
bool is_bpf_leaf(const Frame* leaf);

// A callers tree: the row's entry at the root, each level one call further
// from the leaf. Children sorted by samples, descending.
struct CallNode {
  std::string symbol;
  std::string dso;
  uint64_t samples = 0;
  std::vector<CallNode> children;
};

// Builds the callers tree of `stacks` (as in Row::stacks): frames above the
// leaf, grouped by (symbol, dso) at each level.
CallNode callers_tree(const Profile& profile, const std::vector<std::pair<StackId, Counts>>& stacks);

}  // namespace bpfprof::profile
