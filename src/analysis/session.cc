// SPDX-License-Identifier: Apache-2.0
#include "analysis/session.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "analysis/pass1.h"
#include "perfdata/build_ids.h"

namespace bpfprof::analysis {
namespace {

// --vdso FILE, read whole.
Result<std::string> read_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_sys_error("--vdso " + path, errno);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_sys_error("--vdso " + path, errno);
  return out;
}

// --kallsyms FILE, read whole (/proc/kallsyms has no size to stat).
Result<perfdata::KallsymsTable> read_user_kallsyms(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_sys_error("--kallsyms " + path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_sys_error("--kallsyms " + path, errno);
  perfdata::KallsymsTable table = perfdata::KallsymsTable::from_text(text.str());
  if (table.empty()) {
    return make_error(Errc::kInvalidArgument,
                      "--kallsyms " + path +
                          ": no kernel text symbols with addresses (a user who may not see "
                          "kernel addresses reads zeros)");
  }
  return table;
}

// The header's "kernel symbols" note: empty when the file's snapshot names
// kernel code. Without one, says whether this host runs the recorded kernel
// (BUILD_ID feature against /sys/kernel/notes: the only host file read
// without the flag, and only for this hint).
std::string kernel_symbols_note(const perfdata::Features& f, bool damaged,
                                const std::string& kallsyms_flag) {
  const bool snapshot = f.kallsyms.has_value() || !f.kallsyms_packed.empty();
  if (!kallsyms_flag.empty()) {
    return "from --kallsyms " + kallsyms_flag +
           (snapshot ? " (instead of the file's snapshot)" : "");
  }
  if (snapshot) return "";
  std::string note = damaged ? "damaged (the file's kallsyms snapshot is unreadable, see "
                               "feature_sections_unreadable): kernel frames are [unknown]"
                             : "none (the file has no kallsyms snapshot): kernel frames are [unknown]";
  std::vector<uint8_t> recorded;
  if (auto it = f.other.find(perfdata::kFeatBuildId); it != f.other.end()) {
    recorded = perfdata::recorded_kernel_build_id(it->second);
  }
  if (!recorded.empty() && recorded == perfdata::running_kernel_build_id()) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (uint8_t b : recorded) hex += {kHex[b >> 4], kHex[b & 15]};
    return note + "; this host runs the recorded kernel (build id " + hex +
           "): --kallsyms /proc/kallsyms would name them";
  }
  return note + "; --kallsyms FILE names them from the recorded kernel's kallsyms";
}

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const std::string& path,
                                               const SessionOptions& options) {
  auto reader = perfdata::FileReader::open(path);
  if (!reader.ok()) return std::move(reader).error();
  std::unique_ptr<Session> s(new Session(std::move(reader).value()));
  // Every error line names the file it is about (the reader's already do).
  if (Status st = s->pass1(options); !st.ok()) {
    return std::move(st).error().with_context(path == "-" ? "stdin" : path);
  }
  return s;
}

Result<std::unique_ptr<Session>> Session::from_bytes(Bytes data, const SessionOptions& options) {
  auto reader = perfdata::FileReader::from_bytes(data);
  if (!reader.ok()) return std::move(reader).error();
  std::unique_ptr<Session> s(new Session(std::move(reader).value()));
  BPFPROF_TRY(s->pass1(options));
  return s;
}

