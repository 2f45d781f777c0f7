// SPDX-License-Identifier: Apache-2.0
// One recording, phase by phase; record() (recorder.cc) runs them in order:
//   open      (phase_open.cc)      the events on every CPU, the capture or the
//                                  enricher, the workload held, the file created
//   preamble  (phase_preamble.cc)  the host as it is (host::Snapshot) into the
//                                  file, then sampling and the workload start
//   run       (phase_run.cc)       the drain loop until a stop, the last pass
//   finish    (phase_finish.cc)    what was learned into the sections, the
//                                  close, the figures
// With --switch-output, the run also closes the current file and starts
// the next one, self-contained, whenever a switch is due (phase_switch.cc).
// Internal to record/: the public entry point is record() (recorder.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "host/snapshot.h"
#include "perf/records.h"
#include "perfdata/metadata_feature.h"
#include "record/capture_enricher.h"
#include "record/drain_loop.h"
#include "record/enricher.h"
#include "record/event_set.h"
#include "record/forked_command.h"
#include "record/options.h"
#include "record/output_file.h"
#include "record/program_sections.h"
#include "record/recorder.h"
#include "record/signals.h"
#include "record/switch_output.h"

namespace bpfprof::record {

// Whether the file names cgroups (CGROUP records, the existing ones
// synthesized at start): for --cgroup's samples, and for the cgroups of the
// programs' loaders the in-kernel capture reads (a record per cgroup made).
bool names_cgroups(const RecordOptions& o);

// Where BPF_PROG_INFO / BPF_BTF entries are handed to the file as they are
// learned (synthesis at start, the in-kernel capture or the enricher during
// the recording): into the data as in-stream records, so a killed
// recorder's file keeps them. The feature sections at close hold them all
// again, for perf.
Status hand_to_writer(perfdata::FileWriter& writer, const std::vector<bpf::ProgInfo>& infos,
                      const std::vector<bpf::BtfBlob>& btfs);

class Recorder {
 public:
  // Validates the options, holds the workload, starts the capture (or the
  // enricher), opens the events and creates the file. On an error nothing
  // is left behind.
  static Result<std::unique_ptr<Recorder>> open(const RecordOptions& options,
                                                const RecordSink& sink);
  // Writes what describes the host before recording, then starts sampling
  // and the workload. On an error the file is abandoned (or, after a write
  // error, closed valid up to its last complete round): abandon() it.
  Status preamble();
  // Before the run: a failure leaves nothing behind, except a write error (a
  // full disk): the file is kept, cut back to its last complete round, with
  // a valid header, as any later write error leaves it.
  Error abandon(Error e);
  // Drains until a stop condition, then the last pass. Its errors are
  // reported by finish(), after the file is closed.
  void run();
  // Lists what is attached at the end, reaps the workload, closes the file
  // with every section, and returns the figures (or the first error).
  Result<RecordStats> finish();

 private:
  Recorder(const RecordOptions& options, const RecordSink& sink, SignalGuard signals)
      : o_(options), sink_(sink), signals_(std::move(signals)) {}
  Status start_capture_or_enricher(uint64_t sample_type);
  // `first`: the recording's first file (an existing one is rotated to .old).
  Status create_file(bool first);
  // What makes a file self-contained, from `snapshot`: the host, the
  // kallsyms snapshot, the state synthesized (threads, maps, the BPF
  // programs alive), who holds them and where they are attached.
  Result<host::BpfSynthesis> write_file_start(host::Snapshot& snapshot);
  Status write_early_features(host::Snapshot& snapshot);
  Status end_pass(bool copied);
  // The bpf_metadata_* variables of the programs of `maps` (from their .rodata
  // maps, once per map: their values are frozen) that the current file
  // lacks: into its data as a section 248 piece, and into file_.metadata for
  // its close. A map gone first is counted, not an error.
  Status hand_metadata(const perfdata::ProgramMaps& maps);
  // The metadata of .rodata map `m`: from the value the capture copied when
  // the map was captured (decoded with the BTF it captured), else read by id.
  Result<std::optional<bpf::Metadata>> rodata_metadata(const bpf::MapInfo& m);
  // --switch-output (phase_switch.cc): closes the current file complete,
  // renames it, and starts the next one.
  Status switch_output();
  Status write_dying_programs(const perfdata::Features& last_file);
  bool switch_due();
  // The features every close writes: host, command line, `file`'s sample
  // times, the kallsyms snapshot, the vDSO.
  perfdata::Features common_features(const FileCounters& file);
  // The enrichment section of the current file: the programs synthesized at
  // its start and those loaded while it was current.
  perfdata::EnrichmentSection file_enrichment(EnrichmentStats enrichment,
                                              const std::set<uint32_t>& stored) const;
  void count_compression(const perfdata::FileWriter& writer);
  // --bpf-stats: every program's run statistics read so far (`enrichment`
  // gives the load times of those the capture saw), and the file's section
  // from them, the statistics read until `end_ns`.
  RunStatsTable run_stats_now(const EnrichmentStats& enrichment) const;
  void add_run_stats(perfdata::Features& features, const RunStatsTable& table,
                     uint64_t end_ns) const;
  RecordStats figures(const DrainCounters& c, EnrichmentStats enrichment) const;

