// SPDX-License-Identifier: Apache-2.0
#include "workload/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

namespace bpfprof::workload {
namespace {

constexpr uint32_t kMaxRepeat = 4;       // executions per test run: ~40 us at most
constexpr uint64_t kNoDeadline = UINT64_MAX;

// Reading /proc/kallsyms takes tens of ms (it walks every kernel symbol), so
// short lifetimes cannot afford it: only programs that live this many times
// the last read's cost read it; the others keep the computed names.
constexpr uint64_t kKallsymsLifetimeFactor = 4;
std::atomic<uint64_t> g_kallsyms_cost_ns{50'000'000};

// Spaces program loads at least 1/rate apart, over all threads.
class RateLimiter {
 public:
  explicit RateLimiter(double rate)
      : interval_ns_(rate > 0 ? static_cast<uint64_t>(1e9 / rate) : 0) {}
  // Sleeps until this caller's slot, in short naps so `stop` is seen.
  void wait(const std::atomic<bool>& stop) {
    if (interval_ns_ == 0) return;
    uint64_t slot;
    {
      std::lock_guard lock(mu_);
      slot = std::max(next_ns_, monotonic_ns());
      next_ns_ = slot + interval_ns_;
    }
    for (uint64_t now = monotonic_ns(); now < slot && !stop; now = monotonic_ns())
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(slot - now, 10'000'000)));
  }

 private:
  uint64_t interval_ns_;
  std::mutex mu_;
  uint64_t next_ns_ = 0;
};

struct Job {
  Kind kind;
  uint64_t lifetime_ns;
  uint64_t seed;
};

// Spreads the subprog jobs evenly among the burners; lifetimes cycle in job order.
std::vector<Job> plan_jobs(const Options& o) {
  std::vector<Job> jobs;
  uint32_t total = o.programs + o.subprog_programs;
  for (uint32_t i = 0, subprogs = 0; i < total; i++) {
    bool subprog = subprogs < o.subprog_programs &&
                   (uint64_t{subprogs} + 1) * total <= (uint64_t{i} + 1) * o.subprog_programs;
    if (subprog) subprogs++;
    jobs.push_back({subprog ? Kind::kSubprog : Kind::kBurner, 0, o.seed + i});
  }
  if (o.seed != 0) std::shuffle(jobs.begin(), jobs.end(), std::mt19937_64(o.seed));
  for (size_t i = 0; i < jobs.size(); i++)
    jobs[i].lifetime_ns = o.lifetimes_ns[i % o.lifetimes_ns.size()];
  return jobs;
}

// Test-runs `prog` in small batches until `deadline` (which may move) or
// `stop`; always at least once, so every program has run.
Status burn_until(LoadedProgram& prog, const std::atomic<uint64_t>& deadline,
                  const std::atomic<bool>& stop) {
  ProgramTruth& t = prog.truth();
  do {
    uint64_t now = monotonic_ns();
    uint64_t end = deadline.load(std::memory_order_relaxed);
    if (t.run_count > 0 && (now >= end || stop.load(std::memory_order_relaxed))) break;
    uint32_t repeat = 1;
    if (t.run_count > 0 && t.run_ns > 0 && end != kNoDeadline) {
      uint64_t per_run = std::max<uint64_t>(1, t.run_ns / t.run_count);
      repeat = static_cast<uint32_t>(std::clamp<uint64_t>((end - now) / (2 * per_run), 1, kMaxRepeat));
    } else if (t.run_count > 0) {
      repeat = kMaxRepeat;
    }
    BPFPROF_TRY(prog.run(repeat));
  } while (true);
  return ok_status();
}

void resolve_names(LoadedProgram& prog, bool quiet) {
  uint64_t t0 = monotonic_ns();
  Status s = prog.resolve_kallsyms();
  g_kallsyms_cost_ns.store(monotonic_ns() - t0, std::memory_order_relaxed);
  if (!s.ok()) {
    if (!quiet) std::fprintf(stderr, "bpfprof-workload: kallsyms: %s\n", s.error().to_string().c_str());
    return;
  }
  for (const FunctionTruth& f : prog.truth().functions) {
    if (f.from_kallsyms && f.ksym != f.computed_ksym)
      std::fprintf(stderr, "bpfprof-workload: warning: kernel names %s, naming rule gives %s\n",
                   f.ksym.c_str(), f.computed_ksym.c_str());
  }
}

// One program's whole life: load, name, burn until the deadline, unload.
Result<ProgramTruth> live(Kind kind, uint64_t lifetime_ns, uint64_t seed, const Options& o,
                          const std::atomic<bool>& stop) {
  BPFPROF_ASSIGN_OR_RETURN(LoadedProgram prog, LoadedProgram::load(kind, o.burn_iters, seed));
  prog.truth().lifetime_ns = lifetime_ns;
  std::atomic<uint64_t> deadline{prog.truth().load_ns + lifetime_ns};
  if (lifetime_ns >= kKallsymsLifetimeFactor * g_kallsyms_cost_ns.load(std::memory_order_relaxed))
    resolve_names(prog, o.quiet);
  BPFPROF_TRY(burn_until(prog, deadline, stop));
  prog.close();
  const ProgramTruth& t = prog.truth();
  if (!o.quiet) {
    std::fprintf(stderr, "bpfprof-workload: %s id %u lived %.3f ms (nominal %.3f), %llu runs\n",
                 kind_name(kind), t.id, (t.unload_ns - t.load_ns) / 1e6, lifetime_ns / 1e6,
                 static_cast<unsigned long long>(t.run_count));
  }
  return std::move(prog.truth());
}

