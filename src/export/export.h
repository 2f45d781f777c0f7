// SPDX-License-Identifier: Apache-2.0
// Export formats of `bpfprof export`: a map from format name to a writer that
// turns ReportData (aggregated with whole callchains) into the bytes of one
// file. Writers read ReportData only, never records. A new format is one
// entry in export_writers() (export.cc).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "analysis/report_data.h"
#include "base/error.h"

namespace bpfprof::exporter {

struct ExportOptions {
  bool bpf_only = false;  // stacks whose leaf is BPF code (program or trampoline)
  std::string title = "bpfprof flame graph";
  std::string subtitle;   // one line under the title of SVG/HTML (input, samples, filters)
};

using ExportWriter =
    std::function<Result<std::string>(const analysis::ReportData&, const ExportOptions&)>;

// Every supported format, by name.
const std::map<std::string, ExportWriter, std::less<>>& export_writers();

// "folded, html, json, svg": the names of export_writers(), for messages.
std::string supported_export_formats();

// The writer of `format`. An unknown format is kInvalidArgument with a
// message listing the supported ones.
Result<const ExportWriter*> export_writer(std::string_view format);

// Writes `data` in `format` (errors as export_writer's, or the writer's).
Result<std::string> export_profile(std::string_view format, const analysis::ReportData& data,
                                   const ExportOptions& options);

}  // namespace bpfprof::exporter