Status Session::pass1(const SessionOptions& options) {
  const perfdata::Features& f = reader_.features();
  header_.host = f.hostname.value_or("");
  header_.kernel = f.osrelease.value_or("");
  header_.arch = f.arch.value_or("");
  // bpfprof writes its name and versions there, perf its bare version.
  if (f.version) {
    header_.recorded_by = f.version->starts_with("bpfprof") ? *f.version : "perf " + *f.version;
  }
  for (size_t i = 0; i < reader_.attrs().size(); i++) {
    const std::string& name = reader_.attrs()[i].name;
    header_.events.push_back(name.empty() ? "event" + std::to_string(i) : name);
  }
  counters_[Diag::kFeatureSectionsUnreadable] = reader_.feature_errors().size();
  // The recorder counted the links it could not place and the perf-event fds
  // it could not query or read; section 254 says how many.
  if (f.attach) {
    counters_[Diag::kBpfLinksLost] = f.attach->links_lost;
    counters_[Diag::kBpfAttachFdLost] = f.attach->perf_fds_lost;
    counters_[Diag::kBpfAttachFdUnreadable] = f.attach->fd_dirs_unreadable;
  }
  for (const Error& e : reader_.feature_errors()) header_.unreadable_sections.push_back(e.to_string());

  std::optional<perfdata::KallsymsTable> user_kallsyms;
  if (!options.kallsyms.empty()) {
    BPFPROF_ASSIGN_OR_RETURN(user_kallsyms, read_user_kallsyms(options.kallsyms));
  }
  header_.kernel_symbols = kernel_symbols_note(
      f, reader_.damaged_features().contains(perfdata::kFeatBpfprofKallsyms), options.kallsyms);
  // Made before the walk: it opens the kallsyms snapshot meanwhile.
  if (!options.vdso.empty()) {
    BPFPROF_ASSIGN_OR_RETURN(std::string image, read_binary_file(options.vdso));
    const auto* b = reinterpret_cast<const std::byte*>(image.data());
    vdso_image_.assign(b, b + image.size());
  }
  symbols::Symbolizer::Options so{options.symfs, options.read_elf, std::move(user_kallsyms),
                                  options.full_signatures, vdso_image_};
  symbolizer_ = std::make_unique<symbols::Symbolizer>(f, std::move(so));
  const uint64_t data_begin = reader_.data_offset();
  const uint64_t data_end = data_begin + reader_.data_size();
  progress_ = options.progress;
  if (progress_) progress_->begin_file(reader_.data_size());

  auto pieces = walk_in_parallel(options.parallel_min_bytes);
  if (!pieces) {
    if (progress_) progress_->begin_file(reader_.data_size());  // forget what the halves told
    pieces.emplace();
    pieces->push_back(std::make_unique<Piece>(*this));
    Status walked = pieces->back()->walk_whole();
    reader_.drop_pages(data_begin, data_end);
    if (!walked.ok()) return walked;
    compressed_ = reader_.stats().compressed_records > 0;
    // The reader skips record types it does not know and counts them.
    for (const auto& [type, n] : reader_.stats().unknown_record_types) {
      counters_[Diag::kRecordsUnknownType] += n;
    }
  }
  pass1_pieces_ = pieces->size();
  reader_.drop_pages(data_begin, data_end);
  counters_[Diag::kFeatureSectionsUnknown] = reader_.stats().unknown_features;

  const std::vector<Sideband> sideband = join(*pieces);

  // In file order: the Symbolizer puts them in time order.
  for (const Sideband& s : sideband) symbolizer_->add_sideband(s.record, *s.layout);
  // Programs' metadata (perf 6.17's records): by the name of a function,
  // whenever in the file (the records carry no time).
  for (const auto& piece : *pieces) {
    for (const perf::RecordView& r : piece->bpf_metadata) {
      auto m = perf::BpfMetadata::parse(r);
      if (m.ok()) {
        symbolizer_->add_bpf_metadata(*m);
      } else {
        counters_[Diag::kBpfMetadataBad]++;
      }
    }
  }
  symbolizer_->finish();
  // A snapshot the reader left packed is decoded by the symbolizer.
  if (const auto& e = symbolizer_->kallsyms_error()) {
    counters_[Diag::kFeatureSectionsUnreadable]++;
    header_.unreadable_sections.push_back(e->to_string());
  }
  return ok_status();
}

DiagCounts Session::diagnostics() const {
  DiagCounts all = counters_;
  all += symbolizer_->diagnostics();
  // A block of the snapshot found damaged by the lookups so far.
  if (symbolizer_->kallsyms_damage()) all[Diag::kFeatureSectionsUnreadable]++;
  return all;
}

bool Session::samples_have_cgroups() const {
  const std::vector<perfdata::FileAttr>& attrs = reader_.attrs();
  return std::any_of(attrs.begin(), attrs.end(), [](const perfdata::FileAttr& a) {
    return (a.attr.sample_type & PERF_SAMPLE_CGROUP) != 0;
  });
}

size_t Session::chunk_count() const {
  if (sample_count_ == 0) return 0;
  return compressed_ ? 1 : chunk_starts_.size();
}

Status Session::for_each_sample(size_t first, size_t last, const SampleFn& fn) const {
  if (first >= last || first >= chunk_count()) return ok_status();
  perfdata::AttrMemo attr_of(reader_);
  auto on_record = [&](const perf::RecordView& r, uint64_t) {
    if (r.header.type != perf::kRecordSample) return;
    // Pass 1 counted samples without a known attr; they are not walked.
    if (const perfdata::FileAttr* attr = attr_of(r)) fn(r, attr->layout);
  };
  if (compressed_) return for_each_record(on_record);
  const uint64_t begin = chunk_starts_[first];
  const uint64_t end = last < chunk_starts_.size()
                           ? chunk_starts_[last]
                           : reader_.data_offset() + reader_.data_size();
  uint64_t dropped = begin;
  // The bytes before the first sample are not walked again: done.
  if (progress_ && first == 0) progress_->add_bytes(begin - reader_.data_offset());
  Status walked = reader_.for_each_record_in(begin, end, [&](const perf::RecordView& r,
                                                             uint64_t at) {
    if (at - dropped >= kDropWindow) {
      reader_.drop_pages(dropped, at);
      if (progress_) progress_->add_bytes(at - dropped);
      dropped = at;
    }
    on_record(r, at);
  });
  reader_.drop_pages(dropped, end);
  if (progress_) progress_->add_bytes(end - dropped);
  return walked;
}

Status Session::for_each_record(const RecordFn& fn) const {
  const uint64_t begin = reader_.data_offset();
  uint64_t dropped = begin;
  Status walked = reader_.for_each_record([&](const perf::RecordView& r, uint64_t at) {
    if (at - dropped >= kDropWindow) {
      reader_.drop_pages(dropped, at);
      if (progress_) progress_->add_bytes(at - dropped);
      dropped = at;
    }
    fn(r, at);
  });
  drop_pages();
  if (progress_) progress_->add_bytes(begin + reader_.data_size() - dropped);
  return walked;
}

Result<perf::RecordView> Session::record_at(uint64_t file_offset) const {
  const uint64_t begin = reader_.data_offset();
  if (compressed_ || file_offset < begin) {
    return make_error_at(Errc::kInternal, file_offset, "no plain record at this offset");
  }
  return perf::record_at(reader_.data_section(), static_cast<size_t>(file_offset - begin), begin);
}

void Session::drop_pages() const {
  reader_.drop_pages(reader_.data_offset(), reader_.data_offset() + reader_.data_size());
}

}  // namespace bpfprof::analysis
