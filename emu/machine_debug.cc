// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/machine_debug.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace topolab {

namespace {

using debug::AddressSpace;
using debug::BreakpointKind;
using debug::StopEvent;

constexpr uint64_t kPageSize = 4096;
// How often a running machine's client is polled for ^C or a drop.
constexpr auto kPollInterval = std::chrono::milliseconds(20);

bool is_watch(BreakpointKind kind) { return kind != BreakpointKind::kSoftware && kind != BreakpointKind::kHardware; }

}  // namespace

MachineDebugger::MachineDebugger(Machine& machine, Options options)
    : machine_(&machine),
      vcpus_(machine.vcpu_count()),
      options_(std::move(options)),
      checkpoints_(options_.checkpoint_every),
      applied_generation_(machine.vcpu_count(), 0),
      step_wanted_(machine.vcpu_count(), false),
      stepping_(machine.vcpu_count(), false) {}

// ---------------------------------------------------------------------------
// The mailbox.

void MachineDebugger::on_machine_thread(const std::function<void()>& work) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return parked_ || result_; });
  if (!parked_) {  // the run has ended: the machine thread no longer touches the machine
    lock.unlock();
    work();
    return;
  }
  std::function<void()> copy = work;
  work_.push_back(&copy);
  const uint64_t ticket = ++work_posted_;
  changed_.notify_all();
  changed_.wait(lock, [&] { return work_done_ >= ticket; });
}

void MachineDebugger::park(StopEvent event) {
  if (detached_) return;
  std::unique_lock lock(mutex_);
  const StopEvent parked_event = event;
  last_vcpu_ = event.vcpu;
  const MachineCpu& stopped_cpu = machine_->cpu(event.vcpu);
  now_ = {event.vcpu, stopped_cpu.instructions()};
  stop_ = std::move(event);
  parked_ = true;
  go_.reset();
  changed_.notify_all();
  for (;;) {
    changed_.wait(lock, [&] { return !work_.empty() || go_ || jump_ || detached_ || kill_; });
    while (!work_.empty() && !jump_) {  // after a snapshot load, the rest is answered there
      std::function<void()>* work = work_.front();
      work_.pop_front();
      lock.unlock();
      (*work)();
      lock.lock();
      ++work_done_;
      changed_.notify_all();
    }
    if (go_ || jump_ || detached_ || kill_) break;
  }
  if (jump_ && !detached_ && !kill_) {
    parked_ = false;
    throw RewindRequest{*std::exchange(jump_, std::nullopt)};
  }
  const std::optional<debug::ResumeRequest> go = std::exchange(go_, std::nullopt);
  if (go && go->direction == debug::ResumeRequest::Direction::kReverse && !detached_ && !kill_) {
    if (!history_altered_) {
      parked_ = false;
      replay_hits_.clear();
      throw RewindRequest{reverse_target(*go)};
    }
    // A replay would run the history without the write: stay here.
    fmt::print(stderr, "topolab: gdb: no reverse execution after a write to registers or memory: the history "
                       "replayed would not be the one that led here\n");
    changed_.notify_all();
    lock.unlock();
    return park(parked_event);
  }
  parked_ = false;
  lock.unlock();
  for (unsigned i = 0; i < step_wanted_.size(); ++i)
    step_wanted_[i] = go && !detached_ && go->step_vcpu == i;
  for (unsigned i = 0; i < machine_->vcpu_count(); ++i) sync_engine(machine_->cpu(i));
}

// ---------------------------------------------------------------------------
// The machine's side.

void MachineDebugger::between_slices() {
  if (options_.can_rewind && options_.checkpoint_every && !history_altered_)
    checkpoints_.between_slices(*machine_, options_.output_position ? options_.output_position() : 0);
  if (replay_ && replay_->mode == ReplayTarget::Mode::kBegin) {
    StopEvent begin = replay_->event;
    replay_.reset();
    park(std::move(begin));
    return;
  }
  const int asked = stop_asked_.exchange(0);
  if (asked == 0 || detached_) return;
  StopEvent event;
  event.kind = static_cast<StopEvent::Kind>(asked - 1);
  event.vcpu = last_vcpu_;
  park(std::move(event));
}

