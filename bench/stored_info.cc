// SPDX-License-Identifier: Apache-2.0
// bpfprof-stored-info: which of a workload's programs have their full info
// (JIT image, function addresses, line info and BTF) in a recording's
// BPF_PROG_INFO / BPF_BTF sections, by nominal lifetime. Reads files written
// by bpfprof and by Linux perf alike (bench/short_lived.sh).
//
//   bpfprof-stored-info FILE TRUTH.json
// prints one line per lifetime class: "<lifetime_ns> <programs> <stored>".
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "perfdata/reader.h"

namespace {

using bpfprof::bpf::ProgInfo;

bool full(const ProgInfo& p, size_t functions, const std::set<uint32_t>& btfs) {
  return !p.jited_insns.empty() && p.jited_ksyms.size() == functions &&
         p.jited_func_lens.size() == functions && !p.line_info.empty() &&
         !p.jited_line_info.empty() && btfs.count(p.info.btf_id) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bpfprof-stored-info FILE TRUTH.json\n");
    return 2;
  }
  auto reader = bpfprof::perfdata::FileReader::open(argv[1]);
  if (!reader.ok()) {
    std::fprintf(stderr, "bpfprof-stored-info: %s\n", reader.error().to_string().c_str());
    return 1;
  }
  std::map<uint32_t, const ProgInfo*> infos;
  for (const ProgInfo& p : reader->features().bpf_prog_info) infos[p.id()] = &p;
  std::set<uint32_t> btfs;
  for (const auto& b : reader->features().bpf_btf) btfs.insert(b.id);
  std::ifstream in(argv[2]);
  if (!in) {
    std::fprintf(stderr, "bpfprof-stored-info: cannot read %s\n", argv[2]);
    return 1;
  }
  const nlohmann::json truth = nlohmann::json::parse(in);
  std::map<uint64_t, std::pair<size_t, size_t>> classes;  // lifetime -> (programs, stored)
  for (const auto& p : truth.at("programs")) {
    const std::string kind = p.at("kind").get<std::string>();
    if (kind != "burner" && kind != "subprog") continue;
    auto& c = classes[p.at("lifetime_ns").get<uint64_t>()];
    c.first++;
    auto it = infos.find(p.at("id").get<uint32_t>());
    if (it != infos.end() && full(*it->second, p.at("functions").size(), btfs)) c.second++;
  }
  for (const auto& [lifetime, c] : classes) {
    std::printf("%llu %zu %zu\n", static_cast<unsigned long long>(lifetime), c.first, c.second);
  }
  return 0;
}
