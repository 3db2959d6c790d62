// trnsim collective: a collective benchmark in the style of nccom-test, on the simulated
// fabric, one row per message size.
#include "commands.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/network/collective_sim.hpp"
#include "trnsim/topology/fabric.hpp"

#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

namespace po = boost::program_options;

namespace trnsim::cli {

namespace {

/// "1KB:4GB" (powers of two from the first to the last) or "1MB,16MB,1GB".
std::vector<double> parse_sizes(const std::string& text) {
    std::vector<double> sizes;
    try {
        const auto colon = text.find(':');
        if (colon != std::string::npos) {
            const double lo = config::parse_bytes(text.substr(0, colon)).as_double();
            const double hi = config::parse_bytes(text.substr(colon + 1)).as_double();
            if (lo <= 0 || hi < lo) {
                throw UsageError("--sizes: need 0 < first <= last in '" + text + "'");
            }
            for (double s = lo; s <= hi * (1 + 1e-12); s *= 2) {
                sizes.push_back(s);
            }
        } else {
            std::size_t start = 0;
            while (start <= text.size()) {
                const auto comma = text.find(',', start);
                sizes.push_back(
                    config::parse_bytes(text.substr(start, comma - start)).as_double());
                if (comma == std::string::npos) {
                    break;
                }
                start = comma + 1;
            }
        }
    } catch (const config::UnitError& e) {
        throw UsageError(std::string("--sizes: ") + e.what());
    }
    return sizes;
}

} // namespace

int cmd_collective(const std::vector<std::string>& args) {
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "chip", po::value<std::string>()->default_value("trn2"), "chip preset or file")(
        "fabric", po::value<std::string>(),
        "fabric preset or file (default: <chip>-ultracluster)")(
        "ultraservers", po::value<std::int64_t>()->default_value(0), "UltraServers in the cluster")(
        "instances", po::value<std::int64_t>()->default_value(0),
        "plain instances in the cluster (no NeuronLink between them)")(
        "lnc", po::value<int>()->default_value(0), "physical cores per rank (default: the chip's)")(
        "op", po::value<std::string>()->default_value("all_reduce"),
        "all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv")(
        "ranks", po::value<std::int64_t>()->default_value(0), "ranks taking part (default: all)")(
        "sizes", po::value<std::string>()->default_value("1KB:1GB"),
        "bytes per rank: FIRST:LAST in powers of two, or a comma list")(
        "algorithm", po::value<std::string>()->default_value("auto"),
        "auto, hierarchical, ring, bidirectional_ring, mesh, rdh, torus_rings")(
        "exact", "re-solve the fabric at every event time (1 ns windows)")(
        "no-reuse", "simulate every repeated phase instead of reusing the first");
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(opts).run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        throw UsageError(std::string(e.what()) + "\nusage: trnsim collective [options]");
    }
    if (vm.count("help")) {
        std::cout << "usage: trnsim collective [--chip trn2] [--ultraservers N | --instances N] "
                     "[--op all_reduce] [--ranks N] [--sizes 1KB:1GB] [--algorithm auto]\n\n"
                  << opts;
        return 0;
    }
    const auto op = network::collective_from_string(vm["op"].as<std::string>());
    if (!op) {
        throw UsageError("--op: unknown collective '" + vm["op"].as<std::string>() + "'");
    }
    const auto algorithm = network::algorithm_from_string(vm["algorithm"].as<std::string>());
    if (!algorithm) {
        throw UsageError("--algorithm: unknown algorithm '" + vm["algorithm"].as<std::string>() +
                         "'");
    }
    const compute::ChipSpec chip = config::load_chip(vm["chip"].as<std::string>());
    const std::string fabric_name =
        vm.count("fabric") ? vm["fabric"].as<std::string>() : chip.name + "-ultracluster";
    topology::FabricSpec spec = config::load_fabric(fabric_name);
    std::int64_t ultraservers = vm["ultraservers"].as<std::int64_t>();
    std::int64_t instances = vm["instances"].as<std::int64_t>();
    if (ultraservers == 0 && instances == 0) {
        ultraservers = spec.scale_up.ultraserver_instances > 1 ? 1 : 0;
        instances = ultraservers == 0 ? 1 : 0;
    }
    if (ultraservers > 0 && instances > 0) {
        throw UsageError("give --ultraservers or --instances, not both");
    }
    if (instances > 0) {
        spec.scale_up.ultraserver_instances = 0;
    } else if (spec.scale_up.ultraserver_instances < 2) {
        throw UsageError("fabric '" + spec.name + "' has no UltraServers; use --instances");
    }
    const topology::Fabric fabric =
        topology::Fabric::build(spec, ultraservers > 0 ? ultraservers : instances);
    const int lnc = vm["lnc"].as<int>() > 0 ? vm["lnc"].as<int>() : chip.lnc_default;
    if (std::find(chip.lnc_allowed.begin(), chip.lnc_allowed.end(), lnc) == chip.lnc_allowed.end()) {
        throw UsageError("--lnc " + std::to_string(lnc) + " is not allowed on " + chip.name);
    }
    const std::int64_t rpc = chip.ranks_per_chip(lnc);
    const std::int64_t all_ranks = rpc * fabric.chips();
    const std::int64_t ranks = vm["ranks"].as<std::int64_t>() > 0 ? vm["ranks"].as<std::int64_t>()
                                                                   : all_ranks;
    if (ranks < 2 || ranks > all_ranks || (ranks > rpc && ranks % rpc != 0)) {
        throw UsageError("--ranks must be 2 to " + std::to_string(all_ranks) +
                         " and a multiple of the " + std::to_string(rpc) +
                         " ranks per chip (or fewer)");
    }
    network::CollectiveRequest req;
    req.op = *op;
    req.algorithm = *algorithm;
    req.ranks_per_chip = static_cast<int>(std::min(ranks, rpc));
    const std::int64_t chips_used = ranks / req.ranks_per_chip;
    for (std::int64_t c = 0; c < chips_used; ++c) {
        req.chips.push_back(static_cast<std::uint32_t>(c));
    }
    if (*op == network::CollectiveOp::send_recv) {
        if (chips_used < 2) {
            throw UsageError("send_recv needs ranks on two chips");
        }
        req.chips = {0, static_cast<std::uint32_t>(chips_used - 1)};
        req.ranks_per_chip = 1;
    }
    const network::LocalCosts local{chip.hbm_bandwidth, chip.on_chip_latency};
    network::CollectiveSimOptions options;
    options.exact = vm.count("exact") > 0;
    options.reuse_identical_phases = vm.count("no-reuse") == 0;

    std::printf("trnsim collective: %s over %s ranks on %s %s chips (%s), LNC=%d, fabric %s\n",
                network::to_string(*op), fmt::integer(ranks).c_str(),
                fmt::integer(chips_used).c_str(), chip.name.c_str(),
                fabric.ultraservers() > 0
                    ? (fmt::integer(fabric.ultraservers()) + " UltraServers in the cluster").c_str()
                    : (fmt::integer(fabric.instances()) + " instances in the cluster").c_str(),
                lnc, spec.name.c_str());
    std::printf("%14s  %-34s %7s %12s %12s %12s\n", "size(B)", "algorithm", "phases", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)");
    const double factor = network::bus_bandwidth_factor(*op, static_cast<std::size_t>(ranks));
    for (double size : parse_sizes(vm["sizes"].as<std::string>())) {
        req.bytes = size;
        network::CollectivePlan plan;
        try {
            plan = network::plan_collective(fabric, req, local);
        } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
        }
        const std::string name = plan.algorithm;
        const std::size_t phases = plan.total_phases();
        const auto out = network::simulate_collectives(fabric, {{std::move(plan), 0}}, local, options);
        const double t = out[0].seconds();
        const double algbw = size / t / 1e9;
        std::printf("%14.0f  %-34s %7zu %12.2f %12.3f %12.3f\n", size, name.c_str(), phases, t * 1e6,
                    algbw, algbw * factor);
        std::fflush(stdout);
    }
    return 0;
}

} // namespace trnsim::cli
