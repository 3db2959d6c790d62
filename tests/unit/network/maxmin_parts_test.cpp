// The parts of the max-min solver on their own: the bookkeeping of flows on links, the stamps
// and one progressive fill (the solver's own tests are in maxmin_test.cpp).
#include "trnsim/network/maxmin_fill.hpp"
#include "trnsim/network/maxmin_flows.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace trnsim::network {
namespace {

using Links = std::vector<std::uint32_t>;

std::vector<MaxMinFlowId> on_link(const MaxMinFlows& flows, std::uint32_t l) {
    std::vector<MaxMinFlowId> out;
    for (const MaxMinEntry& e : flows.table().lists()[l]) {
        out.push_back(e.flow);
    }
    return out;
}

TEST(MaxMinFlows, AddRemoveKeepLinkListsAndChanges) {
    MaxMinFlows flows(std::make_shared<MaxMinLinks>(std::vector<double>{1.0, 2.0, 3.0}));
    const auto a = flows.add(Links{0, 1}, 1.0);
    const auto b = flows.add(Links{1, 2}, 2.0);
    const auto c = flows.add(Links{1}, 1.0);
    EXPECT_EQ(flows.active(), 3u);
    EXPECT_EQ(flows.added(), (std::vector<MaxMinFlowId>{a, b, c}));
    EXPECT_EQ(on_link(flows, 1), (std::vector<MaxMinFlowId>{a, b, c}));
    flows.forget_changes();
    // Removing a: its links are noted as freed; the last entry of link 1 takes its place.
    flows.remove(a);
    EXPECT_FALSE(flows.alive(a));
    EXPECT_EQ(flows.freed_links(), (Links{0, 1}));
    EXPECT_EQ(on_link(flows, 0), std::vector<MaxMinFlowId>{});
    EXPECT_EQ(on_link(flows, 1), (std::vector<MaxMinFlowId>{c, b}));
    // Detaching c notes nothing; its slot is reused by the next flow.
    flows.forget_changes();
    flows.detach(c);
    EXPECT_TRUE(flows.freed_links().empty());
    EXPECT_EQ(flows.add(Links{2}, 1.0), c);
    EXPECT_EQ(flows.links(b).size(), 2u);
    EXPECT_THROW(flows.remove(a), std::invalid_argument);
    EXPECT_THROW(flows.add(Links{}, 1.0), std::invalid_argument);
    EXPECT_THROW(flows.add(Links{3}, 1.0), std::out_of_range);
    EXPECT_THROW(flows.add(Links{0}, 0.0), std::invalid_argument);
}

TEST(MaxMinFlows, RemovingMostFlowsRebuildsTheSurvivorsAsAdded) {
    MaxMinFlows flows(std::make_shared<MaxMinLinks>(std::vector<double>{1.0, 1.0}));
    const auto a = flows.add(Links{0}, 1.0);
    const auto b = flows.add(Links{0, 1}, 1.0);
    const auto c = flows.add(Links{1}, 1.0);
    flows.forget_changes();
    // Two of three leave (at least half): the survivor c is rebuilt, noted as added, and no
    // link is noted as freed.
    const std::vector<MaxMinFlowId> batch{a, b};
    flows.remove_batch(batch);
    EXPECT_EQ(flows.active(), 1u);
    EXPECT_EQ(flows.added(), std::vector<MaxMinFlowId>{c});
    EXPECT_TRUE(flows.freed_links().empty());
    EXPECT_EQ(on_link(flows, 0), std::vector<MaxMinFlowId>{});
    EXPECT_EQ(on_link(flows, 1), std::vector<MaxMinFlowId>{c});
    EXPECT_EQ(flows.links(c)[0], 1u);
}

TEST(MaxMinStamps, StepByTheStrideFromThePhase) {
    MaxMinStamps s(1, 4);
    EXPECT_EQ(s.current(), 1u);
    EXPECT_EQ(s.next(), 5u);
    EXPECT_EQ(s.next(), 9u);
    EXPECT_EQ(s.current(), 9u);
    EXPECT_THROW(MaxMinStamps(4, 4), std::invalid_argument);
    EXPECT_THROW(MaxMinStamps(0, 0), std::invalid_argument);
}

TEST(ProgressiveFill, PrivateCapsAndAPartialFill) {
    // Link 0 (capacity 10) carries a and b; link 1 (capacity 4) carries b alone, so it only
    // caps b at 4 (no heap entry). Link 0's share starts at 10 / 2 = 5 > 4: b freezes first at
    // 4 (bottleneck link 1); link 0 then has 6 left for a alone: a = 6 (bottleneck link 0).
    MaxMinFlows flows(std::make_shared<MaxMinLinks>(std::vector<double>{10.0, 4.0}));
    MaxMinStamps stamps(0, 1);
    ProgressiveFill fill;
    const auto a = flows.add(Links{0}, 1.0);
    const auto b = flows.add(Links{0, 1}, 1.0);
    fill.run(flows, {a, b}, stamps);
    EXPECT_DOUBLE_EQ(flows[a].rate, 6.0);
    EXPECT_DOUBLE_EQ(flows[b].rate, 4.0);
    EXPECT_EQ(flows[a].bottleneck, 0u);
    EXPECT_EQ(flows[b].bottleneck, 1u);
    EXPECT_DOUBLE_EQ(flows.table().state()[0].used, 10.0);
    EXPECT_EQ(stamps.current(), 2u); // two stamps per fill
    // Filling c alone: a and b keep their rates and link 0 is full, so c gets 0.
    const auto c = flows.add(Links{0}, 1.0);
    fill.run(flows, {c}, stamps);
    EXPECT_DOUBLE_EQ(flows[c].rate, 0.0);
    EXPECT_DOUBLE_EQ(flows[a].rate, 6.0);
    EXPECT_EQ(flows[c].bottleneck, 0u);
}

TEST(ProgressiveFill, WeightsShareALink) {
    // Capacity 12 shared by weights 1 and 3 (and no private link): 3 and 9.
    MaxMinFlows flows(std::make_shared<MaxMinLinks>(std::vector<double>{12.0}));
    MaxMinStamps stamps(0, 1);
    ProgressiveFill fill;
    const auto a = flows.add(Links{0}, 1.0);
    const auto b = flows.add(Links{0}, 3.0);
    fill.run(flows, {a, b}, stamps);
    EXPECT_DOUBLE_EQ(flows[a].rate, 3.0);
    EXPECT_DOUBLE_EQ(flows[b].rate, 9.0);
}

} // namespace
} // namespace trnsim::network
