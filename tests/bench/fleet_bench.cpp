// The fleet scheduler at datacenter scale (issue 30): training jobs on 1,536 Trn2 UltraServers
// (98,304 chips) for 30 simulated days, at rate level, under each policy; wall time, events and
// peak memory.
//
//   fleet_bench                 10,000 jobs, 1,536 UltraServers, 30 days, every policy
//   fleet_bench --case smoke    500 jobs on 96 UltraServers for 3 days (for ctest)
//   --jobs N --domains N --days N --repeat N   (medians over the repeats)
//
// The jobs are synthetic (seeded): gang sizes 1 to 256 UltraServers, the number of jobs of a
// size halving as the size doubles; run times log-normal around 12 hours; submissions uniform
// over the horizon, sized to offer about 90% of the pool; a checkpoint every 10% of a job's
// steps. Domains fail about once in 30 days each and are repaired in 4 hours; 2% of the pool
// are spares. The step times are given, not estimated: this measures the scheduler and the
// engine, not the plans.
#include "trnsim/core/format.hpp"
#include "trnsim/fleet/fleet.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace trnsim;
using Clock = std::chrono::steady_clock;

std::size_t peak_rss_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
        }
    }
    return 0;
}

struct Options {
    std::int64_t jobs = 10'000;
    std::int64_t domains = 1'536;
    double days = 30.0;
    int repeat = 3;
};

fleet::FleetInput make_fleet(const Options& o) {
    std::mt19937_64 rng(2026);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::lognormal_distribution<double> hours(std::log(12.0), 1.0);
    const double horizon_s = o.days * 86400.0;
    fleet::FleetInput in;
    in.domains = o.domains;
    in.chips_per_domain = 64;
    in.groups.domains_per_leaf_group = 16; // cluster::domain_groups at radix 128, 16 rails
    in.groups.leaf_groups_per_pod = 4;
    in.spares = std::max<std::int64_t>(1, o.domains / 50);
    in.horizon = SimTime::from_ns(static_cast<std::int64_t>(horizon_s * 1e9));
    const std::int64_t largest = std::min<std::int64_t>(256, (o.domains - in.spares) / 2);
    std::vector<std::int64_t> sizes;
    for (std::int64_t s = 1; s <= largest; s *= 2) {
        sizes.push_back(s);
    }
    // Weights halving as the size doubles; scale run times so the jobs offer ~90% of the pool.
    double mean_size = 0.0, weight = 0.0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
        mean_size += std::ldexp(1.0, -static_cast<int>(k)) * static_cast<double>(sizes[k]);
        weight += std::ldexp(1.0, -static_cast<int>(k));
    }
    mean_size /= weight;
    const double mean_hours = 12.0 * std::exp(0.5);
    const double scale = 0.9 * static_cast<double>(o.domains - in.spares) * horizon_s / 3600.0 /
                         (static_cast<double>(o.jobs) * mean_size * mean_hours);
    for (std::int64_t k = 0; k < o.jobs; ++k) {
        double pick = u(rng) * weight;
        std::size_t size = 0;
        while (size + 1 < sizes.size() && pick > std::ldexp(1.0, -static_cast<int>(size))) {
            pick -= std::ldexp(1.0, -static_cast<int>(size));
            ++size;
        }
        fleet::JobSpec j;
        j.name = "job" + std::to_string(k);
        j.tenant = k % 4;
        j.submit = SimTime::from_ns(static_cast<std::int64_t>(u(rng) * horizon_s * 1e9));
        j.domains = sizes[size];
        j.step = Duration::from_seconds_ceil(2.0 + 8.0 * u(rng));
        const double run_s = std::min(hours(rng) * scale, 20 * 24.0) * 3600.0;
        j.steps = std::max<std::int64_t>(1, static_cast<std::int64_t>(run_s / j.step.seconds()));
        j.priority = static_cast<int>(rng() % 3);
        j.checkpoint_steps = std::max<std::int64_t>(1, j.steps / 10);
        j.save = Duration::from_seconds_ceil(30.0);
        j.restore = Duration::from_seconds_ceil(120.0);
        j.launch = Duration::from_seconds_ceil(300.0);
        in.jobs.push_back(j);
    }
    std::exponential_distribution<double> gap(1.0 / (30.0 * 86400.0));
    for (std::int64_t d = 0; d < o.domains; ++d) {
        for (double t = gap(rng); t < horizon_s; t += gap(rng) + 4 * 3600.0) {
            in.outages.push_back({d, SimTime::from_ns(static_cast<std::int64_t>(t * 1e9)),
                                  SimTime::from_ns(static_cast<std::int64_t>((t + 4 * 3600.0) *
                                                                             1e9))});
        }
    }
    return in;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "fleet_bench: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--case") {
            if (value() == "smoke") {
                o = {500, 96, 3.0, 1};
            }
        } else if (a == "--jobs") {
            o.jobs = std::stoll(value());
        } else if (a == "--domains") {
            o.domains = std::stoll(value());
        } else if (a == "--days") {
            o.days = std::stod(value());
        } else if (a == "--repeat") {
            o.repeat = std::max(1, std::stoi(value()));
        } else {
            std::fprintf(stderr, "fleet_bench: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    fleet::FleetInput in = make_fleet(o);
    std::printf("fleet: %s jobs on %s UltraServers (%s chips), %s spares, %g days, %s outages\n",
                fmt::integer(o.jobs).c_str(), fmt::integer(o.domains).c_str(),
                fmt::integer(o.domains * 64).c_str(), fmt::integer(in.spares).c_str(), o.days,
                fmt::integer(static_cast<std::int64_t>(in.outages.size())).c_str());
    for (const fleet::Policy p :
         {fleet::Policy::fifo, fleet::Policy::backfill, fleet::Policy::priority}) {
        in.scheduler.policy = p;
        std::vector<double> walls;
        fleet::FleetResult r;
        for (int k = 0; k < o.repeat; ++k) {
            const auto t0 = Clock::now();
            r = fleet::simulate_fleet(in);
            walls.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        }
        std::sort(walls.begin(), walls.end());
        std::int64_t done = 0, started = 0, preempted = 0;
        double wait_h = 0.0;
        for (const fleet::JobRecord& j : r.jobs) {
            done += j.finished() ? 1 : 0;
            preempted += j.preemptions;
            if (j.first_start != SimTime::max()) {
                ++started;
                wait_h += (j.first_start - j.submit).seconds() / 3600.0;
            }
        }
        const double total = static_cast<double>(o.domains) * r.end.seconds();
        const auto pct = [&](fleet::DomainUse u) {
            return 100.0 * r.pool.domain_time[static_cast<std::size_t>(u)].seconds() / total;
        };
        std::printf("  %-8s wall %.3f s (median of %d), %s events; %s jobs finished, first "
                    "start %.1f h after submit (mean), %s preemptions; busy %.1f%%, idle "
                    "%.1f%%, spare %.1f%%, down %.1f%%\n",
                    fleet::to_string(p), walls[walls.size() / 2], o.repeat,
                    fmt::integer(static_cast<std::int64_t>(r.events)).c_str(),
                    fmt::integer(done).c_str(),
                    wait_h / static_cast<double>(std::max<std::int64_t>(started, 1)),
                    fmt::integer(preempted).c_str(), pct(fleet::DomainUse::busy),
                    pct(fleet::DomainUse::idle), pct(fleet::DomainUse::spare),
                    pct(fleet::DomainUse::down));
    }
    std::printf("peak RSS %s\n", fmt::bytes(static_cast<double>(peak_rss_bytes())).c_str());
    return 0;
}
