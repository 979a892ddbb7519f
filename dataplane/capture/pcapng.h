// pcapng (the format of tcpdump -w, Wireshark and tshark; IETF draft
// draft-ietf-opsawg-pcapng) written block by block: what a capture of a
// switch's ports becomes.
//
// expects:   frames as bytes, each with its interface, time (ns since the
//            Unix epoch) and direction
// modifies:  the file it writes (an existing one is replaced)
// next:      tshark -r FILE, Wireshark; a reader that follows the file as it
//            grows sees whole blocks only (Flush after a batch)
//
// One section; one interface description block (link type Ethernet, ns
// timestamps, the name the caller gives, e.g. "e0-0:p2") per interface,
// written when it is added; an enhanced packet block per frame, with its
// direction in epb_flags. Host byte order, as the format allows (the
// section's byte-order magic says which). No DPDK: the tests read it back.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace ofan::dp {

enum class CaptureDir : uint8_t { kIn = 1, kOut = 2 };  // epb_flags' direction bits

class PcapngWriter {
 public:
  PcapngWriter() = default;
  ~PcapngWriter();
  PcapngWriter(PcapngWriter&& o) noexcept;
  PcapngWriter& operator=(PcapngWriter&& o) noexcept;
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  // Creates (or truncates) `path` and writes the section header; `app` is
  // the shb_userappl option (who wrote it).
  static Result<PcapngWriter> Create(const std::string& path, const std::string& app);
  // A new interface; returns its id for Write.
  Result<uint32_t> AddInterface(const std::string& name, uint32_t snaplen);
  // One frame: `bytes` as captured (at most the interface's snaplen),
  // `orig_len` its length on the wire.
  Status Write(uint32_t iface, uint64_t time_ns, CaptureDir dir, std::span<const uint8_t> bytes,
               uint32_t orig_len);
  Status Flush();
  Status Close();
  bool is_open() const { return f_ != nullptr; }
  const std::string& path() const { return path_; }

  // The bytes of each block, for the tests.
  static std::vector<uint8_t> SectionHeader(const std::string& app);
  static std::vector<uint8_t> InterfaceDescription(const std::string& name, uint32_t snaplen);
  static std::vector<uint8_t> EnhancedPacket(uint32_t iface, uint64_t time_ns, CaptureDir dir,
                                             std::span<const uint8_t> bytes, uint32_t orig_len);

 private:
  Status Put(const std::vector<uint8_t>& block);
  std::FILE* f_ = nullptr;
  std::string path_;
  uint32_t num_ifaces_ = 0;
};

}  // namespace ofan::dp
