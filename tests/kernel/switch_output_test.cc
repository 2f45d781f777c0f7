// SPDX-License-Identifier: Apache-2.0
// `bpfprof record --switch-output` of the BPF workload, whose long-lived
// program lives across several switches: every file is complete on its own
// (bpfprof report and Linux perf 6.1 read it without a word and count the
// same samples), the files' samples add up to the recorder's own total (none
// lost or written twice at a switch), a program loaded in the first file is
// named in the later ones, --switch-max-files keeps the newest N (with -z:
// each file its own zstd stream), a size switches too, and so does SIGUSR2.
// Each file carries its own --bpf-stats runs, enrichment and attach points.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "perfdata/reader.h"
#include "testing/paths.h"
#include "testing/recording_readback.h"
#include "testing/subprocess.h"
#include "testing/workload_recording.h"

namespace bpfprof::testing {
namespace {

const std::string kBin = BPFPROF_BIN_DIR;

// The workload: short-lived programs in the first second, and one
// long-lived program burning for 3.5 s, across the switches.
const std::vector<std::string> kWorkload = {"--programs",         "4", "--lifetime",   "2ms,50ms",
                                            "--subprog-programs", "1", "--long-lived", "3500ms"};

// The files a switching recording left in `dir`: <data>.<16 digits>, by name
// (which is by time).
std::vector<std::string> switched_files(const std::string& dir, const std::string& data) {
  const std::string base = std::filesystem::path(data).filename().string();
  const std::regex name(std::regex_replace(base, std::regex(R"([.])"), R"(\.)") + R"(\.\d{16})");
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (std::regex_match(e.path().filename().string(), name)) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What the recorder said: "wrote <file>: N samples" per file, and the total.
struct RecorderSaid {
  std::map<std::string, uint64_t> wrote;  // file -> samples
  std::vector<std::string> order;
  uint64_t total = 0;
  bool has_total = false;
};
RecorderSaid parse_stderr(const std::string& err) {
  RecorderSaid s;
  const std::regex wrote(R"(bpfprof record: wrote (\S+): (\d+) samples)");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), wrote); it != std::sregex_iterator();
       ++it) {
    s.wrote[(*it)[1]] = std::stoull((*it)[2]);
    s.order.push_back((*it)[1]);
  }
  std::smatch m;
  if (std::regex_search(err, m, std::regex(R"(\[ bpfprof record: (\d+) samples)"))) {
    s.total = std::stoull(m[1]);
    s.has_total = true;
  }
  return s;
}

// One file as bpfprof report (JSON) and perf script see it.
struct FileView {
  RunResult report, script;
  nlohmann::json json;
  uint64_t perf_samples = 0;
};
FileView view(const std::string& file) {
  FileView v;
  v.report = run({kBin + "/bpfprof", "report", "-q", "-i", file, "--format", "json"});
  if (v.report.exit_code == 0) v.json = nlohmann::json::parse(v.report.out, nullptr, false);
  v.script = run({"perf", "script", "-i", file, "-F", "time,ip,sym", "-G", "--ns"});
  v.perf_samples =
      static_cast<uint64_t>(std::count(v.script.out.begin(), v.script.out.end(), '\n'));
  return v;
}

