// SPDX-License-Identifier: Apache-2.0
#include "record/options.h"

#include <fmt/format.h>

namespace bpfprof::record {

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

Status validate(const RecordOptions& o) {
  auto invalid = [](std::string msg) { return make_error(Errc::kInvalidArgument, std::move(msg)); };
  if (!is_power_of_two(o.mmap_pages)) {
    return invalid(
        fmt::format("-m {}: the number of mmap pages must be a power of two", o.mmap_pages));
  }
  if (!is_power_of_two(o.sideband_pages)) {
    return invalid(
        fmt::format("side-band ring of {} pages: must be a power of two", o.sideband_pages));
  }
  if (!is_power_of_two(o.capture_ring_bytes) || o.capture_ring_bytes < 4096) {
    return invalid(fmt::format("capture ring of {} bytes: must be a power of two of at least 4096",
                               o.capture_ring_bytes));
  }
  if (o.pid && !o.command.empty()) return invalid("-p and a command exclude each other");
  if (o.pid && *o.pid <= 0) return invalid(fmt::format("-p {}: not a process id", *o.pid));
  if (o.pid && o.samples_system_wide()) return invalid("-p excludes -a and -C");
  if (!o.samples_system_wide() && !o.pid && o.command.empty()) {
    return invalid("nothing to record: give -a, -C, -p or a command");
  }
  if (o.frequency && o.period) return invalid("-F and -c exclude each other");
  if (o.frequency && *o.frequency == 0) return invalid("-F 0: the frequency must be positive");
  if (o.period && *o.period == 0) return invalid("-c 0: the period must be positive");
  if (o.duration_s && !(*o.duration_s > 0)) return invalid("-d: the duration must be positive");
  if (o.compression_level && (*o.compression_level < 1 || *o.compression_level > 22)) {
    return invalid(fmt::format("-z {}: the compression level must be 1..22", *o.compression_level));
  }
  if (o.output.empty()) return invalid("-o: empty output path");
  if (o.output == "-") return invalid("-o -: pipe mode is not supported");
  if (o.switch_max_files && !o.switch_output) {
    return invalid("--switch-max-files: only with --switch-output");
  }
  // Switched files are renamed in place: a device cannot be.
  if (o.switch_output && o.output.starts_with("/dev/")) {
    return invalid(fmt::format("--switch-output: -o {} is a device, not a file", o.output));
  }
  return ok_status();
}

}  // namespace bpfprof::record
