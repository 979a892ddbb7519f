// Putting a rendered frr.conf into effect: written atomically into the
// switch's FRR directory, then applied to the running daemons with vtysh.
//
// expects:  the text of frr_config.h's RenderFrrConfig; a directory the agent
//           may write; FRR 8.4.4's vtysh reaching the switch's daemons through
//           `-N PATHSPACE` (empty: the default instance).
// gives:    WriteFileAtomically: DIR/frr.conf replaced by rename(2) of a
//           fsync'd temporary in the same directory (a reader, or an FRR that
//           starts meanwhile, sees the old file or the new, never half).
//           ApplyArgv: `vtysh [-N P] -f FILE`, which takes the file's lines
//           as configuration commands into the running daemons (the way
//           frr-reload.py applies what it adds). RemoveNeighborsArgv:
//           `vtysh [-N P] -c 'configure terminal' -c 'router bgp ASN'
//           -c 'no neighbor pN' ...` for the ports no longer usable.
// why:      `vtysh -f` only adds: a neighbour that left the file stays
//           configured, so the agent removes the ports it stopped using
//           explicitly (it knows which: the last set it applied). frr-reload.py
//           would diff the running config but needs python3-frr tooling and a
//           `show running-config` round trip per change; the agent already
//           knows the difference. The file is still the whole config, so a
//           restarted FRR that reads it comes up with the same sessions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace ofan::agent {

inline constexpr const char* kFrrConfName = "frr.conf";
// frr.conf without BFD on the sessions, for a bgpd that restarted
// (FrrOptions::session_bfd); frr.conf itself stays whole.
inline constexpr const char* kFrrRestartConfName = "frr-restart.conf";

Status WriteFileAtomically(const std::string& path, const std::string& text);

std::vector<std::string> ApplyArgv(const std::string& pathspace, const std::string& file);
std::vector<std::string> RemoveNeighborsArgv(const std::string& pathspace, uint32_t asn,
                                             const std::vector<int>& ports);
// `vtysh [-N P] -c COMMAND`.
std::vector<std::string> VtyshArgv(const std::string& pathspace, const std::string& command);

}  // namespace ofan::agent