void MachineDebugger::before_slice(MachineCpu& cpu) {
  sync_engine(cpu);
  if (replay_) arm_replay(cpu);
}

void MachineDebugger::sync_engine(MachineCpu& cpu) {
  Vcpu* vcpu = cpu.vcpu();
  if (!vcpu) return;  // made at its SIPI, and synced before its first slice
  const unsigned i = cpu.index();
  if (detached_ && (!breakpoints_.empty() || !watches_.empty())) {
    breakpoints_.clear();
    watches_.clear();
    ++points_generation_;
  }
  if (applied_generation_[i] != points_generation_) {
    DebugPoints points;
    for (const auto& [address, kinds] : breakpoints_) points.breakpoints.insert(address);
    for (const Watch& w : watches_)
      points.watches.push_back({.address = w.address, .physical = w.physical, .length = w.length,
                                .reads = w.kind != BreakpointKind::kWriteWatch,
                                .writes = w.kind != BreakpointKind::kReadWatch});
    vcpu->set_debug_points(points);
    applied_generation_[i] = points_generation_;
  }
  const bool step = step_wanted_[i] && !detached_;
  if (stepping_[i] != step) {
    vcpu->set_debug_step(step);
    stepping_[i] = step;
  }
}

void MachineDebugger::apply_points() {
  ++points_generation_;
  for (unsigned i = 0; i < machine_->vcpu_count(); ++i) sync_engine(machine_->cpu(i));
}

StopEvent MachineDebugger::stop_event_for(unsigned vcpu, const DebugStop& stop) const {
  StopEvent event;
  event.vcpu = vcpu;
  switch (stop.kind) {
    case DebugStop::Kind::kStep: event.kind = StopEvent::Kind::kStepped; break;
    case DebugStop::Kind::kBreakpoint: {
      Vcpu* engine = machine_->cpu(vcpu).vcpu();
      const auto it = engine ? breakpoints_.find(engine->linear_rip()) : breakpoints_.end();
      const bool software = it == breakpoints_.end() || it->second.contains(BreakpointKind::kSoftware);
      event.kind = software ? StopEvent::Kind::kSoftwareBreak : StopEvent::Kind::kHardwareBreak;
      break;
    }
    case DebugStop::Kind::kWatch: {
      event.kind = StopEvent::Kind::kWatch;
      event.watch_address = stop.address;
      event.watch_kind = stop.write ? BreakpointKind::kWriteWatch : BreakpointKind::kReadWatch;
      // The kind gdb set at that address: an access watch reports awatch.
      for (const Watch& w : watches_)
        if (w.address == stop.address && (w.kind == event.watch_kind || w.kind == BreakpointKind::kAccessWatch)) {
          event.watch_kind = w.kind;
          break;
        }
      break;
    }
  }
  return event;
}

void MachineDebugger::stopped(unsigned vcpu, const DebugStop& stop) {
  if (detached_) return;
  if (replay_) return replay_stop(vcpu, stop);
  park(stop_event_for(vcpu, stop));
  // gdb's `k` while a vCPU stood in its slice: the slice ends at its next
  // block boundary, and the loop ends the run between slices.
  if (kill_) machine_->cpu(vcpu).vcpu()->request_stop();
}

void MachineDebugger::finished(const RunResult& result) {
  std::lock_guard lock(mutex_);
  result_ = result;
  changed_.notify_all();
}

// ---------------------------------------------------------------------------
// Reverse execution: replays.