  const RecordOptions& o_;
  const RecordSink& sink_;
  SignalGuard signals_;
  std::vector<int> online_;
  std::optional<Workload> workload_;
  std::vector<pid_t> tids_;
  UniqueFd target_pidfd_;
  UniqueFd stats_fd_;  // BPF run statistics on while it is open
  uint64_t stats_on_ns_ = 0, stats_off_ns_ = 0;

  std::string capture_refused_ = "not tried (--enrich=user)";
  int capture_errno_ = -1;
  std::unique_ptr<capture::Capture> capture_;  // started, until the events open
  std::unique_ptr<Enricher> enricher_;         // fallback, and run statistics
  std::optional<OpenedEvents> events_;
  std::optional<perf::SampleLayout> layout_;
  std::unique_ptr<CaptureEnricher> in_kernel_;  // the capture serves the recording
  std::optional<OutputFile> out_;

  std::vector<std::byte> kallsyms_packed_;  // the snapshot's kallsyms, encoded once
  std::vector<std::byte> vdso_image_;       // this host's vDSO (section 255); empty if unread
  host::BpfSynthesis bpf_;
  std::optional<ProgramSections> sections_;

  // --switch-output: the files renamed, and the current file's own programs
  // (those synthesized at its start and those learned while it is current),
  // which its close writes; `handed_` every program learned in any file.
  struct FilePrograms {
    std::vector<uint32_t> synthesized;
    std::map<uint32_t, bpf::ProgInfo> infos;
    std::map<uint32_t, bpf::BtfBlob> btfs;
    // The bpf_metadata_* variables of its programs, in its data so far;
    // its close adds them to its programs' infos (every file, switched or not).
    perfdata::ProgramMetadata metadata;
    uint64_t start_ns = 0;    // programs loaded from then on are the file's
    uint64_t ring_bytes = 0;  // ring data written into it
    void add(const std::vector<bpf::ProgInfo>& infos, const std::vector<bpf::BtfBlob>& btfs);
  };
  std::optional<SwitchedFiles> switched_;
  FilePrograms file_;
  std::set<uint32_t> handed_;
  std::set<uint32_t> stored_;  // programs with an info in any file closed
  RunStatsTable run_stats_at_switch_;  // --bpf-stats: as read at the last switch
  std::string last_file_;      // the last file renamed
  bool vdso_read_ = false;
  // .rodata metadata by map id (none: not a .rodata map, or not readable).
  std::map<uint32_t, std::optional<bpf::Metadata>> rodata_;
  size_t metadata_gone_ = 0;                         // maps gone before their metadata was read
  size_t metadata_cut_ = 0;  // variables past a captured value's bytes, the map gone
  uint64_t compressed_in_ = 0, compressed_out_ = 0;  // -z, over every file closed

  std::unique_ptr<DrainLoop> loop_;
  Result<StopReason> stop_ = StopReason::kDuration;
  Status drained_ = ok_status();
  uint64_t t0_ = 0, t1_ = 0;
};

}  // namespace bpfprof::record
