// SPDX-License-Identifier: Apache-2.0
// The floor of reading a recording (bench/user_bench.sh; not a test): the
// least any reader of a perf.data file does — map the data section, walk
// every record header, read each sample's leaf ip and sum them — with no
// check, no symbol and no output beyond one line. Its whole-process time is
// process start plus touching the file's pages in the page cache plus the
// walk: what no reading mode can go below on this machine. With -j 2 the
// data section is split in two halves read at once (each thread touching one
// word per cache line of its half, the second one not walking records: it
// cannot know where one starts without the first's walk), the floor of
// getting the bytes into two cores.
//
//   bpfprof-read-floor [-j 2] FILE     prints "samples N leaf-ip-sum S"
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {

uint64_t u64_at(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

int fail(const char* what) {
  std::fprintf(stderr, "bpfprof-read-floor: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 1;
  int arg = 1;
  if (argc == 4 && std::string(argv[1]) == "-j") {
    jobs = std::stoi(argv[2]);
    arg = 3;
  }
  if (arg + 1 != argc || (jobs != 1 && jobs != 2)) return fail("usage: [-j 1|2] FILE");
  const int fd = ::open(argv[arg], O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return fail("cannot open the file");
  const size_t len = static_cast<size_t>(st.st_size);
  if (len < 104) return fail("not a perf.data file");
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) return fail("cannot map the file");
  const auto* file = static_cast<const unsigned char*>(map);
  // File header: magic, size, attr_size, attrs {offset, size}, data {offset, size}.
  if (std::memcmp(file, "PERFILE2", 8) != 0) return fail("not a perf.data file (or pipe mode)");
  const uint64_t attrs_at = u64_at(file + 24), data_at = u64_at(file + 40);
  const uint64_t data_size = u64_at(file + 48);
  if (attrs_at + 32 > len || data_at > len || data_size > len - data_at) {
    return fail("header out of bounds");
  }
  // The first attr's sample_type says where the ip sits.
  const uint64_t sample_type = u64_at(file + attrs_at + 24);
  const size_t ip_at = 8 + ((sample_type & PERF_SAMPLE_IDENTIFIER) ? 8 : 0);
  if (!(sample_type & PERF_SAMPLE_IP)) return fail("samples without ip");
  const unsigned char* data = file + data_at;

  uint64_t touched = 0;
  std::thread other;
  size_t walk_end = data_size;
  if (jobs == 2) {
    walk_end = data_size / 2;
    other = std::thread([&] {
      uint64_t sum = 0;
      for (size_t at = data_size / 2; at + 8 <= data_size; at += 64) sum += u64_at(data + at);
      touched = sum;
    });
  }
  uint64_t samples = 0, ip_sum = 0;
  for (size_t at = 0; at + 8 <= walk_end;) {
    const uint32_t type = static_cast<uint32_t>(u64_at(data + at));
    const uint16_t size = static_cast<uint16_t>(u64_at(data + at) >> 48);
    if (size < 8 || size > data_size - at) break;
    if (type == PERF_RECORD_SAMPLE && size >= ip_at + 8) {
      samples++;
      ip_sum += u64_at(data + at + ip_at);
    }
    at += size;
  }
  if (other.joinable()) other.join();
  std::printf("samples %llu leaf-ip-sum %llx (%llx)\n", static_cast<unsigned long long>(samples),
              static_cast<unsigned long long>(ip_sum), static_cast<unsigned long long>(touched));
  return 0;
}
