// trnsim collective: a collective benchmark in the style of nccom-test, on the simulated
// fabric, one row per message size.
#include "commands.hpp"
#include "options.hpp"
#include "report.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/network/collective_spec.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <utility>

namespace po = boost::program_options;

namespace trnsim::cli {

namespace {
/// Bounds of --ultraservers and --instances (the fabric then checks its own, smaller limit).
constexpr std::int64_t kMaxDomains = 1 << 20;
/// Every algorithm on the same sizes: one column of times each ("-" where the group does not
/// allow it), the automatic choice, and the cheapest per size.
int all_algorithms(const sim::CollectiveBenchSpec& base) {
    const network::Algorithm candidates[] = {
        network::Algorithm::automatic, network::Algorithm::ring,
        network::Algorithm::bidirectional_ring, network::Algorithm::mesh, network::Algorithm::rdh,
        network::Algorithm::torus_rings, network::Algorithm::hierarchical};
    std::vector<std::string> names;
    std::vector<std::vector<double>> seconds; // [algorithm][size], NaN: not allowed
    std::vector<std::string> automatic;       // what auto picked, per size
    for (const network::Algorithm a : candidates) {
        sim::CollectiveBenchSpec spec = base;
        spec.algorithm = a;
        std::vector<double> t(base.sizes.size(), std::nan(""));
        try {
            const sim::CollectiveBenchResult r = sim::run_collective_bench(spec, {});
            for (std::size_t i = 0; i < r.rows.size() && i < t.size(); ++i) {
                t[i] = r.rows[i].seconds;
                if (a == network::Algorithm::automatic) {
                    automatic.push_back(r.rows[i].algorithm);
                }
            }
        } catch (const InputError& e) {
            if (a == network::Algorithm::automatic) {
                const std::string& key = e.key_path();
                throw UsageError("--" + key.substr(key.find_last_of('.') + 1) + ": " +
                                 e.message());
            }
            // Not allowed for this group (a torus ring outside a full domain, say): "-".
        }
        names.push_back(enum_name(a));
        seconds.push_back(std::move(t));
    }
    std::cout << "  " << enum_name(base.op) << ", time per algorithm (\"-\": the group does not "
                                             "allow it; * the cheapest)\n";
    std::cout << "  " << std::setw(10) << "size";
    for (const auto& n : names) {
        std::cout << "  " << std::setw(19) << n;
    }
    std::cout << "  auto picked\n";
    for (std::size_t i = 0; i < base.sizes.size(); ++i) {
        std::size_t best = 0;
        for (std::size_t a = 1; a < names.size(); ++a) {
            if (!std::isnan(seconds[a][i]) &&
                (std::isnan(seconds[best][i]) || seconds[a][i] < seconds[best][i])) {
                best = a;
            }
        }
        std::cout << "  " << std::setw(10) << fmt::bytes(base.sizes[i]);
        for (std::size_t a = 0; a < names.size(); ++a) {
            const double s = seconds[a][i];
            const bool cheapest = !std::isnan(s) && s <= seconds[best][i];
            std::cout << "  " << std::setw(19)
                      << (std::isnan(s) ? std::string("-")
                                        : fmt::seconds(s) + (cheapest ? "*" : " "));
        }
        std::cout << "  " << (i < automatic.size() ? automatic[i] : std::string("-")) << "\n";
    }
    return 0;
}

} // namespace

int cmd_collective(const std::vector<std::string>& args) {
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "chip", po::value<std::string>()->default_value("trn2"), "chip preset or file")(
        "fabric", po::value<std::string>(), "fabric preset or file (default: <chip>-ultracluster)")(
        "ultraservers", po::value<std::string>(), "UltraServers in the cluster")(
        "instances", po::value<std::string>(),
        "plain instances in the cluster (no NeuronLink between them)")(
        "lnc", po::value<std::string>(), "physical cores per rank (default: the chip's)")(
        "op", po::value<std::string>()->default_value("all_reduce"),
        "all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv")(
        "ranks", po::value<std::string>(), "ranks taking part (default: all)")(
        "sizes", po::value<std::string>()->default_value("1KiB:1GiB"),
        "bytes per rank: FIRST:LAST in powers of two, or a comma list")(
        "algorithm", po::value<std::string>()->default_value("auto"),
        "auto, hierarchical, ring, bidirectional_ring, mesh, rdh, torus_rings")(
        "all-algorithms", "time every algorithm the group allows, side by side, and mark the "
                          "cheapest per size")(
        "exact", "re-solve the fabric at every event time (1 ns windows)")(
        "no-reuse", "simulate every repeated phase instead of reusing the first");
    const po::variables_map vm = parse_options(args, opts, {}, {}, "trnsim collective [options]");
    if (vm.count("help")) {
        std::cout << "usage: trnsim collective [--chip trn2] [--ultraservers N | --instances N] "
                     "[--op all_reduce] [--ranks N] [--sizes 1KiB:1GiB] [--algorithm auto]\n\n"
                  << opts;
        return 0;
    }
    sim::CollectiveBenchSpec spec;
    const auto op = enum_from_name<network::CollectiveOp>(vm["op"].as<std::string>());
    if (!op) {
        throw UsageError("--op: unknown collective '" + vm["op"].as<std::string>() + "' (" +
                         enum_name_list<network::CollectiveOp>() + ")");
    }
    const auto algorithm = enum_from_name<network::Algorithm>(vm["algorithm"].as<std::string>());
    if (!algorithm) {
        throw UsageError("--algorithm: unknown algorithm '" + vm["algorithm"].as<std::string>() +
                         "' (" + enum_name_list<network::Algorithm>() + ")");
    }
    spec.op = *op;
    spec.algorithm = *algorithm;
    try {
        spec.sizes = config::parse_size_list(vm["sizes"].as<std::string>());
    } catch (const config::UnitError& e) {
        throw UsageError(std::string("--sizes: ") + e.what());
    }
    spec.chip = config::load_chip(vm["chip"].as<std::string>());
    spec.fabric = config::load_fabric(vm.count("fabric") ? vm["fabric"].as<std::string>()
                                                         : spec.chip.name + "-ultracluster");
    spec.cluster.ultraservers = integer_flag(vm, "ultraservers", 1, kMaxDomains, 0);
    spec.cluster.instances = integer_flag(vm, "instances", 1, kMaxDomains, 0);
    if (spec.cluster.counts_ultraservers() && spec.cluster.instances > 0) {
        throw UsageError("give --ultraservers or --instances, not both");
    }
    if (spec.cluster.domains() == 0) {
        // One NeuronLink domain by default.
        (spec.fabric.scale_up.ultraserver_instances > 1 ? spec.cluster.ultraservers
                                                        : spec.cluster.instances) = 1;
    }
    spec.lnc = static_cast<int>(integer_flag(vm, "lnc", 1, 64, 0));
    spec.ranks = integer_flag(vm, "ranks", 2, std::int64_t{1} << 40, 0);
    spec.exact = vm.count("exact") > 0;
    spec.reuse_identical_phases = vm.count("no-reuse") == 0;
    if (vm.count("all-algorithms")) {
        return all_algorithms(spec);
    }
    try {
        // The header goes out with the first row: bad input prints nothing but the error.
        bool first = true;
        sim::run_collective_bench(spec, [&](const sim::CollectiveRow& row) {
            if (std::exchange(first, false)) {
                print_collective_header(std::cout, spec);
            }
            print_collective_row(std::cout, row);
        });
    } catch (const InputError& e) {
        // Command-line flags, not scenario keys: name the flag.
        const std::string& key = e.key_path();
        const std::string flag = key.substr(key.find_last_of('.') + 1);
        throw UsageError("--" + flag + ": " + e.message());
    }
    return 0;
}

} // namespace trnsim::cli
