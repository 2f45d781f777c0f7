// SPDX-License-Identifier: Apache-2.0
// bpfprof-workload: loads BPF programs of known shape and lifetime, burns CPU
// in them through BPF_PROG_TEST_RUN and writes what it did as ground truth.
#include <bpf/libbpf.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "workload/attached.h"
#include "workload/price.h"
#include "workload/runner.h"
#include "workload/truth.h"

namespace bpfprof::workload {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitProbeRefused = 3;

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

// libbpf's own messages (verifier logs included) only on request, so a
// failure stays one line: BPFPROF_WORKLOAD_LIBBPF_LOG=1 shows them.
int libbpf_log(enum libbpf_print_level level, const char* format, va_list args) {
  static const bool enabled = std::getenv("BPFPROF_WORKLOAD_LIBBPF_LOG") != nullptr;
  if (!enabled || level == LIBBPF_DEBUG) return 0;
  return std::vfprintf(stderr, format, args);
}

int fail(const Error& e, int code = kExitFailed) {
  std::fprintf(stderr, "bpfprof-workload: %s\n", e.to_string().c_str());
  return code;
}

int run(int argc, char** argv) {
  CLI::App app{"Loads BPF programs with chosen lifetimes, burns CPU in them through "
               "BPF_PROG_TEST_RUN and writes the ground truth (ids, times, JIT addresses)."};
  app.name("bpfprof-workload");
  Options o;
  std::string lifetimes = "200ms", long_lived = "1s", truth_path;
  bool hold = false, probe = false, attached = false;
  AttachedOptions ao;
  std::string attached_for = "0s";
  app.add_option("--programs", o.programs, "short-lived burner programs")->capture_default_str();
  app.add_option("--lifetime", lifetimes, "lifetimes cycled through, e.g. 100us,1ms,2s")
      ->capture_default_str();
  app.add_option("--subprog-programs", o.subprog_programs, "short-lived bpf2bpf programs")
      ->capture_default_str();
  app.add_option("--long-lived", long_lived, "the long-lived burner outlives the others by this")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "threads loading programs in parallel")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  app.add_option("--rate", o.rate, "at most this many program loads per second (0: unlimited)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--truth", truth_path, "write the ground truth JSON here when done");
  app.add_flag("--hold", hold, "run one program until SIGINT/SIGTERM; print 'ready <id>' first");
  app.add_option("--seed", o.seed, "shuffle the job order and seed the packets (0: plan order)");
  app.add_flag("--quiet", o.quiet, "no progress on stderr");
  app.add_flag("--probe", probe, "exit 0 if BPF programs load and test-run here, else 3");
  app.add_option("--burn-iters", o.burn_iters, "hot-loop iterations per program execution")
      ->check(CLI::Range(1u, 65536u))
      ->capture_default_str();
  app.add_flag("--attached", attached,
               "attach programs for real (tracepoint, raw_tp, XDP on a veth pair in a network "
               "namespace of its own, cgroup_skb/egress with --cgroup), trigger them until "
               "SIGINT/SIGTERM or --attached-for; print 'ready' first");
  app.add_option("--cgroup", ao.cgroup, "with --attached: join this cgroup v2 directory and "
                                        "attach cgroup_skb/egress to it");
  app.add_option("--attached-for", attached_for, "with --attached: detach after this long")
      ->capture_default_str();
  app.add_flag("--tc", ao.tc,
               "with --attached: also attach a classic tc (cls_bpf) filter at the clsact "
               "ingress of the veth that XDP is on");
  app.add_flag("--prog-attach", ao.prog_attach,
               "with --attached --cgroup: attach cgroup_skb/egress with BPF_PROG_ATTACH (no "
               "link) and detach it with BPF_PROG_DETACH");
  PriceOptions price;
  app.add_option("--price", price.hook,
                 "getppid() in a loop taxed by a map-heavy program at raw_syscalls:sys_enter: "
                 "tracepoint (a BPF link over a perf event), tracepoint_ioctl (PERF_EVENT_IOC_SET_BPF "
                 "on the perf event, no link), raw_tp, or perf_only (the perf event, no "
                 "program); prints CPU ns per call");
  app.add_option("--price-ops", price.ops, "with --price: calls per run")->capture_default_str();
  app.add_option("--price-rounds", price.rounds,
                 "with --price: this many rounds of detached then attached (0: one attached run)");
  app.add_option("--price-processes", price.processes,
                 "with --price: processes doing it at once, each with its own program")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }

  o.lifetimes_ns.clear();
  for (size_t start = 0; start <= lifetimes.size();) {
    size_t comma = std::min(lifetimes.find(',', start), lifetimes.size());
    auto d = parse_duration(std::string_view(lifetimes).substr(start, comma - start));
    if (!d.ok()) return fail(d.error(), kExitUsage);
    o.lifetimes_ns.push_back(*d);
    start = comma + 1;
  }
  auto extra = parse_duration(long_lived);
  if (!extra.ok()) return fail(extra.error(), kExitUsage);
  o.long_lived_extra_ns = *extra;

  libbpf_set_print(libbpf_log);
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  if (probe) {
    auto id = run_probe();
    if (!id.ok()) return fail(std::move(id).error().with_context("probe"), kExitProbeRefused);
    std::printf("ok: loaded and test-ran BPF program id %u\n", *id);
    return 0;
  }

  std::vector<ProgramTruth> programs;
  if (!price.hook.empty()) {
    Status s = run_price(price);
    if (!s.ok()) return fail(s.error());
  } else if (attached) {
    auto d = parse_duration(attached_for);
    if (!d.ok()) return fail(d.error(), kExitUsage);
    ao.duration_ns = *d;
    auto ran = run_attached(ao, g_stop, [] {
      std::printf("ready\n");
      std::fflush(stdout);
    });
    if (!ran.ok()) return fail(ran.error());
    programs = std::move(*ran);
  } else if (hold) {
    auto held = run_hold(o, g_stop, [](uint32_t id) {
      std::printf("ready %u\n", id);
      std::fflush(stdout);
    });
    if (!held.ok()) return fail(held.error());
    programs.push_back(std::move(*held));
  } else {
    auto ran = run_churn(o, g_stop);
    if (!ran.ok()) return fail(ran.error());
    programs = std::move(*ran);
  }
  if (!truth_path.empty()) {
    Status s = write_truth(truth_path, programs);
    if (!s.ok()) return fail(s.error());
  }
  return 0;
}

}  // namespace
}  // namespace bpfprof::workload

int main(int argc, char** argv) { return bpfprof::workload::run(argc, argv); }