// Every file complete on its own, counted alike by both readers, and their
// sum the recorder's total.
void expect_files_add_up(const std::vector<std::string>& files, const RecorderSaid& said,
                         bool all_written) {
  ASSERT_TRUE(said.has_total) << "no summary line";
  uint64_t sum = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const FileView v = view(f);
    ASSERT_EQ(v.report.exit_code, 0) << v.report.err;
    EXPECT_EQ(v.report.err, "");
    ASSERT_TRUE(v.json.is_object());
    ASSERT_EQ(v.script.exit_code, 0) << v.script.err;
    EXPECT_EQ(v.script.err, "") << "perf script warned";
    const uint64_t ours = v.json.at("samples").get<uint64_t>();
    EXPECT_GT(ours, 0u);
    EXPECT_EQ(ours, v.perf_samples);
    ASSERT_TRUE(said.wrote.count(f)) << "the recorder did not say it wrote this file";
    EXPECT_EQ(said.wrote.at(f), ours);
    const nlohmann::json& d = v.json.at("diagnostics");
    EXPECT_EQ(d.at("bpf_samples_unattributed").get<uint64_t>(), 0u);
    EXPECT_EQ(d.at("unknown_frames.bpf_not_alive").get<uint64_t>(), 0u);
    EXPECT_EQ(d.at("programs_without_info").get<uint64_t>(), 0u);
    // A program alive when the side-band events opened and gone before the
    // listing (the capture of the recording before, freed late on a busy
    // machine) leaves an unload without a load, truthfully: the race of
    // every recording's start, so in its first file only. A switch leaves
    // none.
    if (&f != &files.front()) {
      EXPECT_EQ(d.at("ksymbol_unregister_unknown").get<uint64_t>(), 0u);
    }
    sum += ours;
  }
  if (all_written) {
    EXPECT_EQ(sum, said.total) << "samples lost or written twice across the switches";
  }
}

constexpr int kRuns = 5;
struct SwitchRuns {
  // By time (with --bpf-stats); with -z and --switch-max-files 2; by size;
  // by time, with programs of 30 ms loaded one after another throughout; by
  // time, with the user-space enricher and --bpf-stats.
  WorkloadRecording runs[kRuns];
  RecorderSaid said[kRuns];
};

class SwitchOutputTest : public WorkloadRecordingTest<SwitchOutputTest, SwitchRuns> {
 protected:
  static void SetUpTestSuite() {
    g = new SwitchRuns;
    // Each file starts with about 1 MB of its own (the kallsyms snapshot,
    // threads, programs): 2 MiB at 4000 Hz with call graphs is a switch
    // every second or two.
    const std::vector<std::string> flags[kRuns] = {
        {"-a", "-g", "-F", "999", "--bpf-stats", "--switch-output=1s"},
        {"-a", "-g", "-F", "999", "-z", "--switch-output=1s", "--switch-max-files", "2"},
        {"-a", "-g", "--switch-output=2M"},
        {"-a", "-g", "-F", "999", "--switch-output=1s"},
        {"-a", "-F", "999", "--enrich", "user", "--bpf-stats", "--switch-output=1s"}};
    const std::vector<std::string> short_lived = {
        "--programs",         "150", "--lifetime",   "30ms",
        "--subprog-programs", "0",   "--long-lived", "100ms"};
    for (int i = 0; i < kRuns; i++) {
      WorkloadRun run;
      run.record_flags = flags[i];
      run.workload_args = i == 3 ? short_lived : kWorkload;
      run.data_name = "perf.data";
      if (!g->runs[i].record_workload(kBin, run)) return;
      g->said[i] = parse_stderr(g->runs[i].record.err);
    }
  }
};

TEST_F(SwitchOutputTest, EveryFileIsCompleteAndTheyAddUpToTheTotal) {
  const WorkloadRecording& r = g->runs[0];
  const std::vector<std::string> files = switched_files(r.dir.path(), r.data);
  ASSERT_GE(files.size(), 3u) << r.record.err;
  EXPECT_FALSE(std::filesystem::exists(r.data)) << "the last file is renamed too";
  EXPECT_EQ(files.size(), g->said[0].wrote.size()) << r.record.err;
  expect_files_add_up(files, g->said[0], true);
  std::printf("%zu files, %llu samples\n", files.size(),
              static_cast<unsigned long long>(g->said[0].total));
}

