// SPDX-License-Identifier: Apache-2.0
#include "workload/kallsyms.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

namespace bpfprof::workload {

Result<std::map<uint64_t, std::string>> kallsyms_names(std::span<const uint64_t> addrs,
                                                       const char* path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path, "re"), &std::fclose);
  if (!file) return make_sys_error(std::string("opening ") + path, errno);

  std::set<uint64_t> wanted(addrs.begin(), addrs.end());
  std::map<uint64_t, std::string> names;
  bool any_nonzero = false;
  char line[512];
  // Lines are "<hex addr> <type> <name>[\t[module]]".
  while (names.size() < wanted.size() && std::fgets(line, sizeof line, file.get())) {
    char* end = nullptr;
    uint64_t addr = std::strtoull(line, &end, 16);
    if (end == line || *end != ' ') continue;
    any_nonzero |= addr != 0;
    if (!wanted.count(addr) || end[1] == '\0' || end[2] != ' ') continue;
    const char* name = end + 3;
    size_t len = std::strcspn(name, "\t\n");
    names.emplace(addr, std::string(name, len));
  }
  if (std::ferror(file.get())) return make_sys_error(std::string("reading ") + path, errno);
  if (!any_nonzero)
    return make_error(Errc::kPermission, std::string(path) + " hides addresses (kptr_restrict)");
  return names;
}

}  // namespace bpfprof::workload