// Collects the first error any thread hit; later ones are dropped.
class FirstError {
 public:
  void set(Error e) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::move(e);
  }
  std::optional<Error> take() {
    std::lock_guard lock(mu_);
    return std::move(error_);
  }

 private:
  std::mutex mu_;
  std::optional<Error> error_;
};

void print_summary(const std::vector<ProgramTruth>& programs) {
  std::vector<const ProgramTruth*> by_load;
  for (const ProgramTruth& p : programs) by_load.push_back(&p);
  std::sort(by_load.begin(), by_load.end(),
            [](const ProgramTruth* a, const ProgramTruth* b) { return a->load_ns < b->load_ns; });
  std::vector<uint64_t> seen;
  size_t reused = 0;
  uint64_t runs = 0, run_ns = 0;
  for (const ProgramTruth* p : by_load) {
    runs += p->run_count;
    run_ns += p->run_ns;
    if (p->functions.empty()) continue;
    uint64_t addr = p->functions[0].addr;
    if (std::find(seen.begin(), seen.end(), addr) != seen.end()) reused++;
    seen.push_back(addr);
  }
  std::fprintf(stderr,
               "bpfprof-workload: %zu programs, %llu executions averaging %.1f us, "
               "%zu loaded at an address an earlier program had\n",
               programs.size(), static_cast<unsigned long long>(runs),
               runs ? run_ns / 1e3 / runs : 0.0, reused);
}

}  // namespace

Result<uint64_t> parse_duration(std::string_view text) {
  size_t unit_at = text.find_first_not_of("0123456789.");
  std::string number(text.substr(0, unit_at));
  std::string_view unit = unit_at == std::string_view::npos ? "" : text.substr(unit_at);
  double scale = unit == "s" ? 1e9 : unit == "ms" ? 1e6 : unit == "us" ? 1e3 : unit == "ns" ? 1 : 0;
  char* end = nullptr;
  double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  if (scale == 0 || value < 0 || end != number.c_str() + number.size())
    return make_error(Errc::kInvalidArgument,
                      "bad duration '" + std::string(text) + "' (want e.g. 200ms, 1s, 100us)");
  return static_cast<uint64_t>(std::llround(value * scale));
}

Result<std::vector<ProgramTruth>> run_churn(const Options& o, const std::atomic<bool>& stop) {
  RateLimiter rate(o.rate);
  FirstError first_error;
  std::atomic<bool> failed{false};

  // The long-lived program loads first and is unloaded last.
  std::atomic<uint64_t> long_deadline{kNoDeadline};
  std::optional<ProgramTruth> long_truth;
  std::atomic<int> long_state{0};  // 0 loading, 1 running, 2 done
  std::thread long_thread([&] {
    rate.wait(stop);
    auto prog = LoadedProgram::load(Kind::kLongLived, o.burn_iters, o.seed);
    if (!prog.ok()) {
      first_error.set(std::move(prog).error().with_context("long-lived program"));
      failed = true;
      long_state = 2;
      return;
    }
    resolve_names(*prog, o.quiet);
    long_state = 1;
    Status s = burn_until(*prog, long_deadline, stop);
    prog->close();
    if (!s.ok()) first_error.set(std::move(s).error());
    long_truth = std::move(prog->truth());
    long_state = 2;
  });
  while (long_state.load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));

  std::vector<Job> jobs = plan_jobs(o);
  std::vector<std::optional<ProgramTruth>> done(jobs.size());
  std::atomic<size_t> next_job{0};
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < std::max(1u, o.threads) && !failed; t++) {
    workers.emplace_back([&] {
      while (!failed && !stop) {
        size_t i = next_job.fetch_add(1);
        if (i >= jobs.size()) return;
        rate.wait(stop);
        if (stop) return;
        auto r = live(jobs[i].kind, jobs[i].lifetime_ns, jobs[i].seed, o, stop);
        if (!r.ok()) {
          first_error.set(std::move(r).error().with_context(kind_name(jobs[i].kind)));
          failed = true;
          return;
        }
        done[i] = std::move(*r);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  long_deadline = monotonic_ns() + o.long_lived_extra_ns;
  long_thread.join();

  if (auto e = first_error.take()) return std::move(*e);
  std::vector<ProgramTruth> programs;
  if (long_truth) programs.push_back(std::move(*long_truth));
  for (auto& d : done)
    if (d) programs.push_back(std::move(*d));
  if (!o.quiet) print_summary(programs);
  return programs;
}

Result<ProgramTruth> run_hold(const Options& o, const std::atomic<bool>& stop,
                              const std::function<void(uint32_t id)>& on_ready) {
  BPFPROF_ASSIGN_OR_RETURN(LoadedProgram prog, LoadedProgram::load(Kind::kHold, o.burn_iters, o.seed));
  resolve_names(prog, o.quiet);
  on_ready(prog.truth().id);
  std::atomic<uint64_t> deadline{kNoDeadline};
  BPFPROF_TRY(burn_until(prog, deadline, stop));
  prog.close();
  return std::move(prog.truth());
}

Result<uint32_t> run_probe() {
  BPFPROF_ASSIGN_OR_RETURN(LoadedProgram prog, LoadedProgram::load(Kind::kProbe, 16, 0));
  BPFPROF_TRY(prog.run(1));
  uint32_t id = prog.truth().id;
  prog.close();
  return id;
}

}  // namespace bpfprof::workload