// The long-lived program, loaded while the first file was current, burns in
// every later one: its samples there fall in a KSYMBOL of that file with its
// name, and the report names it.
TEST_F(SwitchOutputTest, AProgramLoadedInTheFirstFileIsNamedInTheLaterOnes) {
  const WorkloadRecording& r = g->runs[0];
  const std::vector<std::string> files = switched_files(r.dir.path(), r.data);
  ASSERT_GE(files.size(), 3u);
  const nlohmann::json& longest = r.long_lived();
  ASSERT_FALSE(longest.is_null());
  const std::string name = longest.at("name").get<std::string>();
  const TruthProgram* truth = nullptr;
  for (const TruthProgram& p : r.programs) {
    if (p.name == name) truth = &p;
  }
  ASSERT_NE(truth, nullptr);
  // The middle files are whole periods of its 3.5 s burn.
  for (size_t i = 1; i + 1 < files.size(); i++) {
    SCOPED_TRACE(files[i]);
    const Recording rec = read_recording(files[i]);
    size_t in_program = 0;
    for (const SampleEvent& s : rec.samples) {
      for (const TruthFunction& f : truth->functions) {
        if (s.ip < f.addr || s.ip >= f.addr + f.len) continue;
        in_program++;
        const bool named =
            std::any_of(rec.ksymbols.begin(), rec.ksymbols.end(), [&](const KsymbolEvent& k) {
              return !k.unregister && k.addr == f.addr && k.name == f.ksym;
            });
        EXPECT_TRUE(named) << f.ksym << " has no KSYMBOL in this file";
      }
    }
    EXPECT_GT(in_program, 100u) << "the long-lived program burns through this period";
    EXPECT_TRUE(rec.prog_info.count(truth->id)) << "its BPF_PROG_INFO is in this file";
    const FileView v = view(files[i]);
    ASSERT_EQ(v.report.exit_code, 0) << v.report.err;
    bool reported = false;
    for (const auto& p : v.json.at("programs")) {
      if (p.at("name") == name && p.at("samples").get<uint64_t>() > 0) reported = true;
    }
    EXPECT_TRUE(reported) << "report names " << name;
    // Its bpf_metadata_* variables too: each file holds its own (section 248).
    for (const auto& p : v.json.at("programs")) {
      if (p.at("name") != name) continue;
      EXPECT_EQ(p.at("metadata"),
                (nlohmann::json{{"workload", "bpfprof-workload burner"}, {"kinds", 3}}))
          << p.dump();
    }
    // Most of its samples are in its subprogram: any of its functions will do.
    EXPECT_TRUE(std::any_of(
        truth->functions.begin(), truth->functions.end(),
        [&](const TruthFunction& f) { return v.script.out.find(f.ksym) != std::string::npos; }))
        << "perf script names it";
    // perf reads its info from the file's BPF_PROG_INFO section.
    RunResult header = run({"perf", "report", "-i", files[i], "--header-only"});
    EXPECT_NE(header.out.find("# bpf_prog_info " + std::to_string(truth->id) + ":"),
              std::string::npos);
  }
}

