#include "dataplane/capture/pcapng.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ofan::dp {
namespace {

constexpr uint32_t kShb = 0x0A0D0D0A, kIdb = 1, kEpb = 6;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kLinkTypeEthernet = 1;
constexpr uint16_t kOptEnd = 0, kShbUserAppl = 4, kIfName = 2, kIfTsresol = 9, kEpbFlags = 2;

// A block under construction: type, a length filled in by Finish, body,
// options, the length again.
class Block {
 public:
  explicit Block(uint32_t type) {
    U32(type);
    U32(0);
  }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    v_.insert(v_.end(), b, b + n);
  }
  void Pad() {
    while (v_.size() % 4) v_.push_back(0);
  }
  void Option(uint16_t code, const void* p, uint16_t n) {
    U16(code);
    U16(n);
    Raw(p, n);
    Pad();
  }
  std::vector<uint8_t> Finish() {
    U16(kOptEnd);
    U16(0);
    const auto len = static_cast<uint32_t>(v_.size() + 4);
    U32(len);
    std::memcpy(v_.data() + 4, &len, 4);
    return std::move(v_);
  }

 private:
  std::vector<uint8_t> v_;
};

}  // namespace

std::vector<uint8_t> PcapngWriter::SectionHeader(const std::string& app) {
  Block b(kShb);
  b.U32(kByteOrderMagic);
  b.U16(1);             // major version
  b.U16(0);             // minor version
  b.U64(~uint64_t{0});  // section length: not given
  b.Option(kShbUserAppl, app.data(), static_cast<uint16_t>(std::min<size_t>(app.size(), 256)));
  return b.Finish();
}

std::vector<uint8_t> PcapngWriter::InterfaceDescription(const std::string& name, uint32_t snaplen) {
  Block b(kIdb);
  b.U16(kLinkTypeEthernet);
  b.U16(0);
  b.U32(snaplen);
  b.Option(kIfName, name.data(), static_cast<uint16_t>(std::min<size_t>(name.size(), 256)));
  const uint8_t ns = 9;  // timestamps in units of 10^-9 s
  b.Option(kIfTsresol, &ns, 1);
  return b.Finish();
}

std::vector<uint8_t> PcapngWriter::EnhancedPacket(uint32_t iface, uint64_t time_ns, CaptureDir dir,
                                                  std::span<const uint8_t> bytes,
                                                  uint32_t orig_len) {
  Block b(kEpb);
  b.U32(iface);
  b.U32(static_cast<uint32_t>(time_ns >> 32));
  b.U32(static_cast<uint32_t>(time_ns));
  b.U32(static_cast<uint32_t>(bytes.size()));
  b.U32(orig_len);
  b.Raw(bytes.data(), bytes.size());
  b.Pad();
  const uint32_t flags = static_cast<uint32_t>(dir);
  b.Option(kEpbFlags, &flags, 4);
  return b.Finish();
}

PcapngWriter::~PcapngWriter() { (void)Close(); }

PcapngWriter::PcapngWriter(PcapngWriter&& o) noexcept
    : f_(std::exchange(o.f_, nullptr)), path_(std::move(o.path_)), num_ifaces_(o.num_ifaces_) {}

PcapngWriter& PcapngWriter::operator=(PcapngWriter&& o) noexcept {
  if (this != &o) {
    (void)Close();
    f_ = std::exchange(o.f_, nullptr);
    path_ = std::move(o.path_);
    num_ifaces_ = o.num_ifaces_;
  }
  return *this;
}

Result<PcapngWriter> PcapngWriter::Create(const std::string& path, const std::string& app) {
  PcapngWriter w;
  w.path_ = path;
  w.f_ = std::fopen(path.c_str(), "wb");
  if (!w.f_) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  if (Status s = w.Put(SectionHeader(app)); !s) return s.error();
  return w;
}

Result<uint32_t> PcapngWriter::AddInterface(const std::string& name, uint32_t snaplen) {
  if (Status s = Put(InterfaceDescription(name, snaplen)); !s) return s.error();
  return num_ifaces_++;
}

Status PcapngWriter::Write(uint32_t iface, uint64_t time_ns, CaptureDir dir,
                           std::span<const uint8_t> bytes, uint32_t orig_len) {
  if (iface >= num_ifaces_) {
    return InvalidArgument(fmt::format("no interface {}", iface));
  }
  return Put(EnhancedPacket(iface, time_ns, dir, bytes, orig_len));
}

Status PcapngWriter::Put(const std::vector<uint8_t>& block) {
  if (!f_) return MakeError(ErrorCode::kIo, fmt::format("{} is not open", path_));
  if (std::fwrite(block.data(), 1, block.size(), f_) != block.size()) {
    return MakeError(ErrorCode::kIo, fmt::format("writing {}: {}", path_, std::strerror(errno)));
  }
  return {};
}

Status PcapngWriter::Flush() {
  if (f_ && std::fflush(f_) != 0) {
    return MakeError(ErrorCode::kIo, fmt::format("writing {}: {}", path_, std::strerror(errno)));
  }
  return {};
}

Status PcapngWriter::Close() {
  if (!f_) return {};
  const int rc = std::fclose(std::exchange(f_, nullptr));
  if (rc != 0) {
    return MakeError(ErrorCode::kIo, fmt::format("closing {}: {}", path_, std::strerror(errno)));
  }
  return {};
}

}  // namespace ofan::dp
