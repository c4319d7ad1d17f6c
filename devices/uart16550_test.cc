#include "devices/uart16550.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace topolab
