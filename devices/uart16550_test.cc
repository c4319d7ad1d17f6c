// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/uart16550.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

TEST(Uart16550, TransmitterIsAlwaysReady) {
  std::string out;
  Uart16550 uart([&](uint8_t b) { out.push_back(static_cast<char>(b)); });
  EXPECT_EQ(uart.read(5, 1) & 0x60, 0x60u);  // LSR: THRE and TEMT
  uart.write(0, 1, 'o');
  uart.write(0, 1, 'k');
  EXPECT_EQ(out, "ok");
  EXPECT_EQ(uart.bytes_sent(), 2u);
  EXPECT_EQ(uart.read(5, 1) & 0x01, 0u);  // nothing received, ever
}

TEST(Uart16550, DivisorLatchHidesThrAndIer) {
  std::string out;
  Uart16550 uart([&](uint8_t b) { out.push_back(static_cast<char>(b)); });
  uart.write(3, 1, 0x80);  // LCR.DLAB
  uart.write(0, 1, 0x01);  // DLL: 115200 baud
  uart.write(1, 1, 0x00);  // DLM
  EXPECT_EQ(uart.read(0, 1), 1u);
  uart.write(3, 1, 0x03);  // 8N1, DLAB off
  uart.write(1, 1, 0x0f);
  EXPECT_EQ(uart.read(1, 1), 0x0fu);
  EXPECT_EQ(out, "");  // the divisor writes were not data
  EXPECT_EQ(uart.read(3, 1), 3u);
}

TEST(Uart16550, LoopbackKeepsBytesAndScratchRemembers) {
  std::string out;
  Uart16550 uart([&](uint8_t b) { out.push_back(static_cast<char>(b)); });
  uart.write(4, 1, 0x10);  // MCR.LOOP, as probing guests do
  uart.write(0, 1, 'x');
  EXPECT_EQ(out, "");
  EXPECT_EQ(uart.read(6, 1) & 0xf0, 0u);  // no modem outputs raised
  uart.write(4, 1, 0x1a);  // LOOP | OUT2 | RTS: Linux's 8250 probe
  EXPECT_EQ(uart.read(6, 1) & 0xf0, 0x90u);  // DCD | CTS
  uart.write(7, 1, 0x5a);
  EXPECT_EQ(uart.read(7, 1), 0x5au);
  EXPECT_EQ(uart.read(2, 1) & 1, 1u);  // IIR: no interrupt pending
}

// What Linux's 8250 driver does to send from user space: enable the THRE
// interrupt, take it (IIR says THRE, which acknowledges it), write bytes,
// each of which raises the line again, and disable it when done.
TEST(Uart16550, ThreInterruptAsQemuGivesIt) {
  std::string out;
  std::vector<bool> edges;
  Uart16550 uart([&](uint8_t b) { out.push_back(static_cast<char>(b)); }, [&](bool level) { edges.push_back(level); });
  EXPECT_EQ(uart.read(2, 1), 0x01u);  // nothing pending while IER is 0
  uart.write(0, 1, 'a');              // a byte with the interrupt off: no edge
  EXPECT_TRUE(edges.empty());
  uart.write(1, 1, 0x02);  // IER.ETBEI with THR empty: pending at once
  EXPECT_EQ(edges, std::vector<bool>{true});
  EXPECT_EQ(uart.read(2, 1), 0x02u);  // IIR: THRE, which the read clears
  EXPECT_EQ(edges, (std::vector<bool>{true, false}));
  EXPECT_EQ(uart.read(2, 1), 0x01u);
  uart.write(0, 1, 'b');  // sent at once, so THRE is pending again
  EXPECT_EQ(edges, (std::vector<bool>{true, false, true}));
  uart.write(0, 1, 'c');  // the line falls and rises: one edge per byte
  EXPECT_EQ(edges, (std::vector<bool>{true, false, true, false, true}));
  uart.write(1, 1, 0x00);  // the driver stops the transmitter interrupt
  EXPECT_EQ(edges.back(), false);
  EXPECT_EQ(uart.read(2, 1), 0x01u);
  EXPECT_EQ(out, "abc");
}

// Linux's UART_BUG_THRE probe: THRE must be reasserted each time IER.ETBEI
// is set again while the transmitter is idle.
TEST(Uart16550, ReenablingThreReassertsIt) {
  Uart16550 uart([](uint8_t) {});
  uart.write(1, 1, 0x02);
  EXPECT_EQ(uart.read(2, 1), 0x02u);
  uart.write(1, 1, 0x00);
  uart.write(1, 1, 0x02);
  EXPECT_EQ(uart.read(2, 1), 0x02u);
}

// A UART whose output and interrupt line are recorded.
struct RecordedUart {
  std::string out;
  std::vector<bool> irq;
  Uart16550 uart{[this](uint8_t b) { out.push_back(static_cast<char>(b)); },
                 [this](bool asserted) { irq.push_back(asserted); }};
};

// What a driver sees from now on: the registers, the pending THRE
// interrupt taken by reading IIR, another byte sent, the divisor latch.
std::vector<uint32_t> run_on(Uart16550& uart) {
  std::vector<uint32_t> seen;
  for (uint16_t offset : {1, 3, 4, 5, 6, 7}) seen.push_back(uart.read(offset, 1));
  seen.push_back(uart.read(2, 1));  // IIR: THRE, which reading acknowledges
  seen.push_back(uart.read(2, 1));
  uart.write(0, 1, 'i');
  seen.push_back(uart.read(2, 1));
  seen.push_back(static_cast<uint32_t>(uart.bytes_sent()));
  uart.write(3, 1, 0x83);
  seen.push_back(uart.read(0, 1));
  seen.push_back(uart.read(1, 1));
  return seen;
}

TEST(Uart16550Snapshot, RoundTripsRegistersAndThePendingThreInterrupt) {
  RecordedUart a;
  a.uart.write(3, 1, 0x80);  // DLAB: 115200 baud
  a.uart.write(0, 1, 0x01);
  a.uart.write(1, 1, 0x00);
  a.uart.write(3, 1, 0x03);  // 8N1
  a.uart.write(2, 1, 0x07);  // FIFOs on
  a.uart.write(4, 1, 0x0b);  // DTR, RTS, OUT2
  a.uart.write(7, 1, 0x5a);
  a.uart.write(0, 1, 'h');
  a.uart.write(1, 1, 0x02);  // THRE interrupt enabled: THR is empty, so it is pending
  ASSERT_EQ(a.irq.back(), true);

  const std::string bytes = save_state_bytes(a.uart);
  RecordedUart b;
  load_state_bytes(b.uart, bytes);
  EXPECT_EQ(save_state_bytes(b.uart), bytes);

  a.out.clear();
  a.irq.clear();
  const std::vector<uint32_t> seen = run_on(a.uart);
  EXPECT_EQ(seen[6], 0xc2u);  // IIR: FIFOs, THRE
  EXPECT_EQ(run_on(b.uart), seen);
  EXPECT_EQ(b.out, a.out);
  EXPECT_EQ(b.irq, a.irq);
  // Dropped by the IIR read, raised by the byte sent, dropped by the next read.
  EXPECT_EQ(a.irq, (std::vector<bool>{false, true, false}));
}

}  // namespace
}  // namespace topolab