// The long-lived program's run statistics (section 252) in each file are
// that file's runs: a file's first value is the last one of the file before
// (read at the switch), and the middle files, whole periods of its burn,
// count runs. Each file's enrichment line is its recorder's, and the
// program's point ("test_run only") is named in every file, as in the last.
void expect_per_file_sections(const WorkloadRecording& r, perfdata::EnrichmentPath path) {
  const std::vector<std::string> files = switched_files(r.dir.path(), r.data);
  ASSERT_GE(files.size(), 3u) << r.record.err;
  const nlohmann::json& longest = r.long_lived();
  ASSERT_FALSE(longest.is_null());
  uint32_t id = 0;
  for (const TruthProgram& p : r.programs) {
    if (p.name == longest.at("name").get<std::string>()) id = p.id;
  }
  ASSERT_NE(id, 0u);
  std::optional<perfdata::ProgramRunStats> before;
  std::optional<perfdata::EnrichmentSection> last_enrichment;
  for (size_t i = 0; i < files.size(); i++) {
    SCOPED_TRACE(files[i]);
    auto reader = perfdata::FileReader::open(files[i]);
    ASSERT_TRUE(reader.ok()) << reader.error().to_string();
    const perfdata::Features& f = reader->features();
    ASSERT_TRUE(f.run_stats.has_value()) << "section 252 in every file";
    ASSERT_TRUE(f.enrichment.has_value());
    EXPECT_EQ(f.enrichment->path, path);
    if (last_enrichment) {
      EXPECT_EQ(f.enrichment->sched, last_enrichment->sched);
      EXPECT_EQ(f.enrichment->threads, last_enrichment->threads);
      EXPECT_EQ(f.enrichment->pinned, last_enrichment->pinned);
    }
    last_enrichment = f.enrichment;
    const perfdata::ProgramRunStats* ours = nullptr;
    for (const perfdata::ProgramRunStats& p : f.run_stats->programs) {
      if (p.id == id) ours = &p;
    }
    if (before && !ours) {
      ADD_FAILURE() << "program " << id << ", in the file before, is missing here";
      before.reset();
      continue;
    }
    if (!ours) continue;  // loaded later in the run than this file
    if (before) {
      EXPECT_FALSE(ours->has(perfdata::ProgramRunStats::kLoadedDuring));
      EXPECT_EQ(ours->first_run_cnt, before->last_run_cnt)
          << "this file starts where the last ended";
      EXPECT_EQ(ours->first_run_time_ns, before->last_run_time_ns);
      EXPECT_EQ(ours->first_ns, before->last_ns);
    }
    if (i > 0 && i + 1 < files.size()) {
      EXPECT_GT(ours->run_cnt(), 0u) << "the program runs through this period";
      EXPECT_TRUE(ours->has(perfdata::ProgramRunStats::kReadAtEnd)) << "read at the switch";
    }
    before = *ours;
    if (path == perfdata::EnrichmentPath::kInKernel && i + 1 < files.size()) {
      ASSERT_TRUE(f.attach.has_value());
      EXPECT_TRUE(std::any_of(f.attach->entries.begin(), f.attach->entries.end(),
                              [&](const perfdata::AttachEntry& e) {
                                return e.prog_id == id && e.point == "test_run only";
                              }))
          << "its point named in this file";
    }
  }
}

TEST_F(SwitchOutputTest, EachFileHasItsOwnRunsEnrichmentAndPoints) {
  expect_per_file_sections(g->runs[0], perfdata::EnrichmentPath::kInKernel);
}

TEST_F(SwitchOutputTest, EachFileHasItsOwnRunsAndEnrichmentWithTheUserEnricher) {
  expect_files_add_up(switched_files(g->runs[4].dir.path(), g->runs[4].data), g->said[4], true);
  expect_per_file_sections(g->runs[4], perfdata::EnrichmentPath::kUserSpace);
}

// With -z, each file is its own zstd stream perf decompresses.
TEST_F(SwitchOutputTest, MaxFilesKeepsTheNewestCompressed) {
  const WorkloadRecording& r = g->runs[1];
  const RecorderSaid& said = g->said[1];
  ASSERT_GE(said.order.size(), 3u) << r.record.err;
  const std::vector<std::string> files = switched_files(r.dir.path(), r.data);
  ASSERT_EQ(files.size(), 2u) << r.record.err;
  EXPECT_EQ(files[0], said.order[said.order.size() - 2]);
  EXPECT_EQ(files[1], said.order.back());
  expect_files_add_up(files, said, false);
  for (const std::string& f : files) {
    RunResult header = run({"perf", "report", "-i", f, "--header-only"});
    EXPECT_NE(header.out.find("# compressed : Zstd, level = 1"), std::string::npos) << f;
  }
}

