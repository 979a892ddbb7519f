// Where a host namespace's frames to an address go, read from that
// namespace's kernel (its neighbour and routing tables), so that `uroce peer`
// sends its RoCE frames the way the kernel sends the exchange's TCP: to the
// peer's own MAC on a connected subnet, else to the gateway's. Also the MAC
// address text form uroce's command lines and specs use.
//
// expects:  the namespace exists (/var/run/netns/NAME; "" = this one)
// gives:    NextHopMac: the MAC of dst's neighbour entry when a route of
//           `ifname` covers dst directly, else of the gateway of the longest
//           matching route through `ifname`; an error that says which entry
//           is missing (and how to add one) when it is absent or incomplete
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "dataplane/packet/headers.h"

namespace ofan::uroce {

Result<pkt::MacAddr> ParseMac(std::string_view s);
std::string MacText(const pkt::MacAddr& m);

// dst in host order.
Result<pkt::MacAddr> NextHopMac(const std::string& netns, const std::string& ifname, uint32_t dst);

}  // namespace ofan::uroce
