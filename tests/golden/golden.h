// Golden frames: whole-frame fixtures (the bytes that go in, the bytes that
// must come out) made independently of the code under test, by
// tests/golden/make_golden.py with scapy. Read by the stage tests, the RoCE
// tests and the ring tests; one text format for all of them.
//
// A fixture file is lines; '#' starts a comment line, blank lines are
// skipped, fields are separated by spaces:
//
//   switch NAME k=K levels=L id=ID policy=POLICY
//       a switch of a fat tree (dataplane/lb/fat_tree.h numbers its ids)
//   port SWITCH P mac=MAC peer=MAC
//       fat-tree port P of SWITCH: its own MAC and its neighbour's (what a
//       forwarded frame leaves with as source and destination)
//   frame NAME [KEY=VALUE ...]
//       starts a frame; the keys it may carry:
//         switch=SWITCH in_port=P    where the frame is received
//         route=down|up|local|none   what routing it does; down: port=P,
//                                    up: dest=D (the switch's key space)
//         drop=COUNTER               the frame is dropped and counted there
//                                    (common/protocol/counters.h's names)
//         anything else a fixture describes (the RoCE fields, ...)
//   in HEX
//       the frame's bytes
//   out P HEX
//       it leaves on port P as these bytes; with several out lines it
//       leaves on exactly one of them (an LB choice); none: not forwarded
//   ce P HEX
//       the same frame leaving port P when egress marks it CE; a forwarded
//       frame without ce lines is left as it is by marking (Not-ECT or CE)
//   reply P HEX
//       what the switch itself sends on port P about the frame (an ICMP
//       error, an echo reply), padded to the Ethernet minimum
//
// The loader checks the grammar and the references (a frame's switch, its
// ports) and says where a file is wrong.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/packet/headers.h"

namespace ofan::golden {

using Bytes = std::vector<uint8_t>;

struct Port {
  uint32_t port = 0;
  pkt::MacAddr mac, peer;
};

struct Switch {
  std::string name;
  int k = 0, levels = 0;
  uint32_t id = 0;
  std::string policy;
  std::vector<Port> ports;
  const Port* FindPort(uint32_t p) const;
};

struct Output {
  uint32_t port = 0;
  Bytes bytes;
};

struct Frame {
  std::string name;
  std::map<std::string, std::string> attrs;
  Bytes in;
  std::vector<Output> out, ce, reply;

  bool Has(const std::string& key) const { return attrs.count(key) != 0; }
  // The value of key, or "" / fallback when the frame has none. Numbers are
  // decimal or 0x-hex.
  std::string Str(const std::string& key) const;
  uint64_t Num(const std::string& key, uint64_t fallback = 0) const;
};

struct File {
  std::string path;
  std::vector<Switch> switches;
  std::vector<Frame> frames;
  const Switch* FindSwitch(const std::string& name) const;
  const Frame* FindFrame(const std::string& name) const;
};

Result<File> Load(const std::string& path);

std::optional<pkt::MacAddr> ParseMac(const std::string& text);
std::optional<Bytes> ParseHex(const std::string& text);

// The fixtures' folder is given to a test binary as --golden-dir=DIR (meson
// passes the source tree's tests/golden), so that no path is built in.
// TakeDirArgument removes it from argv; Fixture("x.golden") is DIR/x.golden,
// loaded once per process (or why it could not be).
void TakeDirArgument(int& argc, char** argv);
const Result<File>& Fixture(const std::string& name);

}  // namespace ofan::golden
