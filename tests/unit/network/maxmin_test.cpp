#include "trnsim/network/maxmin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace trnsim::network {
namespace {

using Links = std::vector<std::uint32_t>;

TEST(MaxMin, SingleBottleneck) {
    // One 10-unit link, two flows: 5 each.
    MaxMinSolver s({10.0});
    const auto a = s.add(Links{0});
    const auto b = s.add(Links{0});
    s.solve();
    EXPECT_DOUBLE_EQ(s.rate(a), 5.0);
    EXPECT_DOUBLE_EQ(s.rate(b), 5.0);
    EXPECT_EQ(s.bottleneck(a), 0u);
}

TEST(MaxMin, ParkingLot) {
    // Links 0 (capacity 1) and 1 (capacity 2) in a row; a long flow crosses both, a short flow
    // each link. Link 0 fills first at 1/2: long = short0 = 0.5. Link 1 then has 2 - 0.5 left
    // for its short flow: 1.5.
    MaxMinSolver s({1.0, 2.0});
    const auto lng = s.add(Links{0, 1});
    const auto s0 = s.add(Links{0});
    const auto s1 = s.add(Links{1});
    s.solve();
    EXPECT_DOUBLE_EQ(s.rate(lng), 0.5);
    EXPECT_DOUBLE_EQ(s.rate(s0), 0.5);
    EXPECT_DOUBLE_EQ(s.rate(s1), 1.5);
    EXPECT_EQ(s.bottleneck(s1), 1u);
}

TEST(MaxMin, TwoBottlenecks) {
    // f1 on link 0 (capacity 1); f2 on links 0 and 1; f3 on link 1 (capacity 10).
    // Link 0 binds first: f1 = f2 = 0.5; link 1 gives f3 the rest, 9.5.
    MaxMinSolver s({1.0, 10.0});
    const auto f1 = s.add(Links{0});
    const auto f2 = s.add(Links{0, 1});
    const auto f3 = s.add(Links{1});
    s.solve();
    EXPECT_DOUBLE_EQ(s.rate(f1), 0.5);
    EXPECT_DOUBLE_EQ(s.rate(f2), 0.5);
    EXPECT_DOUBLE_EQ(s.rate(f3), 9.5);
}

TEST(MaxMin, UnequalWeights) {
    // Capacity 9 shared by weights 1 and 2: 3 and 6.
    MaxMinSolver s({9.0});
    const auto a = s.add(Links{0}, 1.0);
    const auto b = s.add(Links{0}, 2.0);
    s.solve();
    EXPECT_DOUBLE_EQ(s.rate(a), 3.0);
    EXPECT_DOUBLE_EQ(s.rate(b), 6.0);
}

TEST(MaxMin, RejectsBadInput) {
    EXPECT_THROW(MaxMinSolver({0.0}), std::invalid_argument);
    MaxMinSolver s({1.0});
    EXPECT_THROW(s.add(Links{}), std::invalid_argument);
    EXPECT_THROW(s.add(Links{3}), std::out_of_range);
    EXPECT_THROW(s.add(Links{0}, 0.0), std::invalid_argument);
    EXPECT_THROW(s.remove(7), std::invalid_argument);
}

/// Random links with capacities 1..100 and flows over 1..6 distinct links.
struct Instance {
    std::vector<double> capacity;
    std::vector<Links> flows;
    std::vector<double> weights;
};

Instance random_instance(std::mt19937_64& rng, std::size_t links, std::size_t flows) {
    Instance in;
    for (std::size_t l = 0; l < links; ++l) {
        in.capacity.push_back(1.0 + static_cast<double>(rng() % 100));
    }
    for (std::size_t f = 0; f < flows; ++f) {
        Links path;
        const std::size_t hops = 1 + rng() % 6;
        while (path.size() < hops) {
            const auto l = static_cast<std::uint32_t>(rng() % links);
            if (std::find(path.begin(), path.end(), l) == path.end()) {
                path.push_back(l);
            }
        }
        in.flows.push_back(path);
        in.weights.push_back(rng() % 4 == 0 ? 2.0 : 1.0);
    }
    return in;
}

/// The max-min conditions, checked directly.
void check_max_min(const MaxMinSolver& s, const std::vector<MaxMinSolver::FlowId>& ids,
                   const Instance& in) {
    std::vector<double> used(in.capacity.size(), 0.0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        for (auto l : in.flows[i]) {
            used[l] += s.rate(ids[i]);
        }
    }
    for (std::size_t l = 0; l < used.size(); ++l) {
        EXPECT_LE(used[l], in.capacity[l] * (1 + 1e-9)) << "link " << l << " over capacity";
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        // Some link on the path is saturated and this flow's weighted rate is the largest there.
        bool has_bottleneck = false;
        for (auto l : in.flows[i]) {
            if (used[l] < in.capacity[l] * (1 - 1e-9)) {
                continue;
            }
            bool largest = true;
            for (std::size_t j = 0; j < ids.size(); ++j) {
                const auto& p = in.flows[j];
                if (std::find(p.begin(), p.end(), l) != p.end() &&
                    s.rate(ids[j]) / in.weights[j] >
                        s.rate(ids[i]) / in.weights[i] * (1 + 1e-9)) {
                    largest = false;
                    break;
                }
            }
            has_bottleneck |= largest;
        }
        EXPECT_TRUE(has_bottleneck) << "flow " << i << " has no bottleneck";
    }
}

TEST(MaxMinProperties, EveryFlowHasABottleneckAndNoLinkOverflows) {
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 30; ++trial) {
        const Instance in = random_instance(rng, 40, 120);
        MaxMinSolver s(in.capacity);
        std::vector<MaxMinSolver::FlowId> ids;
        for (std::size_t i = 0; i < in.flows.size(); ++i) {
            ids.push_back(s.add(in.flows[i], in.weights[i]));
        }
        s.solve();
        check_max_min(s, ids, in);
    }
}