// By size (2 MiB of data written): every file but the last reached it.
TEST_F(SwitchOutputTest, ASizeSwitchesToo) {
  const WorkloadRecording& r = g->runs[2];
  const std::vector<std::string> files = switched_files(r.dir.path(), r.data);
  ASSERT_GE(files.size(), 2u) << r.record.err;
  for (size_t i = 0; i + 1 < files.size(); i++) {
    EXPECT_GE(std::filesystem::file_size(files[i]), 2u << 20) << files[i];
  }
  expect_files_add_up(files, g->said[2], true);
  std::printf("%zu files of 2M\n", files.size());
}

// Programs loaded and unloaded all along: one unloaded between a file's last
// drain and the next file's listing has its last samples and its unload in
// the next file, which describes it too (without that, 5 to 21 BPF samples
// a file were unattributed here).
TEST_F(SwitchOutputTest, ProgramsUnloadedAtASwitchAreNamedInTheNextFile) {
  const WorkloadRecording& r = g->runs[3];
  const std::vector<std::string> files = switched_files(r.dir.path(), r.data);
  ASSERT_GE(files.size(), 3u) << r.record.err;
  expect_files_add_up(files, g->said[3], true);
  // The ground truth: every sample in a short-lived program's code while it
  // was loaded falls in a KSYMBOL of its file.
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const Recording rec = read_recording(f);
    size_t in_programs = 0;
    for (const SampleEvent& s : rec.samples) {
      for (const TruthProgram& p : r.programs) {
        if (s.time < p.load_ns || (p.unload_ns && s.time > p.unload_ns)) continue;
        for (const TruthFunction& fn : p.functions) {
          if (s.ip < fn.addr || s.ip >= fn.addr + fn.len) continue;
          in_programs++;
          EXPECT_TRUE(std::any_of(rec.ksymbols.begin(), rec.ksymbols.end(),
                                  [&](const auto& k) {
                                    return !k.unregister && k.addr == fn.addr && k.name == fn.ksym;
                                  }))
              << fn.ksym << " of program " << p.id;
        }
      }
    }
    // Programs load one after another until the last file.
    if (&f != &files.back()) {
      EXPECT_GT(in_programs, 0u);
    }
  }
}

