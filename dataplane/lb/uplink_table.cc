#include "dataplane/lb/uplink_table.h"

namespace ofan::lb {

UplinkTable::UplinkTable(uint32_t w, std::vector<PortMask> masks)
    : w_(w), stride_(w + 1), masks_(std::move(masks)), order_(w == 0 ? 1 : w) {
  lists_.assign(static_cast<size_t>(num_keys()) * stride_, 0);
  for (uint32_t key = 0; key < num_keys(); ++key) {
    const PortMask m = masks_[key % num_dests()];
    uint8_t* row = &lists_[static_cast<size_t>(key) * stride_];
    uint8_t n = 0;
    for (uint32_t i = 0; i < w_; ++i) {
      const uint32_t port = order_.Port(i, key);
      if (m & (PortMask{1} << port)) row[1 + n++] = static_cast<uint8_t>(port);
    }
    row[0] = n;
  }
}

UplinkTable UplinkTable::ForSwitch(const FatTree& t, SwitchId s, const LinkSet& failed) {
  return UplinkTable(static_cast<uint32_t>(t.num_uplinks(s)), t.valid_uplink_table(s, failed));
}

uint32_t UplinkTable::RankOf(uint32_t key, uint32_t pos) const {
  const PortMask m = masks_[key % num_dests()];
  if (m == 0) return 0;
  // Count valid ports strictly before the first valid position >= pos.
  uint32_t first = pos % w_;
  while (!(m & (PortMask{1} << order_.Port(first, key)))) first = (first + 1) % w_;
  uint32_t rank = 0;
  for (uint32_t i = 0; i < first; ++i) {
    if (m & (PortMask{1} << order_.Port(i, key))) ++rank;
  }
  return rank;
}

}  // namespace ofan::lb
