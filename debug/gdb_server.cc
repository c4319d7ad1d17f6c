// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/gdb_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "base/errors.h"
#include "debug/gdb_session.h"

namespace topolab::debug {
namespace {

// How much one read takes from the socket: a poll during a run reads at
// most this, so a client that floods cannot hold the machine up.
constexpr size_t kReadChunk = 4096;

std::string describe_peer(const sockaddr_storage& address) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &v4.sin_addr, text.data(), text.size());
    return fmt::format("{}:{}", text.data(), ntohs(v4.sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    inet_ntop(AF_INET6, &v6.sin6_addr, text.data(), text.size());
    return fmt::format("[{}]:{}", text.data(), ntohs(v6.sin6_port));
  }
  return "an unknown address";
}

uint16_t bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
}

// A listening socket on the first address `host` resolves to that binds;
// -1 and `error` set when none does.
int listen_on(const std::string& host, uint16_t port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    error = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 4) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

GdbServer::GdbServer(std::string host, uint16_t port, Log log) : log_(std::move(log)) {
  if (!log_) log_ = [](std::string_view line) { fmt::print(stderr, "{}\n", line); };
  if (host.empty()) host = "127.0.0.1";
  std::string error;
  listen_fd_ = listen_on(host, port, error);
  if (listen_fd_ < 0) throw ConfigError(fmt::format("gdb: cannot listen on {}:{}: {}", one_line(host), port, error));
  port_ = bound_port(listen_fd_);
}

GdbServer::~GdbServer() {
  close_client();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void GdbServer::close_client() {
  if (client_fd_ >= 0) close(client_fd_);
  client_fd_ = -1;
  pending_.clear();
  reader_ = PacketReader();
  last_sent_.clear();
  no_ack_mode_ = false;
}

bool GdbServer::poll_for_client() {
  if (has_client()) return true;
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_CLOEXEC);
  if (fd < 0) return false;
  // Replies are small and each waits for the next request: no Nagle delay.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  close_client();
  client_fd_ = fd;
  return true;
}

bool GdbServer::wait_for_client(std::optional<std::chrono::milliseconds> timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout.value_or(std::chrono::milliseconds(0));
  while (!poll_for_client()) {
    int wait_ms = -1;
    if (timeout) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      wait_ms = static_cast<int>(left.count());
    }
    pollfd listener{listen_fd_, POLLIN, 0};
    if (poll(&listener, 1, wait_ms) < 0 && errno != EINTR) return false;
  }
  return true;
}

void GdbServer::refuse_waiting_clients() {
  for (;;) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_CLOEXEC);
    if (fd < 0) return;
    // The line first: whoever sees the connection close can count on it.
    log_(fmt::format("topolab: gdb: a client is already attached; refused {}", describe_peer(address)));
    close(fd);
  }
}

bool GdbServer::read_available() {
  std::array<uint8_t, kReadChunk> buffer;
  for (;;) {
    const ssize_t n = recv(client_fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n > 0) {
      std::vector<PacketEvent> events;
      reader_.feed(std::span<const uint8_t>(buffer.data(), static_cast<size_t>(n)), events);
      for (auto& e : events) pending_.push_back(std::move(e));
      return true;
    }
    if (n == 0) return false;  // orderly shutdown
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

std::optional<PacketEvent> GdbServer::next_event() {
  while (pending_.empty()) {
    std::array<pollfd, 2> fds{{{client_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}}};
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (fds[1].revents & POLLIN) refuse_waiting_clients();
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !read_available()) return std::nullopt;
  }
  PacketEvent event = std::move(pending_.front());
  pending_.pop_front();
  return event;
}

RunControl::Poll GdbServer::poll_while_running() {
  if (!has_client()) return RunControl::Poll::kClientGone;
  // One poll() for both sockets: the common case (nothing happened) costs
  // one system call.
  std::array<pollfd, 2> fds{{{client_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}}};
  if (poll(fds.data(), fds.size(), 0) <= 0) return RunControl::Poll::kNothing;
  if (fds[1].revents & POLLIN) refuse_waiting_clients();
  if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !read_available()) {
    close_client();
    return RunControl::Poll::kClientGone;
  }
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->kind == PacketEvent::Kind::kInterrupt) {
      pending_.erase(it);
      return RunControl::Poll::kInterrupt;
    }
  }
  return RunControl::Poll::kNothing;
}

bool GdbServer::send_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(client_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool GdbServer::send_packet(std::string_view payload) {
  last_sent_ = frame(payload);
  return send_raw(last_sent_);
}

ServeEnd GdbServer::serve(DebugTarget& target, const StopEvent& initial) {
  if (!has_client()) return ServeEnd::kClientGone;
  GdbSession session(target, initial);
  for (;;) {
    auto event = next_event();
    if (!event) {
      // Gone while the machine stands still: the run goes on without it.
      target.detach();
      close_client();
      return ServeEnd::kClientGone;
    }
    bool sent = true;
    switch (event->kind) {
      case PacketEvent::Kind::kAck:
      case PacketEvent::Kind::kInterrupt:  // ^C with nothing running: nothing to stop
        break;
      case PacketEvent::Kind::kNak:
        if (!no_ack_mode_ && !last_sent_.empty()) sent = send_raw(last_sent_);
        break;
      case PacketEvent::Kind::kBadChecksum:
        if (!no_ack_mode_) sent = send_raw("-");
        break;
      case PacketEvent::Kind::kOversized:
        // Received whole but too long to keep: acknowledged (a `-` would
        // make gdb send it again), and refused.
        sent = (no_ack_mode_ || send_raw("+")) && send_packet("E01");
        break;
      case PacketEvent::Kind::kPacket:
        if (auto end = answer_packet(session, target, event->payload)) return *end;
        break;
    }
    if (!sent) {
      target.detach();
      close_client();
      return ServeEnd::kClientGone;
    }
  }
}

std::optional<ServeEnd> GdbServer::answer_packet(GdbSession& session, DebugTarget& target, const std::string& payload) {
  if (!no_ack_mode_ && !send_raw("+")) {
    target.detach();
    close_client();
    return ServeEnd::kClientGone;
  }
  SessionAction action = session.handle(payload);
  switch (action.kind) {
    case SessionAction::Kind::kReply:
      if (!send_packet(action.reply)) {
        target.detach();
        close_client();
        return ServeEnd::kClientGone;
      }
      // "Packet Acknowledgment": acks stop after the OK to QStartNoAckMode.
      no_ack_mode_ = session.no_ack_mode();
      return std::nullopt;
    case SessionAction::Kind::kDetach:
      send_packet(action.reply);  // the target is detached either way
      close_client();
      return ServeEnd::kDetached;
    case SessionAction::Kind::kKill:
      close_client();
      return ServeEnd::kKilled;
    case SessionAction::Kind::kResume:
      return run(session, target, action.resume);
  }
  return std::nullopt;
}

std::optional<ServeEnd> GdbServer::run(GdbSession& session, DebugTarget& target, const ResumeRequest& request) {
  const RunControl control{[this] { return poll_while_running(); }};
  const StopEvent stop = target.resume(request, control);
  if (stop.kind == StopEvent::Kind::kExited) {
    if (has_client()) send_packet(session.stopped(stop));
    close_client();
    return ServeEnd::kExited;
  }
  // Gone during the run: the target heard it from the poll.
  if (!has_client()) return ServeEnd::kClientGone;
  if (!send_packet(session.stopped(stop))) {
    target.detach();
    close_client();
    return ServeEnd::kClientGone;
  }
  return std::nullopt;
}

}  // namespace topolab::debug
