// SPDX-License-Identifier: Apache-2.0
// The recording's second phase: the host as it is when recording starts
// (host::Snapshot) into the file, before any sample; then sampling and the
// workload start.
#include <fmt/format.h>

#include <set>

#include "bpf/metadata.h"
#include "bpf/owned_btf.h"
#include "host/vdso.h"
#include "perfdata/features.h"
#include "record/phases.h"

namespace bpfprof::record {
namespace {

std::set<uint32_t> live_prog_loads(EventSet& events) {
  std::set<uint32_t> ids;
  for (CpuRing& r : events.sideband_rings()) host::collect_prog_load_ids(r.ring.peek(), ids);
  return ids;
}

}  // namespace

Result<std::optional<bpf::Metadata>> Recorder::rodata_metadata(const bpf::MapInfo& m) {
  // The capture copied the value when the map was captured, so a program
  // unloaded before this pass still has it; its BTF is normally the
  // program's, captured with it.
  const capture::CapturedValue* v = in_kernel_ ? in_kernel_->map_value(m.id) : nullptr;
  const bpf::BtfBlob* blob = v ? in_kernel_->btf(v->btf_id) : nullptr;
  const bpf::OwnedBtf b = blob ? bpf::parse_btf(*blob) : nullptr;
  if (!b) return bpf::read_rodata_metadata(m.id);
  size_t cut = 0;
  std::optional<bpf::Metadata> captured =
      bpf::metadata_from_value(b.get(), v->btf_value_type_id, v->bytes, &cut);
  if (cut == 0) return captured;
  // Variables past the bytes copied: the map by id, while it is loaded.
  auto whole = bpf::read_rodata_metadata(m.id);
  if (whole.ok() || whole.error().code != Errc::kNotFound) return whole;
  metadata_cut_ += cut;
  return captured;
}

Status Recorder::hand_metadata(const perfdata::ProgramMaps& maps) {
  perfdata::ProgramMetadata learned;
  for (const auto& [prog, list] : maps) {
    for (const bpf::MapInfo& m : list) {
      if (!bpf::may_hold_metadata(m)) continue;
      auto [it, fresh] = rodata_.try_emplace(m.id);
      if (fresh) {
        auto read = rodata_metadata(m);
        if (read.ok()) {
          it->second = std::move(read).value();
        } else if (read.error().code == Errc::kNotFound) {
          // Only a .rodata map (libbpf: `<obj>.rodata`) counts: libbpf's
          // feature probes load arrays of one value without metadata.
          if (m.name.ends_with(".rodata")) metadata_gone_++;
        } else if (sink_.notice) {
          sink_.notice("the metadata of program " + std::to_string(prog) +
                       " is not stored: " + read.error().to_string());
        }
      }
      if (!it->second || it->second->empty()) continue;
      bpf::Metadata& have = file_.metadata[prog];
      const size_t before = have.size();
      bpf::merge_metadata(have, *it->second);
      if (have.size() > before) {
        learned[prog].insert(learned[prog].end(), have.begin() + static_cast<ptrdiff_t>(before),
                             have.end());
      }
    }
  }
  if (learned.empty()) return ok_status();
  return out_->writer().append_in_stream(perfdata::kFeatBpfprofMetadata,
                                         perfdata::encode_metadata(learned));
}

Status hand_to_writer(perfdata::FileWriter& writer, const std::vector<bpf::ProgInfo>& infos,
                      const std::vector<bpf::BtfBlob>& btfs) {
  if (!infos.empty()) {
    BPFPROF_TRY(
        writer.append_in_stream(perfdata::kFeatBpfProgInfo, perfdata::encode_bpf_prog_info(infos)));
    // Their maps, beside them (BPF_PROG_INFO has no room for them).
    if (perfdata::ProgramMaps maps = perfdata::program_maps(infos); !maps.empty()) {
      BPFPROF_TRY(writer.append_in_stream(perfdata::kFeatBpfprofMaps, perfdata::encode_maps(maps)));
    }
  }
  if (!btfs.empty()) {
    BPFPROF_TRY(writer.append_in_stream(perfdata::kFeatBpfBtf, perfdata::encode_bpf_btf(btfs)));
  }
  return ok_status();
}

Status Recorder::preamble() {
  BPFPROF_TRY(events_->events.enable_sideband());
  host::Snapshot snapshot = host::take_snapshot();
  BPFPROF_ASSIGN_OR_RETURN(bpf_, write_file_start(snapshot));
  if (switched_) file_.add(bpf_.infos, bpf_.btfs);
  file_.synthesized = bpf_.synthesized;
  if (switched_ && o_.switch_output->mode == SwitchOutput::Mode::kSize &&
      out_->writer().data_bytes() >= o_.switch_output->bytes && sink_.notice) {
    // perf warns likewise of a size below its ring buffers.
    sink_.notice(fmt::format(
        "--switch-output: each file starts with {:.1f} MB of its own (the kallsyms snapshot, "
        "threads, programs), more than the size given: a new file at every drain",
        static_cast<double>(out_->writer().data_bytes()) / (1024.0 * 1024.0)));
  }
  if (!events_->sampling.enable_on_exec) BPFPROF_TRY(events_->events.enable_sampling());
  if (workload_) BPFPROF_TRY(workload_->start());
  if (sink_.started) sink_.started();
  return ok_status();
}

Result<host::BpfSynthesis> Recorder::write_file_start(host::Snapshot& snapshot) {
  perfdata::FileWriter& writer = out_->writer();
  EventSet& events = events_->events;
  BPFPROF_TRY(write_early_features(snapshot));
  host::InitialStateOptions initial;
  initial.trailer = layout_->id_hdr_size();
  initial.cgroups = names_cgroups(o_);
  initial.say_lacks = !switched_ || switched_->renamed() == 0;  // the first file
  initial.finished_init = true;
  BPFPROF_ASSIGN_OR_RETURN(
      host::BpfSynthesis bpf,
      host::write_initial_state(
          snapshot, initial, [&] { return live_prog_loads(events); },
          [&](std::span<const std::byte> b) { return writer.append(b); }, sink_.notice));
  BPFPROF_TRY(writer.finish_round());
  // Who holds the programs there before us, where every program is
  // attached: listed now, into the data at once.
  host::ProgramPlaces places =
      host::list_program_places(snapshot, bpf.synthesized, perfdata::AttachEntry::kAtStart, 0);
  BPFPROF_ASSIGN_OR_RETURN(
      ProgramSections sections,
      ProgramSections::start(writer, std::move(places), snapshot.cgroup2, in_kernel_.get(), sink_));
  sections_.emplace(std::move(sections));
  BPFPROF_TRY(hand_to_writer(writer, bpf.infos, bpf.btfs));
  BPFPROF_TRY(hand_metadata(perfdata::program_maps(bpf.infos)));
  BPFPROF_TRY(writer.finish_round());
  return bpf;
}

// Host, arch, event names and the kallsyms snapshot go into the data at
// once (and into the sections at close): a killed recorder's file has them.
// The snapshot is encoded once for both.
Status Recorder::write_early_features(host::Snapshot& snapshot) {
  perfdata::FileWriter& writer = out_->writer();
  if (!snapshot.kallsyms.text_symbols.empty()) {
    kallsyms_packed_ = perfdata::encode_kallsyms_blocked(snapshot.kallsyms.text_symbols);
    snapshot.kallsyms.text_symbols.clear();
  }
  perfdata::Features early = perfdata::host_features();
  early.cmdline = cmdline_with_exe(o_.cmdline);
  BPFPROF_TRY(writer.append_in_stream(early));
  if (!kallsyms_packed_.empty()) {
    BPFPROF_TRY(writer.append_in_stream(perfdata::kFeatBpfprofKallsyms, kallsyms_packed_));
  }
  // The vDSO every 64-bit process of this host maps (8 KiB): [vdso] frames
  // are named from it. Without it they stay [unknown], which the report
  // counts (unknown_frames.no_vdso). Read once; every file gets it.
  if (!vdso_read_) {
    vdso_read_ = true;
    if (auto vdso = host::read_vdso_image(); vdso.ok()) {
      vdso_image_ = std::move(vdso).value();
    } else if (sink_.notice) {
      sink_.notice("the vDSO is not stored (" + vdso.error().message +
                   "): [vdso] frames will be [unknown]");
    }
  }
  if (!vdso_image_.empty()) {
    BPFPROF_TRY(
        writer.append_in_stream(perfdata::kFeatBpfprofVdso, perfdata::encode_vdso(vdso_image_)));
  }
  return ok_status();
}

Error Recorder::abandon(Error e) {
  perfdata::FileWriter& writer = out_->writer();
  if (writer.write_failed()) {
    perfdata::Features features = perfdata::host_features();
    features.cmdline = cmdline_with_exe(o_.cmdline);
    Status closed = writer.close(std::move(features));
    return closed.ok() ? e : std::move(closed).error();
  }
  out_->abandon();
  return e;
}

}  // namespace bpfprof::record