ReplayTarget MachineDebugger::reverse_target(const debug::ResumeRequest& request) const {
  ReplayTarget target;
  target.event.kind = StopEvent::Kind::kHistoryBegin;
  if (!request.step_vcpu) {  // bc
    target.mode = ReplayTarget::Mode::kFindLastHit;
    target.position = now_;
    return target;
  }
  const unsigned vcpu = *request.step_vcpu;  // bs
  const uint64_t count = machine_->cpu(vcpu).instructions();
  target.event.vcpu = vcpu;
  if (count == 0) return target;  // nothing of it before: the start
  target.mode = ReplayTarget::Mode::kStopAt;
  target.position = {vcpu, count - 1};
  target.event.kind = StopEvent::Kind::kStepped;
  target.event.vcpu = vcpu;
  return target;
}

void MachineDebugger::rebind(Machine& machine, const ReplayTarget& target) {
  machine_ = &machine;
  std::fill(applied_generation_.begin(), applied_generation_.end(), 0);
  std::fill(stepping_.begin(), stepping_.end(), false);
  std::fill(step_wanted_.begin(), step_wanted_.end(), false);
  ++points_generation_;  // the new engines get every point
  replay_ = target;
  if (target.mode == ReplayTarget::Mode::kFindLastHit) replay_hits_.clear();
  machine.attach_debugger(this);
  replay_from_checkpoint_ = false;
  if (target.mode == ReplayTarget::Mode::kBegin || target.from_start) return;
  if (const std::optional<size_t> i = checkpoints_.latest_before(target.position.vcpu, target.position.instructions)) {
    checkpoints_.restore(machine, *i);
    if (options_.seek_output) options_.seek_output(checkpoints_.at(*i).output_position);
    replay_from_checkpoint_ = true;
  }
}

// The target's vCPU stops at its count once a slice could reach it: its
// hook costs a call per instruction, so not before (a slice runs at most a
// quantum, and its first block may overrun it).
void MachineDebugger::arm_replay(MachineCpu& cpu) {
  if (replay_->mode == ReplayTarget::Mode::kBegin || cpu.index() != replay_->position.vcpu || !cpu.vcpu()) return;
  const uint64_t window = 2 * machine_->config().quantum + 4096;
  const uint64_t count = cpu.instructions(), target = replay_->position.instructions;
  cpu.vcpu()->set_debug_stop_at(target >= count && target - count <= window ? std::optional(target) : std::nullopt);
}

void MachineDebugger::replay_stop(unsigned vcpu, const DebugStop& stop) {
  MachineCpu& cpu = machine_->cpu(vcpu);
  const DebugPosition here{vcpu, cpu.instructions()};
  if (here != replay_->position) {
    if (replay_->mode == ReplayTarget::Mode::kFindLastHit && stop.kind != DebugStop::Kind::kStep)
      replay_hits_.emplace_back(here, stop_event_for(vcpu, stop));
    return;
  }
  cpu.vcpu()->set_debug_stop_at(std::nullopt);
  if (replay_->mode == ReplayTarget::Mode::kFindLastHit) {
    if (replay_hits_.empty() && replay_from_checkpoint_) {
      // No hit since the checkpoint: search the whole history.
      ReplayTarget whole = *replay_;
      whole.from_start = true;
      replay_.reset();
      throw RewindRequest{whole};
    }
    // Now: the last hit before it is where reverse-continue goes.
    ReplayTarget next;
    next.event.kind = StopEvent::Kind::kHistoryBegin;
    if (!replay_hits_.empty()) {
      next.mode = ReplayTarget::Mode::kStopAt;
      next.position = replay_hits_.back().first;
      next.event = replay_hits_.back().second;
    }
    replay_.reset();
    throw RewindRequest{next};
  }
  StopEvent event = replay_->event;
  replay_.reset();
  park(std::move(event));
}

// ---------------------------------------------------------------------------
// The client's side.

void MachineDebugger::ask_stop() {
  detached_ = false;
  stop_asked_ = static_cast<int>(StopEvent::Kind::kStarted) + 1;
}

