// SPDX-License-Identifier: GPL-2.0-or-later
// The server over real loopback sockets (port 0), with the fake target.
#include "debug/gdb_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "base/errors.h"
#include "debug/fake_debug_target.h"

namespace topolab::debug {
namespace {

using namespace std::chrono_literals;
using EventKind = PacketEvent::Kind;

// A gdb stand-in: raw bytes out, the stub's events in (through the same
// reader), every read bounded by a 5 s timeout so a broken stub fails the
// test instead of hanging it.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    const int one = 1;  // as gdb does: no Nagle delay between `+` and the next packet
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Client() { close_now(); }
  bool connected() const { return connected_; }
  void close_now() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  void send_raw(std::string_view bytes) { ASSERT_EQ(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size())); }
  void send_packet(std::string_view payload) { send_raw(frame(payload)); }
  // The next event, or nullopt at end of stream or timeout.
  std::optional<PacketEvent> next() {
    while (events_.empty()) {
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return std::nullopt;
      std::vector<PacketEvent> got;
      reader_.feed(std::string_view(buffer, static_cast<size_t>(n)), got);
      events_.insert(events_.end(), got.begin(), got.end());
    }
    PacketEvent e = events_.front();
    events_.pop_front();
    return e;
  }
  // Sends a packet, expects `+` then a reply, acks it; returns the reply.
  std::string ask(std::string_view payload, bool acks = true) {
    send_packet(payload);
    if (acks) {
      auto ack = next();
      if (!ack || ack->kind != EventKind::kAck) return "<no ack>";
    }
    auto reply = next();
    if (!reply || reply->kind != EventKind::kPacket) return "<no reply>";
    if (acks) send_raw("+");
    return reply->payload;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  PacketReader reader_;
  std::deque<PacketEvent> events_;
};

class GdbServerTest : public ::testing::Test {
 protected:
  // The server serving in a thread, as the machine would.
  void start_serving(StopEvent initial = stop_event(StopEvent::Kind::kStarted, 0)) {
    ASSERT_TRUE(server.wait_for_client(5000ms));
    served = std::async(std::launch::async, [this, initial] { return server.serve(target, initial); });
  }
  // Serves `gdb`, whose `c` starts a run of the fake long enough to poll
  // the client 5,000 times, a millisecond apart.
  void serve_a_long_run(Client& gdb) {
    target.polls_per_resume = 5000;
    target.poll_pause = [] { std::this_thread::sleep_for(1ms); };
    start_serving();
    gdb.send_packet("c");
    EXPECT_EQ(gdb.next()->kind, EventKind::kAck);
  }
  ServeEnd finish() {
    EXPECT_EQ(served.wait_for(5s), std::future_status::ready);
    return served.get();
  }
  std::vector<std::string> log_lines() {
    std::lock_guard lock(log_mutex);
    return lines;
  }

