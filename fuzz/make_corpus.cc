// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpora of the fuzz targets: small valid inputs built with
// the test builders (records of every type, file-mode and pipe-mode files,
// zstd-compressed ones, feature payloads), plus cut and bit-flipped variants.
// Usage: bpfprof_fuzz_make_corpus <fuzz/corpus dir>. The output is committed;
// rerun after a format change.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "perfdata/writer.h"
#include "testing/capture_record_builder.h"
#include "testing/perfdata_streams.h"
#include "testing/subprocess.h"

namespace bpfprof::fuzz {
namespace {

using testing::ByteVec;

void put(const std::string& path, const ByteVec& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// The seed, two cuts and two deterministic bit flips.
void put_with_variants(const std::string& dir, const std::string& name, const ByteVec& b) {
  put(dir + "/" + name, b);
  if (b.size() < 16) return;
  put(dir + "/" + name + ".cut1", ByteVec(b.begin(), b.begin() + static_cast<ptrdiff_t>(b.size() / 3)));
  put(dir + "/" + name + ".cut2", ByteVec(b.begin(), b.begin() + static_cast<ptrdiff_t>(2 * b.size() / 3)));
  for (int k = 1; k <= 2; ++k) {
    ByteVec f = b;
    for (size_t i = 0; i < 3; ++i) {
      size_t at = (b.size() * (i + 1) * k / 7 + 13 * i) % b.size();
      f[at] ^= std::byte{static_cast<uint8_t>(1u << ((at + k) % 8))};
    }
    put(dir + "/" + name + ".flip" + std::to_string(k), f);
  }
}


// A file-mode perf.data from FileWriter: records, features incl. BPF and kallsyms.
// A file-mode file; `killed`: the features only as in-stream records and the
// file never closed, as a recorder killed with SIGKILL leaves it.
ByteVec file_mode(const ByteVec& records, const perfdata::Features& f, bool killed = false) {
  char path[] = "/tmp/bpfprof-corpus-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  auto w = perfdata::FileWriter::create(path, bpfprof::testing::two_attrs());
  if (killed) (void)w->append_in_stream(f);
  (void)w->append(records);
  (void)w->finish_round();
  if (!killed) (void)w->close(f);
  ByteVec out = testing::read_file_bytes(path);
  unlink(path);
  return out;
}

void records_corpus(const std::string& dir) {
  using namespace bpfprof::testing;
  const uint64_t st = bpfprof::testing::kSampleType;
  const TrailerValues t{1, 2, 3, 4, 5, 6};
  const uint8_t tag[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  SampleValues s{.id = 101, .ip = 0xffffffff81000000, .pid = 1, .tid = 1, .time = 9, .period = 1};
  s.callchain = {perf::kContextKernel, 0xffffffff81000010, perf::kContextUser, 0x401000};
  ByteVec ks = ksymbol_record(st, 0xffffffffc0000000, 64, perf::kKsymTypeBpf, 0, "bpf_prog_x", t);
  ByteVec inflated = ks;
  ByteVec stale = sample_id_trailer(st, {9, 9, 9, 9, 9, 9});
  inflated.insert(inflated.end(), stale.begin(), stale.end());
  const uint16_t n = static_cast<uint16_t>(inflated.size());
  std::memcpy(inflated.data() + 6, &n, 2);
  put_with_variants(dir, "sample", sample_record(st, s));
  put_with_variants(dir, "sample_callchain", sample_record(st | PERF_SAMPLE_CALLCHAIN, s));
  put_with_variants(dir, "mmap2", mmap2_record(st, {.pid = 1, .start = 4096, .len = 4096, .filename = "/bin/x"}, t));
  put_with_variants(dir, "mmap", mmap_record(st, 1, 1, 4096, 4096, 0, "[kernel.kallsyms]_text", t));
  put_with_variants(dir, "comm_fork_exit", concat({comm_record(st, 1, 1, "x", t),
                                                   fork_exit_record(st, false, 1, 1, 2, 2, 5, t),
                                                   fork_exit_record(st, true, 1, 1, 2, 2, 6, t)}));
  put_with_variants(dir, "lost_throttle", concat({lost_record(st, 1, 2, t), lost_samples_record(st, 3, t),
                                                  throttle_record(st, false, 1, 2, 3, t)}));
  put_with_variants(dir, "ksymbol_bpf_event", concat({ks, bpf_event_record(st, 1, 0, 42, tag, t)}));
  put_with_variants(dir, "ksymbol_inflated", inflated);
  put_with_variants(dir, "mixed", bpfprof::testing::mixed_records(3));
}

void reader_corpus(const std::string& dir) {
  perfdata::Features f;
  f.hostname = "fuzz";
  f.cmdline = {"bpfprof", "record"};
  f.kallsyms = "ffffffff81000000 T _text\nffffffff81001000 T f\n";
  f.bpf_prog_info = {bpfprof::testing::demo_prog(42, 0xffffffffc0001000)};
  f.bpf_btf = {{7, ByteVec(24, std::byte{1})}};
  const ByteVec records = bpfprof::testing::mixed_records(4);
  put_with_variants(dir, "file_mode.data", file_mode(records, f));
  put_with_variants(dir, "pipe_mode.data", bpfprof::testing::pipe_stream(records, f));
  put_with_variants(dir, "killed_file.data", file_mode(records, f, true));
  perfdata::Features z;
  z.compression = perfdata::Compression{1, perfdata::kCompZstd, 1, 3, 65536};
  const ByteVec comp = bpfprof::testing::compressed_records(bpfprof::testing::mixed_records(20), 96, 200);
  put_with_variants(dir, "zstd_pipe.data", bpfprof::testing::pipe_stream(comp, z));
  put_with_variants(dir, "zstd_file.data", file_mode(comp, z));
}

// The pipe target supplies the 16-byte header itself: seeds are the streams after it.
void pipe_corpus(const std::string& dir) {
  perfdata::Features f;
  f.hostname = "fuzz";
  f.bpf_prog_info = {bpfprof::testing::demo_prog(42, 0xffffffffc0001000)};
  auto body = [](const ByteVec& stream) { return ByteVec(stream.begin() + 16, stream.end()); };
  put_with_variants(dir, "pipe_mode.data",
                    body(bpfprof::testing::pipe_stream(bpfprof::testing::mixed_records(4), f)));
  perfdata::Features z;
  z.compression = perfdata::Compression{1, perfdata::kCompZstd, 1, 3, 65536};
  const ByteVec comp = bpfprof::testing::compressed_records(bpfprof::testing::mixed_records(20), 96, 200);
  put_with_variants(dir, "zstd_pipe.data", body(bpfprof::testing::pipe_stream(comp, z)));
}

void features_corpus(const std::string& dir) {
  auto with = [](uint8_t selector, const std::vector<std::byte>& payload) {
    ByteVec out{std::byte{selector}};
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
  };
  put_with_variants(dir, "bpf_prog_info", with(0, perfdata::encode_bpf_prog_info(
      {bpfprof::testing::demo_prog(42, 0xffffffffc0001000)})));
  put_with_variants(dir, "bpf_btf", with(1, perfdata::encode_bpf_btf({{7, ByteVec(40, std::byte{2})}})));
  put_with_variants(dir, "kallsyms", with(2, perfdata::encode_kallsyms(
      "ffffffff81000000 T _text\nffffffffc0100000 t e1000_probe\t[e1000]\n")));
  put_with_variants(
      dir, "kallsyms_blocked",
      with(2, perfdata::encode_kallsyms_blocked("ffffffff81000000 T _text\nffffffff81000040 t "
                                                "f\nffffffffc0100000 t e1000_probe\t[e1000]\n")));
  perfdata::Features f;
  f.hostname = "h";
  f.cmdline = {"a", "b"};
  f.nr_cpus_avail = 2;
  f.compression = perfdata::Compression{1, 1, 1, 3, 4096};
  perfdata::AttrEntry e = bpfprof::testing::two_attrs()[0];
  std::vector<perfdata::EventDescEntry> events{{&e.attr, &e.name, &e.ids}};
  for (const auto& [feat, payload] : perfdata::encode_features(f, events))
    put_with_variants(dir, "feature_" + std::to_string(feat), with(static_cast<uint8_t>(feat), payload));
}


// The capture target's input: records, each behind a little-endian u16
// length. One program with its BTF; then one the kernel side marked
// incomplete, its missed-ring record, and one that sends the same BTF; then
// links and a test run.
ByteVec capture_input(const std::vector<testing::CaptureRecord>& records) {
  ByteVec out;
  for (const testing::CaptureRecord& r : records) {
    const uint16_t len = static_cast<uint16_t>(r.size());
    const size_t at = out.size();
    out.resize(at + 2);
    std::memcpy(out.data() + at, &len, 2);
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

void capture_corpus(const std::string& dir) {
  put_with_variants(dir, "program_with_btf", capture_input(testing::capture_program(7, 3)));
  put_with_variants(dir, "program_with_maps", capture_input(testing::capture_program(7, 0, 0, 2)));
  std::vector<testing::CaptureRecord> records = testing::capture_program(8, 0, CAPTURE_INCOMPLETE);
  records.push_back(testing::capture_pod(capture_header{CAPTURE_MISSED, 8}));
  for (auto& r : testing::capture_program(9, 3)) records.push_back(r);
  put_with_variants(dir, "incomplete_then_whole", capture_input(records));
  // Links: a raw_tp, a BPF_PROG_ATTACH to a cgroup, one the ring missed, a test run.
  std::vector<testing::CaptureRecord> links = {
      testing::capture_pod(testing::capture_link_of(11, 7, 1, "task_rename"))};
  capture_link attach = testing::capture_link_of(0, 8, 0);
  attach.flags |= CAPTURE_LINK_PROG_ATTACH;
  attach.cgroup_id = 880;
  links.push_back(testing::capture_pod(attach));
  links.push_back(testing::capture_pod(capture_header{CAPTURE_MISSED_LINK, 12}));
  links.push_back(testing::capture_pod(capture_test_run{{CAPTURE_TEST_RUN, 9}, 500}));
  put_with_variants(dir, "links_and_test_run", capture_input(links));
}

}  // namespace
}  // namespace bpfprof::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <fuzz/corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  bpfprof::fuzz::records_corpus(root + "/records");
  bpfprof::fuzz::reader_corpus(root + "/reader");
  bpfprof::fuzz::pipe_corpus(root + "/pipe");
  bpfprof::fuzz::features_corpus(root + "/features");
  bpfprof::fuzz::capture_corpus(root + "/capture");
  return 0;
}
