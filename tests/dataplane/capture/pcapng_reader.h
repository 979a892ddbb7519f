// A pcapng reader for the tests: the blocks PcapngWriter writes, checked
// field by field as the format says (draft-ietf-opsawg-pcapng), so that the
// tests read a capture back without trusting the writer. tshark reads the
// same files in the emulator's tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace ofan::dp::testing {

struct PcapngPacket {
  uint32_t iface = 0;
  uint64_t time_ns = 0;
  uint32_t flags = 0;  // epb_flags: direction in bits 0-1 (1 in, 2 out)
  uint32_t orig_len = 0;
  std::vector<uint8_t> bytes;
};

struct PcapngFile {
  std::string app;
  std::vector<std::string> iface_names;
  std::vector<uint32_t> snaplens;
  std::vector<PcapngPacket> packets;
};

// nullopt (and *why) if the file is not what the format says.
inline std::optional<PcapngFile> ReadPcapng(const std::string& path, std::string* why) {
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto u16 = [&](size_t o) {
    uint16_t v;
    std::memcpy(&v, &d[o], 2);
    return v;
  };
  auto u32 = [&](size_t o) {
    uint32_t v;
    std::memcpy(&v, &d[o], 4);
    return v;
  };
  auto fail = [&](const std::string& m) -> std::optional<PcapngFile> {
    *why = m;
    return std::nullopt;
  };
  PcapngFile out;
  size_t o = 0;
  bool first = true;
  while (o < d.size()) {
    if (o + 12 > d.size()) return fail("a block cut short");
    const uint32_t type = u32(o), len = u32(o + 4);
    if (len < 12 || len % 4 || o + len > d.size()) return fail("bad block length");
    if (u32(o + len - 4) != len) return fail("trailing length differs");
    if (first && type != 0x0A0D0D0A) return fail("no section header first");
    first = false;
    // Options from `opt` to the trailing length: code, length, value padded.
    auto options = [&](size_t opt, auto&& each) {
      while (opt + 4 <= o + len - 4) {
        const uint16_t code = u16(opt), n = u16(opt + 2);
        if (code == 0) break;
        each(code, opt + 4, n);
        opt += 4 + ((n + 3u) & ~3u);
      }
    };
    if (type == 0x0A0D0D0A) {
      if (u32(o + 8) != 0x1A2B3C4D || u16(o + 12) != 1) return fail("bad section header");
      options(o + 24, [&](uint16_t code, size_t at, uint16_t n) {
        if (code == 4) out.app.assign(reinterpret_cast<const char*>(&d[at]), n);
      });
    } else if (type == 1) {
      if (u16(o + 8) != 1) return fail("link type is not Ethernet");
      out.snaplens.push_back(u32(o + 12));
      std::string name;
      bool ns = false;
      options(o + 16, [&](uint16_t code, size_t at, uint16_t n) {
        if (code == 2) name.assign(reinterpret_cast<const char*>(&d[at]), n);
        if (code == 9) ns = n == 1 && d[at] == 9;
      });
      if (!ns) return fail("timestamps are not in ns");
      out.iface_names.push_back(name);
    } else if (type == 6) {
      PcapngPacket p;
      p.iface = u32(o + 8);
      p.time_ns = static_cast<uint64_t>(u32(o + 12)) << 32 | u32(o + 16);
      const uint32_t cap = u32(o + 20);
      p.orig_len = u32(o + 24);
      if (p.iface >= out.iface_names.size()) return fail("packet of an unknown interface");
      if (o + 28 + cap > o + len - 4 || cap > p.orig_len) return fail("bad captured length");
      p.bytes.assign(d.begin() + static_cast<long>(o + 28),
                     d.begin() + static_cast<long>(o + 28 + cap));
      options(o + 28 + ((cap + 3u) & ~3u), [&](uint16_t code, size_t at, uint16_t n) {
        if (code == 2 && n == 4) p.flags = u32(at);
      });
      out.packets.push_back(std::move(p));
    }
    o += len;
  }
  if (first) return fail("empty file");
  return out;
}

}  // namespace ofan::dp::testing
