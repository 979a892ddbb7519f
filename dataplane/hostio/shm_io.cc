#include "dataplane/hostio/shm_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/steady_ms.h"

namespace ofan::hostio {
namespace {

constexpr uint64_t kMagic = 0x6f66616e2d73686dULL;  // "ofan-shm"
constexpr uint32_t kVersion = 1;

struct SlotHdr {
  uint64_t sent_ns;
  uint32_t len;
  uint32_t pad;
};
constexpr uint32_t kSlotBytes = (sizeof(SlotHdr) + kIoMaxFrame + 63) / 64 * 64;

// One direction. Its fields on cache lines of their own: the producer
// writes head, the consumer tail and armed.
struct Ring {
  alignas(64) std::atomic<uint32_t> head;
  alignas(64) std::atomic<uint32_t> tail;
  alignas(64) std::atomic<uint32_t> armed;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "the rings' indices are shared between processes");

struct Header {
  uint64_t magic;
  uint32_t version, slots, slot_bytes;
  std::atomic<uint32_t> ready;  // the switch end has laid the file out
  Ring up, down;                // host to switch, switch to host
};
Header* Hdr(uint8_t* base) { return reinterpret_cast<Header*>(base); }

constexpr size_t kHeaderBytes = (sizeof(Header) + 4095) / 4096 * 4096;
constexpr size_t kRingBytes = size_t{kShmSlots} * kSlotBytes;
constexpr size_t kFileBytes = kHeaderBytes + 2 * kRingBytes;

std::string Errno(const std::string& what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

class ShmIo : public PacketIo {
 public:
  ShmIo(uint8_t* base, bool host_end, int rx_bell, int tx_bell)
      : base_(base),
        tx_(host_end ? &Hdr(base)->up : &Hdr(base)->down),
        rx_(host_end ? &Hdr(base)->down : &Hdr(base)->up),
        tx_slots_(base + kHeaderBytes + (host_end ? 0 : kRingBytes)),
        rx_slots_(base + kHeaderBytes + (host_end ? kRingBytes : 0)),
        rx_bell_(rx_bell),
        tx_bell_(tx_bell),
        rx_tail_(rx_->tail.load(std::memory_order_relaxed)) {}
  ~ShmIo() override {
    munmap(base_, kFileBytes);
    close(rx_bell_);
    close(tx_bell_);
  }

  uint32_t Send(std::span<const FrameView> frames) override {
    const uint32_t head = tx_->head.load(std::memory_order_relaxed);
    const uint32_t used = head - tx_->tail.load(std::memory_order_acquire);
    const uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(frames.size()),
                                          kShmSlots - std::min(used, kShmSlots));
    const uint64_t now = n ? MonotonicNs() : 0;
    for (uint32_t i = 0; i < n; ++i) {
      uint8_t* slot = tx_slots_ + size_t{(head + i) % kShmSlots} * kSlotBytes;
      const uint32_t len = std::min(frames[i].len, kIoMaxFrame);
      const SlotHdr h{now, len, 0};
      std::memcpy(slot, &h, sizeof h);
      std::memcpy(slot + sizeof h, frames[i].data, len);
    }
    if (n) {
      tx_->head.store(head + n, std::memory_order_release);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      // The consumer found its ring empty and may sleep: wake it, once.
      if (tx_->armed.load(std::memory_order_relaxed) &&
          tx_->armed.exchange(0, std::memory_order_acq_rel))
        RingBell(tx_bell_);
    }
    io_.tx += n;
    io_.tx_full += frames.size() - n;
    return n;
  }

  uint32_t Recv(std::span<FrameView> out) override {
    // The slots handed out last time go back to the producer.
    if (held_) {
      rx_tail_ += held_;
      rx_->tail.store(rx_tail_, std::memory_order_release);
      held_ = 0;
    }
    if (bell_) {
      // Armed by PrepareSleep: disarmed now (the caller is awake); if the
      // producer took the arm, it rang: the byte is read off.
      bell_ = false;
      if (rx_->armed.exchange(0, std::memory_order_acq_rel) == 0) Drain();
    }
    const uint32_t head = rx_->head.load(std::memory_order_acquire);
    const uint32_t n = std::min<uint32_t>(head - rx_tail_, static_cast<uint32_t>(out.size()));
    for (uint32_t i = 0; i < n; ++i) {
      const uint8_t* slot = rx_slots_ + size_t{(rx_tail_ + i) % kShmSlots} * kSlotBytes;
      SlotHdr h;
      std::memcpy(&h, slot, sizeof h);
      out[i] = FrameView{slot + sizeof h, std::min(h.len, kIoMaxFrame), h.sent_ns};
    }
    held_ = n;
    io_.rx += n;
    return n;
  }

  // Arms the doorbell if nothing waits (frames held by the caller do not).
  bool PrepareSleep() override {
    const uint32_t mine = rx_tail_ + held_;
    if (rx_->head.load(std::memory_order_acquire) != mine) return false;
    if (!bell_) {
      rx_->armed.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      bell_ = true;
    }
    // A frame published before the arm was seen may have rung nothing.
    return rx_->head.load(std::memory_order_acquire) == mine;
  }

  int fd() const override { return rx_bell_; }
  std::string kind() const override { return "shm"; }

 private:
  static void RingBell(int bell) {
    const char b = 1;
    (void)!write(bell, &b, 1);  // a full FIFO is rung already
  }
  void Drain() {
    char buf[64];
    while (read(rx_bell_, buf, sizeof buf) > 0) {
    }
  }
  uint8_t* base_;
  Ring *tx_, *rx_;
  uint8_t *tx_slots_, *rx_slots_;
  int rx_bell_, tx_bell_;
  uint32_t rx_tail_;
  uint32_t held_ = 0;
  bool bell_ = false;  // the doorbell may hold a byte: drain at the next Recv
};

// The two doorbells, each end's receive one first.
Result<std::pair<int, int>> OpenBells(const std::string& path, bool host_end, bool make) {
  const std::string up = path + ".up", down = path + ".down";
  if (make) {
    for (const std::string& f : {up, down}) {
      unlink(f.c_str());
      if (mkfifo(f.c_str(), 0600) != 0) return MakeError(ErrorCode::kIo, Errno("mkfifo " + f));
    }
  }
  // O_RDWR: a FIFO opened so never blocks on open nor reads EOF when the
  // other end is not (yet) there.
  const int a = open(up.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (a < 0) return MakeError(ErrorCode::kIo, Errno("open " + up));
  const int b = open(down.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (b < 0) {
    close(a);
    return MakeError(ErrorCode::kIo, Errno("open " + down));
  }
  return host_end ? std::pair{b, a} : std::pair{a, b};
}

Result<std::unique_ptr<PacketIo>> Map(const std::string& path, bool host_end, int fd) {
  void* m = mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return MakeError(ErrorCode::kIo, Errno("mmap " + path));
  auto* base = static_cast<uint8_t*>(m);
  // Every page mapped writable now, not as the first frames write them
  // (4.4 MB a host with 512 slots): the engine thread took 8,600 page
  // faults in its Send to the hosts' rings during a fabric's first 4 MiB
  // permutation at 400 Mb/s, one pass of 5-6 ms. (MAP_POPULATE maps a shared mapping's pages
  // for reading only: the writes still faulted.) Best effort: a kernel
  // before 5.14 faults them in as before.
  (void)madvise(base, kFileBytes, MADV_POPULATE_WRITE);
  Header* hdr = Hdr(base);
  if (!host_end) {
    hdr->magic = kMagic;
    hdr->version = kVersion;
    hdr->slots = kShmSlots;
    hdr->slot_bytes = kSlotBytes;
    for (Ring* r : {&hdr->up, &hdr->down}) {
      r->head.store(0);
      r->tail.store(0);
      r->armed.store(0);
    }
  } else if (hdr->magic != kMagic || hdr->version != kVersion || hdr->slots != kShmSlots ||
             hdr->slot_bytes != kSlotBytes || hdr->ready.load(std::memory_order_acquire) != 1) {
    munmap(base, kFileBytes);
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("{}: not a shared-memory host link of this version (made by "
                                 "ofan-dp --fabric with a shm: host port)",
                                 path));
  }
  auto bells = OpenBells(path, host_end, !host_end);
  if (!bells) {
    munmap(base, kFileBytes);
    return bells.error();
  }
  if (host_end) {
    // What waited for a host before this one is not this one's.
    hdr->down.tail.store(hdr->down.head.load(std::memory_order_acquire), std::memory_order_release);
  } else {
    hdr->ready.store(1, std::memory_order_release);
  }
  return std::unique_ptr<PacketIo>(new ShmIo(base, host_end, bells->first, bells->second));
}

}  // namespace

Result<std::unique_ptr<PacketIo>> CreateShmLink(const std::string& path) {
  unlink(path.c_str());
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return MakeError(ErrorCode::kIo, Errno("create " + path));
  if (ftruncate(fd, static_cast<off_t>(kFileBytes)) != 0) {
    const std::string why = Errno("size " + path);
    close(fd);
    return MakeError(ErrorCode::kIo, why);
  }
  return Map(path, false, fd);
}

Result<std::unique_ptr<PacketIo>> OpenShmLink(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return MakeError(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                     Errno("open " + path) + " (is the fabric up with --host-io shm?)");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != kFileBytes) {
    close(fd);
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("{}: {} bytes, not a shared-memory host link ({})", path,
                                 static_cast<long long>(st.st_size), kFileBytes));
  }
  return Map(path, true, fd);
}

}  // namespace ofan::hostio
