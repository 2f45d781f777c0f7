// SPDX-License-Identifier: Apache-2.0
#include "record/output_file.h"

#include <unistd.h>

#include <cstdio>

namespace bpfprof::record {

Result<OutputFile> OutputFile::create(const std::string& path,
                                      std::vector<perfdata::AttrEntry> attrs, bool keep_old) {
  OutputOpen how;
  how.keep_old = keep_old;
  BPFPROF_ASSIGN_OR_RETURN(perfdata::FileWriter writer,
                           perfdata::FileWriter::create(path, std::move(attrs), how));
  return OutputFile(std::move(writer));
}

void OutputFile::abandon() { writer_.abandon(); }

std::string event_name_with_modifiers(const std::string& base, const perf_event_attr& attr) {
  if (attr.exclude_kernel && !attr.exclude_user) return base + ":u";
  if (attr.exclude_user && !attr.exclude_kernel) return base + ":k";
  return base;
}

void merge_prog_infos(std::map<uint32_t, bpf::ProgInfo>& into, std::vector<bpf::ProgInfo> more) {
  for (bpf::ProgInfo& p : more) into.try_emplace(p.id(), std::move(p));
}

void merge_btfs(std::map<uint32_t, bpf::BtfBlob>& into, std::vector<bpf::BtfBlob> more) {
  for (bpf::BtfBlob& b : more) into.try_emplace(b.id, std::move(b));
}

std::vector<std::string> cmdline_with_exe(std::vector<std::string> argv) {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string exe(buf, static_cast<size_t>(n));
    if (argv.empty()) {
      argv.push_back(exe);
    } else {
      argv[0] = exe;
    }
  }
  return argv;
}

}  // namespace bpfprof::record