void MachineDebugger::go_on() {
  std::lock_guard lock(mutex_);
  if (!parked_) return;
  stop_.reset();
  go_ = debug::ResumeRequest{};
  changed_.notify_all();
}

void MachineDebugger::abandon(std::exception_ptr) {
  RunResult gone;
  gone.outcome = RunResult::Outcome::Crashed;
  gone.diagnosis = "the machine failed";
  finished(gone);
}

std::optional<StopEvent> MachineDebugger::wait_stopped() {
  std::unique_lock lock(mutex_);
  // A machine just let go (go_on) is still parked until its thread wakes:
  // the stop waited for is a new one.
  changed_.wait(lock, [&] { return (parked_ && stop_) || result_; });
  if (parked_ && stop_) return stop_;
  return std::nullopt;
}

bool MachineDebugger::finished() const {
  std::lock_guard lock(mutex_);
  return result_.has_value();
}

bool MachineDebugger::wait_finished(unsigned ms) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return result_.has_value(); });
}

StopEvent MachineDebugger::resume(const debug::ResumeRequest& request, const debug::RunControl& control) {
  std::unique_lock lock(mutex_);
  if (request.direction == debug::ResumeRequest::Direction::kReverse && !options_.can_rewind)
    return stop_.value_or(StopEvent{});  // the stub does not ask without ReverseStep+
  if (parked_) {
    stop_.reset();
    go_ = request;
    changed_.notify_all();
  }
  for (;;) {
    const bool done = changed_.wait_for(lock, kPollInterval, [&] { return (parked_ && stop_) || result_; });
    if (done) break;
    if (!control.poll) continue;
    lock.unlock();
    const debug::RunControl::Poll poll = control.poll();
    lock.lock();
    if (poll == debug::RunControl::Poll::kInterrupt) {
      stop_asked_ = static_cast<int>(StopEvent::Kind::kInterrupted) + 1;
    } else if (poll == debug::RunControl::Poll::kClientGone) {
      detached_ = true;  // the machine thread drops every point at its next slice
      changed_.notify_all();
      StopEvent gone;
      gone.kind = StopEvent::Kind::kExited;
      gone.detail = "the client went away";
      return gone;
    }
  }
  if (parked_ && stop_) return *stop_;
  StopEvent exited;
  exited.kind = StopEvent::Kind::kExited;
  exited.detail = result_->diagnosis;
  exited.exit_code = options_.exit_status ? options_.exit_status(*result_) : 0;
  return exited;
}

void MachineDebugger::detach() {
  on_machine_thread([&] {
    breakpoints_.clear();
    watches_.clear();
    std::fill(step_wanted_.begin(), step_wanted_.end(), false);
    if (!result_) apply_points();
  });
  std::lock_guard lock(mutex_);
  detached_ = true;
  changed_.notify_all();
}

void MachineDebugger::kill() {
  std::lock_guard lock(mutex_);
  kill_ = true;
  changed_.notify_all();
}

std::string MachineDebugger::describe_vcpu(unsigned vcpu) const {
  std::string text;
  on_machine_thread([&] {
    const Topology& topology = machine_->topology();
    const CpuCoords c = topology.coords_of(vcpu);
    const MachineCpu& cpu = machine_->cpu(vcpu);
    text = fmt::format("CPU {} APIC {:#x} pkg {} die {} core {} thread {}, {}, {:.1f} ms", vcpu,
                       topology.apic_id(vcpu), c.package, c.die, c.core, c.thread, cpu.describe_state(),
                       static_cast<double>(cpu.now()) / 1e6);
  });
  return text;
}

bool MachineDebugger::read_register(unsigned vcpu, x86::RegisterId id, std::span<uint8_t> out) {
  bool ok = false;
  on_machine_thread([&] {
    if (Vcpu* engine = machine_->cpu(vcpu).vcpu()) ok = engine->read_register(id, out);
  });
  return ok;
}