// --switch-output alone: SIGUSR2 switches, SIGINT ends.
TEST(SwitchOutputSignalTest, SigusrTwoSwitches) {
  if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  TempDir dir;
  const std::string data = dir.file("perf.data");
  Background recorder(
      {kBin + "/bpfprof", "record", "-a", "-F", "999", "-q", "--switch-output", "-o", data});
  for (int i = 0; i < 2; i++) {
    ASSERT_TRUE(wait_for_data(data)) << "file " << i << " never got a round";
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(::kill(recorder.pid(), SIGUSR2), 0);
    for (int t = 0; t < 100 && switched_files(dir.path(), data).size() < size_t(i) + 1; t++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ASSERT_TRUE(wait_for_data(data));
  EXPECT_EQ(recorder.stop(SIGINT), 0);
  const std::vector<std::string> files = switched_files(dir.path(), data);
  ASSERT_EQ(files.size(), 3u);
  for (const std::string& f : files) {
    RunResult script = run({"perf", "script", "-i", f, "-F", "time,ip", "--ns"});
    EXPECT_EQ(script.exit_code, 0) << f << ": " << script.err;
    EXPECT_EQ(script.err, "") << f;
    EXPECT_NE(script.out, "") << f << " has samples";
  }
}

// By time, SIGUSR2 is ignored, as perf ignores it, instead of killing the
// recording: one file, closed and renamed at the end.
TEST(SwitchOutputSignalTest, SigusrTwoIsIgnoredByTime) {
  if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  TempDir dir;
  const std::string data = dir.file("perf.data");
  Background recorder(
      {kBin + "/bpfprof", "record", "-a", "-F", "999", "-q", "--switch-output=1h", "-o", data});
  for (int i = 0; i < 100 && !std::filesystem::exists(data); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_EQ(::kill(recorder.pid(), SIGUSR2), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(recorder.stop(SIGINT), 0);
  const std::vector<std::string> files = switched_files(dir.path(), data);
  ASSERT_EQ(files.size(), 1u);
  RunResult script = run({"perf", "script", "-i", files[0], "-F", "time,ip", "--ns"});
  EXPECT_EQ(script.exit_code, 0) << script.err;
  EXPECT_NE(script.out, "");
}

// The directory moved away while recording: the next file cannot be
// created there; one line, exit 1, and the files done (renamed through the
// directory itself) stay complete where the directory went.
TEST(SwitchOutputDiskFullTest, DirectoryGoneAtASwitchIsOneLine) {
  if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  TempDir dir;
  const std::string out_dir = dir.file("out"), moved = dir.file("moved");
  ASSERT_TRUE(std::filesystem::create_directory(out_dir));
  const std::string data = out_dir + "/perf.data", err = dir.file("err");
  Background recorder({"sh", "-c",
                       "exec " + kBin +
                           "/bpfprof record -a -F 999 -q --switch-output=1s -d 20 -o " + data +
                           " 2>" + err});
  for (int i = 0; i < 100 && switched_files(out_dir, data).empty(); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(switched_files(out_dir, data).empty()) << read_file_text(err);
  std::filesystem::rename(out_dir, moved);
  EXPECT_EQ(recorder.stop(0), 1);
  const std::string said = read_file_text(err);
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_NE(said.find("No such file or directory"), std::string::npos) << said;
  const std::vector<std::string> files = switched_files(moved, moved + "/perf.data");
  ASSERT_GE(files.size(), 1u);
  for (const std::string& f : files) {
    RunResult script = run({"perf", "script", "-i", f, "-F", "time,ip", "--ns"});
    EXPECT_EQ(script.exit_code, 0) << f << ": " << script.err;
    EXPECT_EQ(script.err, "") << f;
    EXPECT_NE(script.out, "") << f;
  }
}

// A disk that fills while switching (a 3 MiB tmpfs, in a mount namespace of
// this test's own): one line and exit 1; the files done before stay
// complete, each read by perf and bpfprof alike, and nothing is left at the
// output name.
TEST(SwitchOutputDiskFullTest, FilesDoneStayCompleteAndTheErrorIsOneLine) {
  if (std::string why = bpf_refusal(kBin); !why.empty()) BPFPROF_KERNEL_SKIP(why);
  TempDir dir;
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0)
      << std::strerror(errno);
  ASSERT_EQ(::mount("none", dir.path().c_str(), "tmpfs", 0, "size=3m"), 0) << std::strerror(errno);
  const std::string data = dir.file("perf.data");
  RunResult r = run({kBin + "/bpfprof", "record", "-a", "-g", "-F", "999", "-q",
                     "--switch-output=1s", "-o", data, "-d", "20"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  const std::vector<std::string> files = switched_files(dir.path(), data);
  ASSERT_GE(files.size(), 1u) << r.err;
  for (const std::string& f : files) {
    // The last one, that the disk filled, is cut back to its last complete
    // round: maybe before its first sample.
    const bool filled = &f == &files.back();
    const FileView v = view(f);
    ASSERT_EQ(v.report.exit_code, 0) << f << ": " << v.report.err;
    ASSERT_EQ(v.script.exit_code, 0) << f << ": " << v.script.err;
    EXPECT_EQ(v.script.err, "") << f;
    if (!filled) {
      EXPECT_GT(v.perf_samples, 0u) << f;
    }
    EXPECT_EQ(v.json.at("samples").get<uint64_t>(), v.perf_samples) << f;
  }
  EXPECT_FALSE(std::filesystem::exists(data)) << "a file left at the output name";
  ::umount(dir.path().c_str());
}

}  // namespace
}  // namespace bpfprof::testing
