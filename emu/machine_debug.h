// SPDX-License-Identifier: GPL-2.0-or-later
// The machine as gdb's stub sees it (debug/debug_target.h): threads are
// vCPUs, breakpoints and watchpoints are the engines' hooks, and a stop is
// a defined point of virtual time on every vCPU.
//
// Two threads. The machine runs on one of its own (run_machine); the stub
// serves its client on the caller's. A stop parks the machine thread where
// it stopped (inside a vCPU's slice for a breakpoint, a step or a watch hit;
// between slices for ^C, an attach or -S) and every question the client
// asks is answered there, on the machine thread, through a mailbox: only
// that thread ever touches an engine. resume() lets it go on.
//
// Reverse execution: the run is deterministic, so any earlier point is
// reached exactly by running the same machine again from its start and
// stopping there. A reverse request makes the parked machine thread throw
// RewindRequest; its owner (cli/gdb_run) builds the machine anew from the
// same configuration, rebind()s the debugger to it with the target, and runs
// it: the debugger stops it at the target, where no output is repeated (the
// owner's serial sink drops what was printed already). A point is "vCPU N
// about to run its instruction number C" (DebugPosition): unique in a run
// but for REP turns, which share their instruction's number.
//   reverse-stepi on N at C: stop where N is at C - 1 (none before 0: the
//     start of history, replaylog:begin);
//   reverse-continue: replay up to now, noting every breakpoint and watch
//     hit, then replay again to the last of them (or to the start).
//
// Determinism: a stop inside a slice returns into the same slice with the
// rest of its budget (emu/vcpu_debug.cc), and a stop between slices takes
// nothing from the schedule, so a run that a debugger stopped and continued
// prints the same output and report as one it never touched. A step lets
// the other vCPUs run on the machine's own schedule only as far as the
// stepped vCPU's next instruction (within one slice: not at all); topolab
// never runs a vCPU out of its turn, so `vCont;s:N` without `;c` is served
// the same way (docs/debugging.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <vector>
#include <mutex>
#include <optional>
#include <string>

#include "debug/debug_target.h"
#include "emu/machine.h"
#include "emu/machine_checkpoints.h"

namespace topolab {

// A point of a run's history: `vcpu` about to run its instruction number
// `instructions`.
struct DebugPosition {
  unsigned vcpu = 0;
  uint64_t instructions = 0;
  friend bool operator==(const DebugPosition&, const DebugPosition&) = default;
};

// Where a replay of the run must stop, and what it says there.
struct ReplayTarget {
  enum class Mode : uint8_t {
    kStopAt,       // park at `position` with `event`
    kFindLastHit,  // note every hit before `position` (now), then replay to the last one
    kBegin,        // park before the first instruction: the start of history
  };
  Mode mode = Mode::kBegin;
  DebugPosition position;
  debug::StopEvent event;
  // kFindLastHit: search from the start of history, not from the latest
  // checkpoint (which had no hit before `position`).
  bool from_start = false;
};

// Thrown on the machine thread by a reverse request: the machine must be
// built again and rebind() given `target`.
struct RewindRequest {
  ReplayTarget target;
};

// The monitor's `snapshot save|load|list` (debug/monitor.h), kept by the
// debugger: a snapshot is a named point of the run's history, and loading
// it goes there, back or forward, by the same exact replay as reverse
// execution (from the latest checkpoint before it). Each answer is one line.
class SnapshotShelf {
 public:
  virtual ~SnapshotShelf() = default;
  virtual std::string save_snapshot(std::string_view name) = 0;
  virtual std::string load_snapshot(std::string_view name) = 0;
  virtual std::string list_snapshots() = 0;
};

class MachineDebugger final : public debug::DebugTarget, public MachineDebugHooks, public SnapshotShelf {
 public:
  struct Options {
    // Answers a monitor command line (the stub's qRcmd) about the machine,
    // on the machine thread, with the debugger's snapshots; nullptr: every
    // command is refused.
    std::function<std::string(Machine&, SnapshotShelf&, std::string_view)> monitor;
    // The owner builds the machine again on RewindRequest: reverse
    // execution is on.
    bool can_rewind = false;
    // The process's exit status for a run's result, which gdb's W reply
    // carries; nullptr: 0.
    std::function<int(const RunResult&)> exit_status;
    // Reverse execution replays from the latest checkpoint before its
    // target (emu/machine_checkpoints.h), kept every this many instructions
    // of all vCPUs; 0: none, every replay starts from the beginning.
    uint64_t checkpoint_every = kCheckpointEvery;
    // The guest's output: how many bytes the machine has printed, and where
    // a machine restored from a checkpoint goes on printing (so a replay
    // prints nothing twice); nullptr when output does not matter.
    std::function<uint64_t()> output_position;
    std::function<void(uint64_t)> seek_output;
  };
  // About 0.1-0.3 s of replay on this kind of host for a compute guest, and
  // a checkpoint costs a pass over RAM (docs/debugging.md has the figures).
  static constexpr uint64_t kCheckpointEvery = 100'000'000;
  MachineDebugger(Machine& machine, Options options);