bool MachineDebugger::write_register(unsigned vcpu, x86::RegisterId id, std::span<const uint8_t> in) {
  bool ok = false;
  on_machine_thread([&] {
    if (Vcpu* engine = machine_->cpu(vcpu).vcpu()) ok = engine->write_register(id, in);
    history_altered_ |= ok;
  });
  return ok;
}

// A vCPU not started yet is in real mode with paging off: its linear
// addresses are physical.
std::optional<uint64_t> MachineDebugger::physical_of(unsigned vcpu, AddressSpace space, uint64_t address) {
  if (space == AddressSpace::kPhysical || physical_memory_) return address;
  Vcpu* engine = machine_->cpu(vcpu).vcpu();
  if (!engine) return address;
  return engine->translate_linear(address);
}

size_t MachineDebugger::read_memory(unsigned vcpu, AddressSpace space, uint64_t address, std::span<uint8_t> out) {
  size_t done = 0;
  on_machine_thread([&] {
    GuestRam& ram = machine_->ram();
    while (done < out.size()) {
      const uint64_t at = address + done;
      const size_t chunk = std::min<uint64_t>(out.size() - done, kPageSize - at % kPageSize);
      const std::optional<uint64_t> physical = physical_of(vcpu, space, at);
      if (!physical || !ram.is_ram(*physical, chunk)) break;
      std::memcpy(out.data() + done, ram.bytes(*physical, chunk).data(), chunk);
      done += chunk;
    }
  });
  return done;
}

// All or nothing: every page is found first. The engines drop what they
// translated, since the bytes may be code.
bool MachineDebugger::write_memory(unsigned vcpu, AddressSpace space, uint64_t address, std::span<const uint8_t> in) {
  bool ok = true;
  on_machine_thread([&] {
    GuestRam& ram = machine_->ram();
    std::vector<std::pair<uint64_t, size_t>> pieces;
    for (size_t done = 0; done < in.size();) {
      const uint64_t at = address + done;
      const size_t chunk = std::min<uint64_t>(in.size() - done, kPageSize - at % kPageSize);
      const std::optional<uint64_t> physical = physical_of(vcpu, space, at);
      if (!physical || !ram.is_ram(*physical, chunk)) {
        ok = false;
        return;
      }
      pieces.emplace_back(*physical, chunk);
      done += chunk;
    }
    size_t from = 0;
    for (const auto& [physical, chunk] : pieces) {
      std::memcpy(ram.bytes(physical, chunk).data(), in.data() + from, chunk);
      from += chunk;
    }
    for (unsigned i = 0; i < machine_->vcpu_count(); ++i)
      if (Vcpu* engine = machine_->cpu(i).vcpu()) engine->flush_translations();
    history_altered_ = true;
  });
  return ok;
}

std::optional<uint64_t> MachineDebugger::watch_physical(unsigned vcpu, uint64_t address, unsigned length) {
  const std::optional<uint64_t> first = physical_of(vcpu, AddressSpace::kVirtual, address);
  if (!first || length == 0) return std::nullopt;
  const uint64_t last_byte = address + length - 1;
  if (last_byte / kPageSize != address / kPageSize) {
    const std::optional<uint64_t> last = physical_of(vcpu, AddressSpace::kVirtual, last_byte);
    if (!last || *last != *first + length - 1) return std::nullopt;
  }
  return first;
}

bool MachineDebugger::insert_breakpoint(BreakpointKind kind, uint64_t address, unsigned length) {
  bool ok = false;
  on_machine_thread([&] {
    if (!is_watch(kind)) {
      breakpoints_[address].insert(kind);
      ok = true;
    } else {
      const std::optional<uint64_t> physical = watch_physical(last_vcpu_, address, length);
      if (!physical) return;
      watches_.push_back({kind, address, length, *physical});
      ok = true;
    }
    apply_points();
  });
  return ok;
}

