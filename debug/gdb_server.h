// SPDX-License-Identifier: GPL-2.0-or-later
// The gdb stub's TCP side (POSIX sockets): listens on HOST:PORT, takes one
// client at a time, and serves it with a GdbSession over the machine's
// DebugTarget. A second client while one is attached is accepted and closed
// at once, with one line on the log.
//
// How topolab uses it (cli/gdb_run.cc): the machine runs on a thread of
// its own (emu/machine_debug.h) and this one serves:
//   GdbServer server(host, port);        // throws ConfigError if it cannot listen
//   server.wait_for_client();            // -S: before the first instruction
//   ServeEnd end = server.serve(target, stop);  // the stop the machine parked in
//   // without -S, between serves: poll_for_client(), then stop the machine
// serve() returns when the session ends (ServeEnd says how); the machine
// then goes on (detached: no breakpoints, never stopping again for this
// client) or ends (killed, exited). A later client can attach through
// poll_for_client() again.
//
// While serve() runs target.resume(), the RunControl's poll reads the
// socket without blocking: ^C stops the run (kInterrupt), a dropped
// connection lets it go on without a debugger (kClientGone), a second
// client is refused. Packets follow the ack rules of "Packet
// Acknowledgment" until QStartNoAckMode.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "debug/debug_target.h"
#include "debug/rsp_packet.h"

namespace topolab::debug {

class GdbSession;

enum class ServeEnd : uint8_t {
  kDetached,    // D: the target was detached, the run goes on
  kKilled,      // k: the target was killed
  kExited,      // the run ended (W was sent)
  kClientGone,  // the connection dropped; the target was told (detach() when stopped,
                // RunControl::Poll::kClientGone while running)
};

class GdbServer {
 public:
  // Where the refusal of a second client, and other news, goes: one line
  // each, without a newline. The default writes to stderr.
  using Log = std::function<void(std::string_view line)>;

  // Listens on `host` (a name or an address; empty: 127.0.0.1) and `port`
  // (0: the system picks one; port() says which). Throws ConfigError
  // naming the address when it cannot.
  GdbServer(std::string host, uint16_t port, Log log = {});
  ~GdbServer();
  GdbServer(const GdbServer&) = delete;
  GdbServer& operator=(const GdbServer&) = delete;

  uint16_t port() const { return port_; }
  bool has_client() const { return client_fd_ >= 0; }

  // Blocks until a client connects (or `timeout` passes); true when one is
  // attached.
  bool wait_for_client(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Never blocks: accepts a client that is waiting. True when a client is
  // attached (the machine should stop and serve()).
  bool poll_for_client();

  // Serves the attached client until the session ends. `initial` is the
  // stop the machine is in (the `?` reply); the machine stands still
  // except inside target.resume(). Without a client: kClientGone at once.
  // Waits for packets without a timeout (a signal does not end the wait).
  ServeEnd serve(DebugTarget& target, const StopEvent& initial);

 private:
  // The next event from the client, blocking; nullopt when it has gone.
  std::optional<PacketEvent> next_event();
  // Reads what is there without blocking; false when the client has gone.
  bool read_available();
  RunControl::Poll poll_while_running();
  void refuse_waiting_clients();
  bool send_packet(std::string_view payload);
  bool send_raw(std::string_view bytes);
  std::optional<ServeEnd> answer_packet(GdbSession& session, DebugTarget& target, const std::string& payload);
  std::optional<ServeEnd> run(GdbSession& session, DebugTarget& target, const ResumeRequest& request);
  void close_client();

  Log log_;
  int listen_fd_ = -1;
  int client_fd_ = -1;
  uint16_t port_ = 0;
  PacketReader reader_;
  std::deque<PacketEvent> pending_;
  std::string last_sent_;  // resent on `-`
  bool no_ack_mode_ = false;
};

}  // namespace topolab::debug