  std::mutex log_mutex;
  std::vector<std::string> lines;
  FakeDebugTarget target{2};
  GdbServer server{"127.0.0.1", 0, [this](std::string_view line) {
                     std::lock_guard lock(log_mutex);
                     lines.emplace_back(line);
                   }};
  std::future<ServeEnd> served;
};

TEST_F(GdbServerTest, PortZeroPicksOne) { EXPECT_NE(server.port(), 0); }

TEST_F(GdbServerTest, APortInUseIsAConfigError) {
  EXPECT_THROW(GdbServer("127.0.0.1", server.port()), ConfigError);
  EXPECT_THROW(GdbServer("no.such.host.invalid", 0), ConfigError);
}

TEST_F(GdbServerTest, PollForClientNeverBlocks) {
  EXPECT_FALSE(server.poll_for_client());
  EXPECT_FALSE(server.wait_for_client(10ms));
  EXPECT_EQ(server.serve(target, stop_event(StopEvent::Kind::kStarted)), ServeEnd::kClientGone);
  EXPECT_TRUE(target.calls.empty());
  Client gdb(server.port());
  ASSERT_TRUE(gdb.connected());
  bool attached = false;
  for (int i = 0; i < 500 && !attached; ++i) {
    attached = server.poll_for_client();
    if (!attached) std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(attached);
  EXPECT_TRUE(server.has_client());
}

TEST_F(GdbServerTest, HandshakeNoAckModeAndDetach) {
  Client gdb(server.port());
  start_serving();
  EXPECT_EQ(gdb.ask("qSupported:swbreak+"),
            "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+;vContSupported+;swbreak+;hwbreak+");
  EXPECT_EQ(gdb.ask("QStartNoAckMode"), "OK");
  EXPECT_EQ(gdb.ask("?", false), "T05thread:1;");
  EXPECT_EQ(gdb.ask("qC", false), "QC1");
  EXPECT_EQ(gdb.ask("D", false), "OK");
  EXPECT_EQ(finish(), ServeEnd::kDetached);
  EXPECT_EQ(target.calls, std::vector<std::string>{"detach"});
  EXPECT_FALSE(gdb.next());  // the stub closed the connection
  EXPECT_FALSE(server.has_client());
}

TEST_F(GdbServerTest, BadChecksumIsNakedAndNakResends) {
  Client gdb(server.port());
  start_serving();
  gdb.send_raw("$?#00");
  auto e = gdb.next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, EventKind::kNak);
  gdb.send_packet("qC");
  EXPECT_EQ(gdb.next()->kind, EventKind::kAck);
  EXPECT_EQ(gdb.next()->payload, "QC1");
  gdb.send_raw("-");  // garbled on the way: send it again
  EXPECT_EQ(gdb.next()->payload, "QC1");
  gdb.send_raw("+");
  EXPECT_EQ(gdb.ask("k"), "<no reply>");
  EXPECT_EQ(finish(), ServeEnd::kKilled);
  EXPECT_EQ(target.calls, std::vector<std::string>{"kill"});
}

TEST_F(GdbServerTest, OversizedPacketIsAckedAndRefused) {
  Client gdb(server.port());
  start_serving();
  EXPECT_EQ(gdb.ask("X0," + std::string(kMaxPacketPayload, 'a')), "E01");
  EXPECT_EQ(gdb.ask("qC"), "QC1");
  gdb.close_now();
  EXPECT_EQ(finish(), ServeEnd::kClientGone);
}

TEST_F(GdbServerTest, StepThenRunToExit) {
  target.stops = {stop_event(StopEvent::Kind::kSoftwareBreak, 1),
                  exit_event(7, "guest exited 7")};
  Client gdb(server.port());
  start_serving();
  EXPECT_EQ(gdb.ask("vCont;s:2"), "T05thread:2;swbreak:;");
  ASSERT_EQ(target.resumes.size(), 1u);
  EXPECT_EQ(target.resumes[0].step_vcpu, 1u);
  EXPECT_FALSE(target.resumes[0].others_run);
  EXPECT_EQ(gdb.ask("g").substr(16 * 16, 16), "0110000000000000");  // the stopped thread's rip
  EXPECT_EQ(gdb.ask("c"), "W07");
  EXPECT_EQ(finish(), ServeEnd::kExited);
  EXPECT_FALSE(gdb.next());
}

TEST_F(GdbServerTest, InterruptStopsTheRun) {
  Client gdb(server.port());
  serve_a_long_run(gdb);
  std::this_thread::sleep_for(20ms);
  gdb.send_raw("\x03");
  auto stop = gdb.next();
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->payload, "T02thread:1;");
  gdb.send_raw("+");
  EXPECT_EQ(gdb.ask("D"), "OK");
  EXPECT_EQ(finish(), ServeEnd::kDetached);
}

TEST_F(GdbServerTest, ClientDroppingMidRunLetsTheRunGoOn) {
  Client gdb(server.port());
  serve_a_long_run(gdb);
  std::this_thread::sleep_for(20ms);
  gdb.close_now();
  // The fake runs to the end once its poll says the client is gone.
  EXPECT_EQ(finish(), ServeEnd::kExited);
  EXPECT_EQ(target.calls, std::vector<std::string>{"client gone"});
}

TEST_F(GdbServerTest, ClientDroppingWhileStoppedDetaches) {
  Client gdb(server.port());
  start_serving();
  EXPECT_EQ(gdb.ask("qC"), "QC1");
  gdb.close_now();
  EXPECT_EQ(finish(), ServeEnd::kClientGone);
  EXPECT_EQ(target.calls, std::vector<std::string>{"detach"});
  // A later client can attach.
  Client again(server.port());
  EXPECT_TRUE(server.wait_for_client(5000ms));
}

TEST_F(GdbServerTest, SecondClientIsRefusedWhileStopped) {
  Client gdb(server.port());
  start_serving();
  EXPECT_EQ(gdb.ask("qC"), "QC1");
  Client intruder(server.port());
  ASSERT_TRUE(intruder.connected());
  EXPECT_FALSE(intruder.next());  // closed at once
  EXPECT_EQ(gdb.ask("qC"), "QC1");  // the first goes on
  const auto log = log_lines();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_TRUE(log[0].starts_with("topolab: gdb: a client is already attached; refused 127.0.0.1:")) << log[0];
  EXPECT_EQ(gdb.ask("D"), "OK");
  EXPECT_EQ(finish(), ServeEnd::kDetached);
}

TEST_F(GdbServerTest, SecondClientIsRefusedWhileRunning) {
  Client gdb(server.port());
  serve_a_long_run(gdb);
  {
    Client intruder(server.port());
    EXPECT_FALSE(intruder.next());  // refused by a poll during the run
  }
  EXPECT_EQ(log_lines().size(), 1u);
  gdb.send_raw("\x03");
  auto stop = gdb.next();
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->payload, "T02thread:1;");  // the run was still going
  gdb.send_raw("+");
  EXPECT_EQ(gdb.ask("D"), "OK");
  EXPECT_EQ(finish(), ServeEnd::kDetached);
}

TEST_F(GdbServerTest, MonitorThroughQRcmd) {
  target.monitor_output = "hello\n";
  Client gdb(server.port());
  start_serving();
  EXPECT_EQ(gdb.ask("qRcmd," + hex_encode(std::string_view("info cpus"))), hex_encode(std::string_view("hello\n")));
  EXPECT_EQ(gdb.ask("D"), "OK");
  EXPECT_EQ(finish(), ServeEnd::kDetached);
}

}  // namespace
}  // namespace topolab::debug