bool MachineDebugger::remove_breakpoint(BreakpointKind kind, uint64_t address, unsigned length) {
  bool ok = false;
  on_machine_thread([&] {
    if (!is_watch(kind)) {
      const auto it = breakpoints_.find(address);
      if (it == breakpoints_.end() || !it->second.erase(kind)) return;
      if (it->second.empty()) breakpoints_.erase(it);
    } else {
      const auto it = std::find_if(watches_.begin(), watches_.end(), [&](const Watch& w) {
        return w.kind == kind && w.address == address && w.length == length;
      });
      if (it == watches_.end()) return;
      watches_.erase(it);
    }
    ok = true;
    apply_points();
  });
  return ok;
}

// `memory physical|virtual` is the debugger's own command, beside the
// monitor's: gdb's addresses become guest-physical (as QEMU's
// Qqemu.PhyMemMode:1, which the stub also takes) or the selected vCPU's
// again.
std::string MachineDebugger::monitor(std::string_view line) {
  std::string text;
  if (line == "memory physical" || line == "memory virtual") {
    on_machine_thread([&] { physical_memory_ = line == "memory physical"; });
    return line == "memory physical" ? "gdb's addresses are guest-physical now\n"
                                     : "gdb's addresses are the selected vCPU's virtual addresses now\n";
  }
  bool jumped = false;
  on_machine_thread([&] {
    text = options_.monitor ? options_.monitor(*machine_, *this, line)
                            : fmt::format("topolab has no monitor here: {}\n", line);
    std::lock_guard lock(mutex_);
    jumped = jump_.has_value();
  });
  if (jumped) {
    // A snapshot load: the answer waits for the machine to stand at the
    // snapshot, so that what gdb asks next is answered there.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return (parked_ && stop_) || result_; });
  }
  return text;
}

// ---------------------------------------------------------------------------
// The monitor's snapshots: named points of history.

std::string MachineDebugger::save_snapshot(std::string_view name) {
  if (!options_.can_rewind) return "snapshot save: snapshots go with reverse execution: run with --gdb\n";
  if (result_) return "snapshot save: the run has ended\n";
  if (history_altered_)
    return "snapshot save: not after a write to registers or memory (the history replayed would not come here)\n";
  const MachineCpu& cpu = machine_->cpu(now_.vcpu);
  snapshots_[std::string(name)] = NamedPoint{now_, stop_.value_or(StopEvent{}), cpu.now()};
  return fmt::format("snapshot {} saved: cpu {} at instruction {}, {} ns\n", name, now_.vcpu, now_.instructions,
                     cpu.now());
}

std::string MachineDebugger::load_snapshot(std::string_view name) {
  if (!options_.can_rewind) return "snapshot load: snapshots go with reverse execution: run with --gdb\n";
  const auto it = snapshots_.find(name);
  if (it == snapshots_.end()) return fmt::format("snapshot load: no snapshot named {}\n", name);
  if (result_) return "snapshot load: the run has ended\n";
  if (history_altered_)
    return "snapshot load: not after a write to registers or memory (the history replayed would not be this run's)\n";
  const NamedPoint& point = it->second;
  if (point.position != now_) {
    ReplayTarget target;
    target.mode = ReplayTarget::Mode::kStopAt;
    target.position = point.position;
    target.event = point.event;
    std::lock_guard lock(mutex_);
    jump_ = target;
    stop_.reset();
  }
  return fmt::format("snapshot {} loaded: cpu {} at instruction {}, {} ns (gdb: flushregs)\n", name,
                     point.position.vcpu, point.position.instructions, point.virtual_ns);
}

std::string MachineDebugger::list_snapshots() {
  if (snapshots_.empty()) return "no snapshots\n";
  std::string out = "name             cpu  instruction      virtual ns\n";
  for (const auto& [name, point] : snapshots_)
    out += fmt::format("{:<16} {:<4} {:<16} {}\n", name, point.position.vcpu, point.position.instructions,
                       point.virtual_ns);
  return out;
}

}  // namespace topolab
