// Network benchmark: topology build, max-min solver, and a 1 GiB all-reduce at UltraCluster
// scale, with the figures of docs/performance.md.
//
//   network_bench [--quick]          (--quick: 16 and 64 UltraServers instead of 1,536 and 8,192)
//   network_bench --all-reduce N     only the 1 GiB all-reduce on N UltraServers (for profiling)
#include "trnsim/config/load.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/network/collective_sim.hpp"
#include "trnsim/network/maxmin.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/topology/routing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

namespace {

using namespace trnsim;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

std::size_t rss(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(field, 0) == 0) {
            return std::stoull(line.substr(std::string(field).size())) * 1024;
        }
    }
    return 0;
}

void build_topology(const topology::FabricSpec& spec, std::int64_t ultraservers) {
    const std::size_t before = rss("VmRSS:");
    const auto t0 = Clock::now();
    const topology::Fabric f = topology::Fabric::build(spec, ultraservers);
    const double build = since(t0);
    // Routing is on demand: time a million routes between random chips.
    std::mt19937_64 rng(1);
    std::vector<std::uint32_t> links;
    std::size_t hops = 0;
    const auto t1 = Clock::now();
    for (int i = 0; i < 1'000'000; ++i) {
        links.clear();
        topology::route(f, static_cast<std::uint32_t>(rng() % f.chips()),
                        static_cast<std::uint32_t>(rng() % f.chips()), rng(), links);
        hops += links.size();
    }
    const double routing = since(t1);
    std::printf("topology %s chips: build %.2f s, %s of links (%s directed links); "
                "RSS +%s; 1M routes in %.2f s (%.1f hops on average)\n",
                fmt::integer(f.chips()).c_str(), build,
                fmt::bytes(static_cast<double>(f.memory_bytes())).c_str(),
                fmt::integer(f.links()).c_str(),
                fmt::bytes(static_cast<double>(rss("VmRSS:") - before)).c_str(), routing,
                static_cast<double>(hops) / 1e6);
}

void solver(const topology::FabricSpec& spec, std::int64_t ultraservers, std::uint32_t flows) {
    const topology::Fabric f = topology::Fabric::build(spec, ultraservers);
    network::MaxMinSolver s(f.capacity());
    std::mt19937_64 rng(2);
    std::vector<network::MaxMinSolver::FlowId> ids;
    std::vector<std::uint32_t> links;
    for (std::uint32_t i = 0; i < flows; ++i) {
        const auto a = static_cast<std::uint32_t>(rng() % f.chips());
        auto b = static_cast<std::uint32_t>(rng() % f.chips());
        if (b == a) {
            b = (b + 1) % f.chips();
        }
        links.clear();
        topology::route(f, a, b, i, links);
        ids.push_back(s.add(links));
    }
    const auto t0 = Clock::now();
    s.solve();
    const double full = since(t0);
    // Incremental: end 2,000 random flows one at a time.
    std::shuffle(ids.begin(), ids.end(), rng);
    const int ends = 2000;
    std::size_t refilled = 0;
    const auto t1 = Clock::now();
    for (int i = 0; i < ends; ++i) {
        s.remove(ids[static_cast<std::size_t>(i)]);
        s.update();
        refilled += s.last_update_size();
    }
    const double each = since(t1) / ends;
    std::printf("max-min on %s chips: full solve of %s random flows %.3f s; incremental update "
                "after a flow ends %.1f us on average (%.1f flows re-filled)\n",
                fmt::integer(f.chips()).c_str(), fmt::integer(flows).c_str(), full, each * 1e6,
                static_cast<double>(refilled) / ends);
}