  // --- The client's side (the stub's thread) ---
  // Asks the machine to stop at its next slice boundary (-S: before the
  // first; an attach), as T05 says; wait_stopped() waits for it.
  void ask_stop();
  // The stop the machine is parked in; nullopt when the run ended first.
  std::optional<debug::StopEvent> wait_stopped();
  // Lets a parked machine go on without waiting for its next stop (the
  // stdio monitor, which does not wait for one).
  void go_on();
  // The machine thread failed with an exception: the run is over.
  void abandon(std::exception_ptr failure);
  // The run has ended (the machine thread is done with the machine).
  bool finished() const;
  // Waits up to `ms` for the run to end; true once it has.
  bool wait_finished(unsigned ms);
  const std::optional<RunResult>& result() const { return result_; }
  const MachineCheckpoints& checkpoints() const { return checkpoints_; }
  // The machine thread, with `machine` built anew for a RewindRequest and
  // not run yet: the debugger follows it, and stops it at `target`.
  void rebind(Machine& machine, const ReplayTarget& target);

  // debug::DebugTarget
  unsigned vcpu_count() const override { return vcpus_; }
  std::string describe_vcpu(unsigned vcpu) const override;
  bool read_register(unsigned vcpu, x86::RegisterId id, std::span<uint8_t> out) override;
  bool write_register(unsigned vcpu, x86::RegisterId id, std::span<const uint8_t> in) override;
  size_t read_memory(unsigned vcpu, debug::AddressSpace space, uint64_t address, std::span<uint8_t> out) override;
  bool write_memory(unsigned vcpu, debug::AddressSpace space, uint64_t address, std::span<const uint8_t> in) override;
  bool insert_breakpoint(debug::BreakpointKind kind, uint64_t address, unsigned length) override;
  bool remove_breakpoint(debug::BreakpointKind kind, uint64_t address, unsigned length) override;
  bool can_reverse() const override { return options_.can_rewind; }
  debug::StopEvent resume(const debug::ResumeRequest& request, const debug::RunControl& control) override;
  std::string monitor(std::string_view line) override;
  void detach() override;
  void kill() override;

  // SnapshotShelf (on the machine thread, parked)
  std::string save_snapshot(std::string_view name) override;
  std::string load_snapshot(std::string_view name) override;
  std::string list_snapshots() override;

  // --- The machine's side (MachineDebugHooks, the machine thread) ---
  void between_slices() override;
  void before_slice(MachineCpu& cpu) override;
  void stopped(unsigned vcpu, const DebugStop& stop) override;
  bool kill_requested() const override { return kill_.load(); }
  void finished(const RunResult& result) override;

