// SPDX-License-Identifier: Apache-2.0
#include "workload/program.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include "bpf/prog_info.h"
#include "workload/embedded.h"
#include "workload/kallsyms.h"

namespace bpfprof::workload {
namespace {

constexpr size_t kPacketSize = 64;  // skb test runs need at least an Ethernet header

uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct KindSpec {
  std::string_view object;  // embedded object name
  const char* entry;        // SEC function name, which becomes the program name
};

KindSpec spec_of(Kind kind) {
  switch (kind) {
    case Kind::kBurner: return {"burner", "burner"};
    case Kind::kSubprog: return {"bpf2bpf", "bpf2bpf"};
    case Kind::kLongLived: return {"burner", "long_burner"};
    case Kind::kHold: return {"burner", "hold_burner"};
    case Kind::kProbe:
    case Kind::kAttached: return {"burner", "burner"};
  }
  return {"burner", "burner"};
}

const EmbeddedObject* find_object(std::string_view name) {
  for (const EmbeddedObject& obj : embedded_objects())
    if (obj.name == name) return &obj;
  return nullptr;
}

Error load_error(const char* entry, int err) {
  Error e = make_sys_error(std::string("loading ") + entry, err);
  if (e.code == Errc::kPermission) e.message += " (needs CAP_BPF / root)";
  return e;
}

}  // namespace

// Writes a u32 .rodata variable between open and load, located through the
// object's BTF (the DATASEC lists each variable's offset).
Status set_rodata_u32(bpf_object* obj, const char* var, uint32_t value) {
  const btf* types = bpf_object__btf(obj);
  bpf_map* rodata = nullptr;
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, obj) {
    std::string_view name = bpf_map__name(map);
    if (name.size() >= 7 && name.substr(name.size() - 7) == ".rodata") rodata = map;
  }
  if (!types || !rodata) return make_error(Errc::kInternal, "BPF object has no .rodata or BTF");
  int sec_id = btf__find_by_name_kind(types, ".rodata", BTF_KIND_DATASEC);
  if (sec_id < 0) return make_error(Errc::kInternal, "BPF object BTF has no .rodata DATASEC");
  const btf_type* sec = btf__type_by_id(types, sec_id);
  const btf_var_secinfo* vars = btf_var_secinfos(sec);
  for (int i = 0; i < btf_vlen(sec); i++) {
    const btf_type* v = btf__type_by_id(types, vars[i].type);
    if (std::strcmp(btf__name_by_offset(types, v->name_off), var) != 0) continue;
    size_t size = 0;
    const void* initial = bpf_map__initial_value(rodata, &size);
    if (!initial || vars[i].offset + sizeof value > size)
      return make_error(Errc::kInternal, std::string("bad .rodata layout for ") + var);
    std::vector<unsigned char> data(static_cast<const unsigned char*>(initial),
                                    static_cast<const unsigned char*>(initial) + size);
    std::memcpy(data.data() + vars[i].offset, &value, sizeof value);
    int err = bpf_map__set_initial_value(rodata, data.data(), data.size());
    if (err) return make_sys_error(std::string("setting ") + var, -err);
    return ok_status();
  }
  return make_error(Errc::kInternal, std::string("no .rodata variable ") + var);
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kBurner: return "burner";
    case Kind::kSubprog: return "subprog";
    case Kind::kLongLived: return "long-lived";
    case Kind::kHold: return "hold";
    case Kind::kProbe: return "probe";
    case Kind::kAttached: return "attached";
  }
  return "unknown";
}

uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

Result<LoadedProgram> LoadedProgram::load(Kind kind, uint32_t burn_iters, uint64_t seed) {
  KindSpec spec = spec_of(kind);
  const EmbeddedObject* embedded = find_object(spec.object);
  if (!embedded) return make_error(Errc::kInternal, "no embedded BPF object " + std::string(spec.object));

  std::string object_name(spec.object);
  bpf_object_open_opts opts;
  std::memset(&opts, 0, sizeof opts);  // libbpf rejects non-zero bytes it does not know
  opts.sz = sizeof opts;
  opts.object_name = object_name.c_str();
  std::unique_ptr<bpf_object, void (*)(bpf_object*)> object(
      bpf_object__open_mem(embedded->bytes.data(), embedded->bytes.size(), &opts), &bpf_object__close);
  if (!object) return make_sys_error("opening BPF object " + object_name, errno);

  bpf_program* entry = nullptr;
  bpf_program* p = nullptr;
  bpf_object__for_each_program(p, object.get()) {
    bool mine = std::strcmp(bpf_program__name(p), spec.entry) == 0;
    bpf_program__set_autoload(p, mine);
    if (mine) entry = p;
  }
  if (!entry) return make_error(Errc::kInternal, std::string("no BPF program ") + spec.entry);
  // The bpf2bpf program burns in two subprograms: halve so a run costs the same.
  uint32_t iters = kind == Kind::kSubprog ? std::max(1u, burn_iters / 2) : burn_iters;
  BPFPROF_TRY(set_rodata_u32(object.get(), "burn_iters", iters));

  LoadedProgram prog;
  prog.truth_.kind = kind;
  prog.truth_.name = spec.entry;
  uint64_t start = monotonic_ns();
  int err = bpf_object__load(object.get());
  prog.truth_.load_ns = monotonic_ns();
  prog.truth_.load_tid = static_cast<uint32_t>(gettid());
  prog.truth_.load_duration_ns = prog.truth_.load_ns - start;
  if (err) return load_error(spec.entry, -err);
  // Our own reference; closing the object (tens of us of fd closes and
  // frees) then happens now, inside the lifetime, not at unload.
  prog.fd_.reset(fcntl(bpf_program__fd(entry), F_DUPFD_CLOEXEC, 0));
  if (!prog.fd_.valid()) return make_sys_error("duplicating the program fd", errno);
  BPFPROF_TRY(prog.fetch_functions(bpf_object__btf(object.get())));
  object.reset();

  // A fixed-size packet with seeded contents; the programs only read its length.
  prog.packet_.resize(kPacketSize);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (unsigned char& b : prog.packet_) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x);
  }
  return prog;
}

