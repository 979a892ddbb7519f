// Results of ofan-sim as JSON and as human tables; aggregation over seeds
// (mean and standard error of the mean, as the paper's error bars).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/config.h"
#include "sim/sim.h"

namespace ofan::sim {

nlohmann::json ConfigJson(const SimConfig& c);
nlohmann::json ResultJson(const SimResult& r);

// Mean of every numeric field over runs, with "<field>_sem" next to the main
// metrics and the individual runs under "runs".
nlohmann::json AggregateJson(const SimConfig& c, const std::vector<uint64_t>& seeds,
                             const std::vector<SimResult>& runs);

// A small fixed-width table writer.
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

std::string SummaryTable(const nlohmann::json& aggregated);

}  // namespace ofan::sim