void all_reduce(const topology::FabricSpec& spec, std::int64_t ultraservers) {
    const auto t0 = Clock::now();
    const topology::Fabric f = topology::Fabric::build(spec, ultraservers);
    const compute::ChipSpec chip = config::load_chip(spec.chip);
    network::CollectiveRequest req;
    req.op = network::CollectiveOp::all_reduce;
    req.bytes = 1024.0 * 1024 * 1024;
    req.ranks_per_chip = chip.ranks_per_chip(chip.lnc_default);
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        req.chips.push_back(c);
    }
    const network::LocalCosts local{chip.hbm_bandwidth, chip.on_chip_latency};
    network::CollectivePlan plan = network::plan_collective(f, req, local);
    const std::string algorithm = plan.algorithm;
    network::CollectiveSimStats stats;
    const auto out =
        network::simulate_collectives(f, {{std::move(plan), SimTime::zero()}}, local, {}, &stats);
    const double wall = since(t0);
    std::printf("1 GiB all-reduce across %s chips (%s ranks): simulated %.2f ms (%s), "
                "%s flows through the solver, %s solves; wall %.2f s including the build\n",
                fmt::integer(f.chips()).c_str(),
                fmt::integer(static_cast<std::int64_t>(req.chips.size()) * req.ranks_per_chip).c_str(),
                out[0].seconds() * 1e3, algorithm.c_str(),
                fmt::integer(static_cast<std::int64_t>(stats.flows)).c_str(),
                fmt::integer(static_cast<std::int64_t>(stats.solves)).c_str(), wall);
}

/// Window-edge resolution against the exact mode: concurrent collectives that share links and
/// start at staggered times, so rates change mid-window.
void window_error(const topology::FabricSpec& spec) {
    const topology::Fabric f = topology::Fabric::build(spec, 16);
    const compute::ChipSpec chip = config::load_chip(spec.chip);
    const network::LocalCosts local{chip.hbm_bandwidth, chip.on_chip_latency};
    std::mt19937_64 rng(3);
    double worst = 0.0, sum = 0.0;
    int n = 0;
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<network::CollectiveJob> jobs;
        for (int j = 0; j < 8; ++j) {
            network::CollectiveRequest req;
            req.op = j % 2 == 0 ? network::CollectiveOp::all_reduce : network::CollectiveOp::all_gather;
            req.bytes = static_cast<double>(std::uint64_t{1} << (16 + rng() % 12)); // 64 KiB .. 128 MiB
            // 8 to 64 chips in different UltraServers, overlapping between jobs.
            const std::uint32_t members = 8u << (rng() % 4);
            const std::uint32_t offset = static_cast<std::uint32_t>(rng() % 64);
            for (std::uint32_t m = 0; m < members; ++m) {
                req.chips.push_back((offset + m * 64 + m % 3) % f.chips());
            }
            std::sort(req.chips.begin(), req.chips.end());
            req.chips.erase(std::unique(req.chips.begin(), req.chips.end()), req.chips.end());
            jobs.push_back({network::plan_collective(f, req, local),
                            SimTime::from_ns(static_cast<std::int64_t>(rng() % 200'000))});
        }
        network::CollectiveSimOptions exact;
        exact.exact = true;
        const auto a = network::simulate_collectives(f, jobs, local, {});
        const auto b = network::simulate_collectives(f, jobs, local, exact);
        for (std::size_t j = 0; j < jobs.size(); ++j) {
            const double err = std::abs(a[j].seconds() - b[j].seconds()) / b[j].seconds();
            worst = std::max(worst, err);
            sum += err;
            ++n;
        }
    }
    std::printf("window-edge fabric vs exact (1 ns windows), %d collectives in 20 runs of 8 "
                "concurrent, staggered ones on 16 UltraServers: mean error %.3f%%, max %.3f%%\n",
                n, 100.0 * sum / n, 100.0 * worst);
}

} // namespace

int main(int argc, char** argv) {
    const topology::FabricSpec spec = config::load_fabric("trn2-ultracluster");
    if (argc > 2 && std::string(argv[1]) == "--all-reduce") {
        all_reduce(spec, std::stoll(argv[2]));
        return 0;
    }
    const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
    const std::int64_t mid = quick ? 16 : 1536;
    const std::int64_t big = quick ? 64 : 8192;
    build_topology(spec, mid);
    build_topology(spec, big);
    solver(spec, mid, quick ? 2000 : 100'000);
    window_error(spec);
    all_reduce(spec, mid);
    all_reduce(spec, big);
    std::printf("peak RSS %s\n", fmt::bytes(static_cast<double>(rss("VmHWM:"))).c_str());
    return 0;
}