TEST(MaxMinProperties, RatesDoNotDependOnFlowOrder) {
    std::mt19937_64 rng(8);
    const Instance in = random_instance(rng, 30, 100);
    std::vector<std::size_t> order(in.flows.size());
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> reference;
    for (int trial = 0; trial < 5; ++trial) {
        std::shuffle(order.begin(), order.end(), rng);
        MaxMinSolver s(in.capacity);
        std::vector<MaxMinSolver::FlowId> ids(in.flows.size());
        for (std::size_t i : order) {
            ids[i] = s.add(in.flows[i], in.weights[i]);
        }
        s.solve();
        std::vector<double> rates;
        for (auto id : ids) {
            rates.push_back(s.rate(id));
        }
        if (reference.empty()) {
            reference = rates;
        }
        for (std::size_t i = 0; i < rates.size(); ++i) {
            EXPECT_NEAR(rates[i], reference[i], 1e-9 * reference[i]);
        }
    }
}

TEST(MaxMinProperties, IncrementalUpdatesEqualFullSolves) {
    std::mt19937_64 rng(9);
    for (int trial = 0; trial < 10; ++trial) {
        const Instance pool = random_instance(rng, 50, 400);
        MaxMinSolver inc(pool.capacity);
        std::vector<std::pair<std::size_t, MaxMinSolver::FlowId>> live; // pool index, id
        std::size_t next = 0;
        for (int step = 0; step < 300; ++step) {
            // Mostly one change at a time, sometimes a batch.
            const int changes = rng() % 5 == 0 ? 1 + static_cast<int>(rng() % 6) : 1;
            for (int c = 0; c < changes; ++c) {
                if ((rng() % 3 != 0 || live.empty()) && next < pool.flows.size()) {
                    live.emplace_back(next, inc.add(pool.flows[next], pool.weights[next]));
                    ++next;
                } else if (!live.empty()) {
                    const std::size_t k = rng() % live.size();
                    inc.remove(live[k].second);
                    live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
                }
            }
            if (rng() % 10 == 0 && live.size() > 4) {
                // A batch of most of the live flows leaves at once (the solver rebuilds).
                std::vector<MaxMinSolver::FlowId> batch;
                while (live.size() > 2 && batch.size() * 3 < live.size() * 2) {
                    const std::size_t k = rng() % live.size();
                    batch.push_back(live[k].second);
                    live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
                }
                inc.remove_batch(batch);
            }
            inc.update();
            // The same live flows solved from scratch.
            MaxMinSolver full(pool.capacity);
            std::vector<MaxMinSolver::FlowId> ids;
            for (const auto& [i, id] : live) {
                ids.push_back(full.add(pool.flows[i], pool.weights[i]));
            }
            full.solve();
            for (std::size_t k = 0; k < live.size(); ++k) {
                ASSERT_NEAR(inc.rate(live[k].second), full.rate(ids[k]),
                            1e-7 * std::max(1.0, full.rate(ids[k])))
                    << "trial " << trial << " step " << step;
            }
        }
    }
}