 private:
  // Runs `work` on the machine thread while it is parked (or here, once
  // the run has ended), and waits for it.
  void on_machine_thread(const std::function<void()>& work) const;
  // The machine thread: tells the client why it stopped, answers its
  // questions, and returns when it is told to go on.
  void park(debug::StopEvent event);
  // The engines' points from breakpoints_ and watches_ (machine thread).
  void apply_points();
  // Brings `cpu`'s engine to the debugger's points and step (machine thread).
  void sync_engine(MachineCpu& cpu);
  debug::StopEvent stop_event_for(unsigned vcpu, const DebugStop& stop) const;
  // A watch's physical start through `vcpu`'s paging; nullopt: not mapped,
  // or the range crosses into a page that is not the next physical one.
  std::optional<uint64_t> watch_physical(unsigned vcpu, uint64_t address, unsigned length);
  // The reverse request's target, from the stop the machine is parked in.
  ReplayTarget reverse_target(const debug::ResumeRequest& request) const;
  // During a replay: whether `vcpu`'s stop is the target (then it parks or
  // rewinds again); other stops are noted (kFindLastHit) and passed.
  void replay_stop(unsigned vcpu, const DebugStop& stop);
  // Arms the target vCPU's stop at its count once the target is near.
  void arm_replay(MachineCpu& cpu);
  // One page's worth of `len` bytes at `address`: its physical address.
  std::optional<uint64_t> physical_of(unsigned vcpu, debug::AddressSpace space, uint64_t address);

  Machine* machine_;
  // Every machine a rewind builds has as many: asked on the client's thread
  // without the mailbox, even while the machine is being built again.
  const unsigned vcpus_;
  Options options_;
  std::optional<ReplayTarget> replay_;  // a replay under way
  // The monitor's snapshots: where each stop was, and what it said.
  struct NamedPoint {
    DebugPosition position;
    debug::StopEvent event;
    uint64_t virtual_ns = 0;
  };
  std::map<std::string, NamedPoint, std::less<>> snapshots_;
  std::optional<ReplayTarget> jump_;  // snapshot load: the parked thread goes there
  MachineCheckpoints checkpoints_;
  bool replay_from_checkpoint_ = false;  // the replay under way began at a checkpoint
  std::vector<std::pair<DebugPosition, debug::StopEvent>> replay_hits_;  // kFindLastHit
  DebugPosition now_;        // the point of the stop the machine is parked in
  bool history_altered_ = false;
  bool physical_memory_ = false;  // `monitor memory physical`: gdb's addresses are guest-physical  // a register or memory write: a replay would not come back here

  // Breakpoints by linear address, with the kinds that set them (a
  // software and a hardware one may share an address).
  std::map<uint64_t, std::set<debug::BreakpointKind>> breakpoints_;
  struct Watch {
    debug::BreakpointKind kind;
    uint64_t address;
    unsigned length;
    uint64_t physical;
  };
  std::vector<Watch> watches_;
  uint64_t points_generation_ = 0;           // bumped at every change
  std::vector<uint64_t> applied_generation_;  // per vCPU: what its engine has
  std::vector<bool> step_wanted_;             // per vCPU: the last resume stepped it
  std::vector<bool> stepping_;                // per vCPU: its engine's step is on
  unsigned last_vcpu_ = 0;                    // the thread the last stop named

  // The mailbox between the two threads.
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  mutable std::deque<std::function<void()>*> work_;  // for the parked machine thread
  mutable uint64_t work_done_ = 0, work_posted_ = 0;
  std::optional<debug::ResumeRequest> go_;  // set by the client: the parked thread goes on
  std::optional<debug::StopEvent> stop_;    // set by the machine thread: it parked
  bool parked_ = false;
  std::optional<RunResult> result_;
  // Stop at the next slice boundary, and say why: T05 for -S and an attach, T02 for ^C.
  std::atomic<int> stop_asked_{0};  // 0: no; else a debug::StopEvent::Kind + 1
  std::atomic<bool> detached_{false};    // no client: never stop
  std::atomic<bool> kill_{false};
};

}  // namespace topolab
