#include "emu/uroce/rank_exchange.h"

#include <fmt/format.h>

#include <random>
#include <thread>

#include "emu/uroce/neighbour.h"

namespace ofan::uroce {

Status RankExchange::Each(const std::function<Status(size_t)>& fn) {
  std::vector<Status> st(ranks_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks_.size(); ++i) threads.emplace_back([&, i] { st[i] = fn(i); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < st.size(); ++i) {
    if (!st[i].ok()) {
      return MakeError(st[i].error().code,
                       fmt::format("rank {}: {}", ranks_[i].local.rank, st[i].error().message));
    }
  }
  return {};
}

Result<std::unique_ptr<RankExchange>> RankExchange::Connect(const ExchangeOptions& o,
                                                            std::span<const LocalRank> ranks) {
  if (o.ips.size() != o.num_ranks) {
    return InvalidArgument(fmt::format("{} addresses for {} ranks", o.ips.size(), o.num_ranks));
  }
  std::unique_ptr<RankExchange> x(new RankExchange());
  for (const LocalRank& l : ranks) {
    if (l.rank >= o.num_ranks || !l.host)
      return InvalidArgument(fmt::format("local rank {}", l.rank));
    x->ranks_.push_back({l, nullptr, nullptr});
  }
  std::random_device rd;
  // Each rank's own ends and rkey, drawn here (one thread) and advertised.
  std::vector<TransportConfig> cfgs(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    TransportConfig& c = cfgs[i];
    c.rank = ranks[i].rank;
    c.num_ranks = o.num_ranks;
    c.qps_per_peer = o.qps_per_peer;
    c.max_outstanding = o.max_outstanding;
    c.local_ip = o.ips[c.rank];
    c.mtu = ranks[i].mtu;
    do {
      c.rkey = rd();
    } while (c.rkey == 0);
    c.addr = reinterpret_cast<uint64_t>(ranks[i].recv.data());
    c.local_qps.resize(o.num_ranks);
    c.peers.resize(o.num_ranks);
    for (uint32_t p = 0; p < o.num_ranks; ++p) {
      if (p == c.rank) continue;
      for (uint32_t q = 0; q < o.qps_per_peer; ++q)
        c.local_qps[p].push_back({TransportQpn(p, q, o.qps_per_peer), rd() & pkt::kPsnMask});
    }
  }
  Status s = x->Each([&](size_t i) -> Status {
    Rank& r = x->ranks_[i];
    TransportConfig& c = cfgs[i];
    rcx::RendezvousOptions ro;
    ro.rank = c.rank;
    ro.num_ranks = o.num_ranks;
    ro.ips = o.ips;
    ro.port = o.port;
    ro.timeout = o.timeout;
    ro.make_socket = [netns = r.local.netns]() { return TcpSocketIn(netns); };
    ro.progress = [&r]() {
      if (r.t) {
        r.t->KeepGoing(1000);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // no QPs yet
      }
    };
    auto mine = [&](uint32_t peer) {
      rcx::Hello h;
      h.rank = c.rank;
      h.ip = c.local_ip;
      h.mac = MacText(r.local.host->config().mac);
      h.mtu = c.mtu;
      h.rkey = c.rkey;
      h.addr = c.addr;
      h.len = r.local.recv.size();
      h.qps = c.local_qps[peer];
      return h;
    };
    std::vector<rcx::Hello> peers;
    auto rv = rcx::Rendezvous::Connect(ro, mine, &peers);
    if (!rv.ok()) return rv.error();
    r.rv = std::move(*rv);
    for (uint32_t p = 0; p < o.num_ranks; ++p) {
      if (p == c.rank) continue;
      PeerInfo& pi = c.peers[p];
      pi.ip = peers[p].ip;
      pi.next_hop_mac = r.local.next_hop_mac;
      if (pi.next_hop_mac.is_zero()) {
        auto mac = NextHopMac(r.local.netns, r.local.ifname, pi.ip);
        if (!mac.ok()) return mac.error();
        pi.next_hop_mac = *mac;
      }
      pi.rkey = peers[p].rkey;
      pi.addr = peers[p].addr;
      pi.len = peers[p].len;
      pi.mtu = peers[p].mtu;
      pi.qps = peers[p].qps;
    }
    auto t = UroceTransport::Create(c, r.local.host, r.local.send, r.local.recv);
    if (!t.ok()) return t.error();
    r.t = std::move(*t);
    return {};
  });
  if (!s.ok()) return s.error();
  return x;
}

std::vector<emu::Transport*> RankExchange::transports() const {
  std::vector<emu::Transport*> out;
  for (const auto& r : ranks_) out.push_back(r.t.get());
  return out;
}

Status RankExchange::Start() {
  return Each([this](size_t i) -> Status {
    if (Status s = ranks_[i].rv->Ready(); !s.ok()) return s;
    return ranks_[i].rv->Barrier();
  });
}

Status RankExchange::Finish(std::span<const uint64_t> received, uint64_t bad) {
  if (received.size() != ranks_.size()) return InvalidArgument("one received count per local rank");
  return Each([&](size_t i) -> Status {
    auto d = ranks_[i].rv->Done(received[i], bad);
    if (!d.ok()) return d.error();
    for (const rcx::PeerDone& p : *d) {
      if (p.bad) {
        return InvalidArgument(fmt::format("rank {} reports {} bad messages", p.rank, p.bad));
      }
    }
    return {};
  });
}

}  // namespace ofan::uroce