TEST(MaxMinProperties, IncrementalTouchesFewFlowsWhenBottlenecksAreLocal) {
    // 1000 flows, each alone on its own access link (capacity 1) and all sharing a wide core
    // (capacity 10,000): every flow is limited by its access link. Removing one flow frees
    // bandwidth nobody else can use, so the update re-fills nothing but nothing.
    std::vector<double> capacity(1001, 1.0);
    capacity[1000] = 10'000.0;
    MaxMinSolver s(capacity);
    std::vector<MaxMinSolver::FlowId> ids;
    for (std::uint32_t i = 0; i < 1000; ++i) {
        ids.push_back(s.add(Links{i, 1000}));
    }
    s.solve();
    s.remove(ids[500]);
    s.update();
    EXPECT_LE(s.last_update_size(), 1u);
    EXPECT_DOUBLE_EQ(s.rate(ids[0]), 1.0);
}

TEST(MaxMinProperties, SolversSharingALinkTableMatchOneSolver) {
    // Two solvers on one link table, each with flows on its own half of the links, give the
    // rates one solver finds for all the flows, through adds, removes and updates.
    std::mt19937_64 rng(11);
    for (int trial = 0; trial < 20; ++trial) {
        const Instance a = random_instance(rng, 30, 60);
        const Instance b = random_instance(rng, 30, 60);
        std::vector<double> capacity = a.capacity;
        capacity.insert(capacity.end(), b.capacity.begin(), b.capacity.end());
        const auto table = MaxMinSolver::make_links(capacity);
        MaxMinSolver left(table, 0, 2), right(table, 1, 2);
        MaxMinSolver both(capacity);
        struct Live {
            MaxMinSolver* shard;
            MaxMinSolver::FlowId in_shard, in_both;
        };
        std::vector<Live> live;
        const auto add = [&](const Instance& in, std::size_t i, MaxMinSolver& shard,
                             std::uint32_t shift) {
            Links path = in.flows[i];
            for (auto& l : path) {
                l += shift;
            }
            live.push_back({&shard, shard.add(path, in.weights[i]), both.add(path, in.weights[i])});
        };
        for (std::size_t i = 0; i < 60; ++i) {
            add(a, i, left, 0);
            add(b, i, right, 30);
            if (i % 7 == 6) {
                // Remove a few flows, then re-solve incrementally.
                for (int r = 0; r < 3 && !live.empty(); ++r) {
                    const std::size_t k = rng() % live.size();
                    live[k].shard->remove(live[k].in_shard);
                    both.remove(live[k].in_both);
                    live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
                }
                left.update();
                right.update();
                both.update();
                for (const Live& f : live) {
                    ASSERT_NEAR(f.shard->rate(f.in_shard), both.rate(f.in_both),
                                1e-9 * std::max(1.0, both.rate(f.in_both)))
                        << "trial " << trial << " step " << i;
                }
            }
        }
        EXPECT_EQ(left.active_flows() + right.active_flows(), both.active_flows());
    }
}

TEST(MaxMin, SharedTableStampsMustBeApart) {
    const auto table = MaxMinSolver::make_links({1.0, 2.0});
    EXPECT_THROW(MaxMinSolver(table, 2, 2), std::invalid_argument);
    EXPECT_THROW(MaxMinSolver(table, 0, 0), std::invalid_argument);
    EXPECT_THROW(MaxMinSolver::make_links({1.0, 0.0}), std::invalid_argument);
}

} // namespace
} // namespace trnsim::network
