// SPDX-License-Identifier: Apache-2.0
#include "export/export.h"

#include <fmt/format.h>

#include "export/flame_tree.h"
#include "export/flamegraph_html.h"
#include "export/flamegraph_json.h"
#include "export/flamegraph_svg.h"
#include "export/folded.h"
#include "export/pprof.h"

namespace bpfprof::exporter {
namespace {

FlameTree tree_of(const analysis::ReportData& data, const ExportOptions& o) {
  return FlameTree::build(data.profile, FlameOptions{o.bpf_only});
}

Result<std::string> write_folded(const analysis::ReportData& data, const ExportOptions& o) {
  return render_folded(tree_of(data, o));
}

Result<std::string> write_json(const analysis::ReportData& data, const ExportOptions& o) {
  return render_flame_json(tree_of(data, o));
}

Result<std::string> write_svg(const analysis::ReportData& data, const ExportOptions& o) {
  SvgOptions svg;
  svg.title = o.title;
  svg.subtitle = o.subtitle;
  return render_svg(tree_of(data, o), svg);
}

Result<std::string> write_html(const analysis::ReportData& data, const ExportOptions& o) {
  return render_html(tree_of(data, o), HtmlOptions{o.title, o.subtitle});
}

}  // namespace

const std::map<std::string, ExportWriter, std::less<>>& export_writers() {
  static const std::map<std::string, ExportWriter, std::less<>> writers = {
      {"folded", write_folded},
      {"html", write_html},
      {"json", write_json},
      {"pprof", [](const analysis::ReportData& d,
                   const ExportOptions& o) { return render_pprof(d, o.bpf_only); }},
      {"svg", write_svg},
  };
  return writers;
}

std::string supported_export_formats() {
  std::string names;
  for (const auto& [name, writer] : export_writers()) {
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

Result<const ExportWriter*> export_writer(std::string_view format) {
  const auto& writers = export_writers();
  auto it = writers.find(format);
  if (it == writers.end()) {
    return make_error(Errc::kInvalidArgument,
                      fmt::format("unsupported format '{}' (supported: {})", format,
                                  supported_export_formats()));
  }
  return &it->second;
}

Result<std::string> export_profile(std::string_view format, const analysis::ReportData& data,
                                   const ExportOptions& options) {
  BPFPROF_ASSIGN_OR_RETURN(const ExportWriter* writer, export_writer(format));
  return (*writer)(data, options);
}

}  // namespace bpfprof::exporter
