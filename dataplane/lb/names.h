// Names and MACs of a fat tree's switches and hosts: one plan for every tool
// that prints or programs them (ofan-topo and so ofan-emu, the P4 control
// plane in tofino_p4/).
//
// Names. Edge e of pod p is "e<p>-<e>", aggregation switch j of pod p is
// "a<p>-<j>", core c is "c<c>"; in a 2-level tree the leaves are "l<i>" and
// the spines "s<j>". Hosts are "h<id>".
// MACs are locally administered and carry the id: port p of switch s is
// 02:00:ss:ss:pp:01, host h is 02:01:hh:hh:00:02.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"

namespace ofan::lb {

using MacBytes = std::array<uint8_t, 6>;

std::string SwitchName(const FatTree& t, SwitchId s);
// A name as SwitchName gives it, or a switch id in decimal.
Result<SwitchId> ParseSwitchName(const FatTree& t, std::string_view name);

MacBytes SwitchPortMac(SwitchId s, int port);
MacBytes HostMac(HostId h);
// The MAC of what sits at the far end of port `port` of s.
MacBytes PeerMac(const FatTree& t, SwitchId s, int port);
std::string FormatMac(const MacBytes& m);

// "p<N>": the netdev of port N in a switch's namespace (ofan-dp's kernel
// ports, the per-switch engine's veths; emu/fabric/nodes/base.py names them
// so too).
std::string PortIfName(int port);
// N from "p<N>"; -1 for any other name.
int PortOfIfName(std::string_view ifname);

}  // namespace ofan::lb
