// SPDX-License-Identifier: Apache-2.0
#include "workload/truth.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "workload/embedded.h"

namespace bpfprof::workload {

std::string truth_json(const std::vector<ProgramTruth>& programs) {
  SourceLine hot = hot_line();
  nlohmann::json list = nlohmann::json::array();
  for (const ProgramTruth& p : programs) {
    nlohmann::json functions = nlohmann::json::array();
    for (const FunctionTruth& f : p.functions) {
      functions.push_back({{"ksym", f.ksym},
                           {"ksym_from", f.from_kallsyms ? "kallsyms" : "computed"},
                           {"addr", f.addr},
                           {"len", f.len}});
    }
    nlohmann::json entry = {{"id", p.id},
                    {"name", p.name},
                    {"tag", p.tag},
                    {"kind", kind_name(p.kind)},
                    {"lifetime_ns", p.lifetime_ns},
                    {"load_ns", p.load_ns},
                    {"load_tid", p.load_tid},
                    {"load_duration_ns", p.load_duration_ns},
                    {"unload_ns", p.unload_ns},
                    {"run_ns", p.run_ns},
                    {"run_count", p.run_count},
                    {"test_runs", p.test_runs},
                    {"cpu_ns", p.cpu_ns},
                    {"functions", std::move(functions)},
                    {"hot_line", {{"file", hot.file}, {"line", hot.line}}}};
    if (!p.attach.empty()) entry["attach"] = p.attach;
    list.push_back(std::move(entry));
  }
  nlohmann::json doc = {{"clock", "CLOCK_MONOTONIC"},
                        {"pid", static_cast<int>(getpid())},
                        {"programs", std::move(list)}};
  return doc.dump(1) + "\n";
}

Status write_truth(const std::string& path, const std::vector<ProgramTruth>& programs) {
  std::string text = truth_json(programs);
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "we");
  if (!f) return make_sys_error("creating " + tmp, errno);
  bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  if (std::fclose(f) != 0 && written) {
    written = false;
    err = errno;
  }
  if (!written) {
    std::remove(tmp.c_str());
    return make_sys_error("writing " + tmp, err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return make_sys_error("renaming " + tmp + " to " + path, err);
  }
  return ok_status();
}

}  // namespace bpfprof::workload
