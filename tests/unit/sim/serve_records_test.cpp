// The serving fleet's request records (serve_records.hpp): slots by id across router shards,
// chunks, and the records gathered in id order after the run.
#include <vector>

#include <gtest/gtest.h>

#include "serve_records.hpp"

namespace trnsim::sim::detail {
namespace {

/// Shard k adds `count[k]` requests; request id gets arrival 10 id and id input tokens.
void issue(FleetRecords& records, const std::vector<int>& count) {
    for (std::uint32_t k = 0; k < count.size(); ++k) {
        for (int i = 0; i < count[k]; ++i) {
            const std::uint64_t id = records.next_id(k);
            Slot& s = records.add(k);
            s.rec.id = id;
            s.rec.arrival = SimTime::from_ns(static_cast<std::int64_t>(10 * id));
            s.rec.input_tokens = static_cast<std::int32_t>(id);
        }
    }
}

TEST(ServeRecords, ShardKIssuesIdsKPlusMultiplesOfK) {
    FleetRecords records(3);
    EXPECT_EQ(records.next_id(0), 0u);
    EXPECT_EQ(records.next_id(2), 2u);
    issue(records, {3, 2, 2});
    EXPECT_EQ(records.issued(0), 3u);
    EXPECT_EQ(records.issued(1), 2u);
    EXPECT_EQ(records.next_id(0), 9u); // ids 0, 3, 6 issued
    EXPECT_EQ(records.next_id(1), 7u); // 1, 4
    // Request 4 is shard 1's second: its slot holds what was written for id 4.
    EXPECT_EQ(records.slot(4).rec.id, 4u);
    EXPECT_EQ(records.slot(4).rec.arrival.ns(), 40);
    EXPECT_EQ(&records.slot(6), &records.slot(6));
    EXPECT_EQ(records.slot(5).rec.input_tokens, 5);
}

TEST(ServeRecords, OpenLoopRecordsComeOutInIdOrder) {
    // 7 requests over 3 shards (ids 0..6 without a gap) come out as ids 0..6.
    FleetRecords records(3);
    issue(records, {3, 2, 2});
    const std::vector<serving::RequestRecord> out = records.take(false);
    ASSERT_EQ(out.size(), 7u);
    for (std::size_t i = 0; i < out.size(); ++i) {
        EXPECT_EQ(out[i].id, i);
        EXPECT_EQ(out[i].arrival.ns(), static_cast<std::int64_t>(10 * i));
    }
}

TEST(ServeRecords, ClosedLoopRecordsAreNumberedAgainWithoutGaps) {
    // Shard 1 stopped after one request: ids 0, 3, 6 | 1 | 2, 5 gather as 0, 1, 2, 3, 5, 6
    // and are numbered 0..5; their other fields stay.
    FleetRecords records(3);
    issue(records, {3, 1, 2});
    const std::vector<serving::RequestRecord> out = records.take(true);
    const std::int64_t arrivals[] = {0, 10, 20, 30, 50, 60};
    ASSERT_EQ(out.size(), 6u);
    for (std::size_t i = 0; i < out.size(); ++i) {
        EXPECT_EQ(out[i].id, i);
        EXPECT_EQ(out[i].arrival.ns(), arrivals[i]) << i;
    }
}

TEST(ServeRecords, OneShardKeepsItsIdsAcrossChunks) {
    // Past the first chunk of 2^16 slots, ids map to the next chunk.
    FleetRecords records(1);
    const std::uint64_t n = RecordTable::kChunk + 3;
    for (std::uint64_t id = 0; id < n; ++id) {
        Slot& s = records.add(0);
        s.rec.id = id;
        s.rec.finish = SimTime::from_ns(static_cast<std::int64_t>(id) + 1);
    }
    EXPECT_EQ(records.slot(RecordTable::kChunk + 1).rec.id, RecordTable::kChunk + 1);
    const std::vector<serving::RequestRecord> out = records.take(false);
    ASSERT_EQ(out.size(), n);
    EXPECT_EQ(out.back().id, n - 1);
    EXPECT_EQ(out[RecordTable::kChunk].finish.ns(),
              static_cast<std::int64_t>(RecordTable::kChunk) + 1);
}

TEST(ServeRecords, ASlotIsFreshUntilWritten) {
    FleetRecords records(2);
    const Slot& s = records.add(1);
    EXPECT_EQ(s.decode_replica, kNoReplica);
    EXPECT_EQ(s.rec.finish.ns(), -1);
    EXPECT_FALSE(s.rec.finished());
}

TEST(ServeRecords, TheRequestOfASlotCarriesItsPrefixOnlyWhenItHasOne) {
    Slot s;
    s.rec.id = 12;
    s.rec.arrival = SimTime::from_ns(5'000);
    s.rec.input_tokens = 300;
    s.rec.output_tokens = 20;
    serving::Request r = request_of(s, 128);
    EXPECT_EQ(r.id, 12u);
    EXPECT_EQ(r.arrival.ns(), 5'000);
    EXPECT_EQ(r.input_tokens, 300);
    EXPECT_EQ(r.output_tokens, 20);
    EXPECT_EQ(r.prefix_id, 0u);
    EXPECT_EQ(r.prefix_tokens, 0);
    s.prefix_id = 3;
    r = request_of(s, 128);
    EXPECT_EQ(r.prefix_id, 3u);
    EXPECT_EQ(r.prefix_tokens, 128);
}

TEST(ServeRecordsDeathTest, AGapInOpenLoopIdsIsABrokenInvariant) {
    // Open-loop shards never stop at different ids; ids 0, 3 | 1 | (none) lack 2.
    FleetRecords records(3);
    issue(records, {2, 1, 0});
    EXPECT_DEATH(records.take(false), "gap");
}

} // namespace
} // namespace trnsim::sim::detail