Status LoadedProgram::fetch_functions(const btf* types) {
  // Two phases: the first call reports the array sizes, the second fills them.
  bpf_prog_info info;
  std::memset(&info, 0, sizeof info);
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd_.get(), &info, &len) != 0)
    return make_sys_error("bpf_prog_info of " + truth_.name, errno);
  uint32_t nr_ksyms = info.nr_jited_ksyms, nr_lens = info.nr_jited_func_lens;
  uint32_t nr_tags = info.nr_prog_tags, nr_funcs = info.nr_func_info;
  uint32_t func_rec = info.func_info_rec_size;
  if (func_rec != 0 && func_rec < sizeof(bpf_func_info)) nr_funcs = 0;

  std::vector<uint64_t> ksyms(nr_ksyms);
  std::vector<uint32_t> lens(nr_lens);
  std::vector<bpf::Tag> tags(nr_tags);
  std::vector<unsigned char> funcs(static_cast<size_t>(nr_funcs) * func_rec);
  std::memset(&info, 0, sizeof info);
  info.nr_jited_ksyms = nr_ksyms;
  info.jited_ksyms = reinterpret_cast<uintptr_t>(ksyms.data());
  info.nr_jited_func_lens = nr_lens;
  info.jited_func_lens = reinterpret_cast<uintptr_t>(lens.data());
  info.nr_prog_tags = nr_tags;
  info.prog_tags = reinterpret_cast<uintptr_t>(tags.data());
  info.nr_func_info = nr_funcs;
  info.func_info_rec_size = func_rec;
  info.func_info = reinterpret_cast<uintptr_t>(funcs.data());
  len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd_.get(), &info, &len) != 0)
    return make_sys_error("bpf_prog_info arrays of " + truth_.name, errno);

  truth_.id = info.id;
  truth_.name.assign(info.name, strnlen(info.name, sizeof info.name));
  bpf::Tag tag;
  std::memcpy(tag.data(), info.tag, tag.size());
  truth_.tag = bpf::tag_hex(tag);

  // The kernel names function i "bpf_prog_<tag>_<BTF name of func_info i>",
  // where the tag is prog_tags[i] for subprograms but the whole program's tag
  // for the entry function (it registers the program itself, not func[0]).
  size_t n = std::min({ksyms.size(), lens.size()});
  truth_.functions.clear();
  for (size_t i = 0; i < n; i++) {
    FunctionTruth f;
    f.addr = ksyms[i];
    f.len = lens[i];
    std::string func_name = truth_.name;
    if (types && i < nr_funcs) {
      bpf_func_info rec;
      std::memcpy(&rec, funcs.data() + i * func_rec, sizeof rec);
      const btf_type* t = btf__type_by_id(types, rec.type_id);
      if (t) func_name = btf__name_by_offset(types, t->name_off);
    }
    f.computed_ksym = bpf::ksym_name(i > 0 && i < tags.size() ? tags[i] : tag, func_name);
    f.ksym = f.computed_ksym;
    truth_.functions.push_back(std::move(f));
  }
  return ok_status();
}

Status LoadedProgram::run(uint32_t repeat) {
  bpf_test_run_opts opts;
  std::memset(&opts, 0, sizeof opts);
  opts.sz = sizeof opts;
  opts.data_in = packet_.data();
  opts.data_size_in = static_cast<uint32_t>(packet_.size());
  opts.repeat = repeat;
  uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int err = bpf_prog_test_run_opts(fd_.get(), &opts);
  uint64_t cpu1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (err) {
    int e = err < 0 ? -err : errno;
    // A signal cuts the run short; the caller sees its stop flag next.
    if (e == EINTR) return ok_status();
    return make_sys_error("test-running " + truth_.name, e);
  }
  truth_.run_ns += static_cast<uint64_t>(opts.duration) * repeat;
  truth_.run_count += repeat;
  truth_.test_runs++;
  truth_.cpu_ns += cpu1 - cpu0;
  return ok_status();
}

Status LoadedProgram::resolve_kallsyms() {
  std::vector<uint64_t> addrs;
  for (const FunctionTruth& f : truth_.functions) addrs.push_back(f.addr);
  BPFPROF_ASSIGN_OR_RETURN(auto names, kallsyms_names(addrs));
  for (FunctionTruth& f : truth_.functions) {
    auto it = names.find(f.addr);
    if (it == names.end()) continue;
    f.ksym = it->second;
    f.from_kallsyms = true;
  }
  return ok_status();
}

void LoadedProgram::close() {
  if (!fd_.valid()) return;
  // The last reference: the kernel unloads the program inside this close().
  fd_.reset();
  truth_.unload_ns = monotonic_ns();
}

LoadedProgram& LoadedProgram::operator=(LoadedProgram&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::move(other.fd_);
    packet_ = std::move(other.packet_);
    truth_ = std::move(other.truth_);
  }
  return *this;
}

}  // namespace bpfprof::workload
