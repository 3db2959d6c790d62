// The serving fleet's request records (private to the sim module; serve_layout.hpp lists the
// parts): one slot per request, by id, written by the router that issues the request and
// then only by the replica that holds it, gathered in id order after the run.
//
// Ids. Router shard k of K issues ids k, k + K, k + 2K, ... and keeps their slots in its own
// table at id / K, so a router and the replicas of its partition never touch another shard's
// table while they run. Ids are below 2^32 (a KV transfer's tag holds one in its low half).
//
// Threading: a slot is written by the one entity that owns its request at the time
// (ownership moves with events across window barriers); a table grows by chunks that never
// move, so replicas read chunks the router added in earlier windows.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trnsim/serving/metrics.hpp"
#include "trnsim/serving/request.hpp"

#include "serve_layout.hpp"

namespace trnsim::sim::detail {

/// The fleet-wide state of one request. Written by the router when it issues the request,
/// then only by the replica that holds it (ownership moves with events across window
/// barriers, so no two threads touch a slot at once).
struct Slot {
    serving::RequestRecord rec;
    /// Disaggregated: chosen by the router; kNoReplica for a request of one output token,
    /// which finishes on its prefill replica (its first token is its last).
    std::uint32_t decode_replica = kNoReplica;
    std::uint32_t handoff = 0;        ///< disaggregated: the prefill replica's hand-off
    std::uint32_t handoff_epoch = 0;  ///< the prefill replica's failure count at the hand-off
    std::uint32_t prefix_id = 0;
};

/// The request a replica's scheduler serves for slot `s`: the record's sizes and arrival,
/// the prefix (of `prefix_tokens` tokens when it has one).
serving::Request request_of(const Slot& s, std::int64_t prefix_tokens);

/// Slots by request id in chunks that never move: the router adds chunks as it issues
/// requests; replicas read chunks added in earlier windows.
class RecordTable {
public:
    static constexpr unsigned kShift = 16;
    static constexpr std::uint64_t kChunk = std::uint64_t{1} << kShift;

    RecordTable() : chunks_(std::size_t{1} << (32 - kShift)) {}
    Slot& at(std::uint64_t id) { return chunks_[id >> kShift][id & (kChunk - 1)]; }
    const Slot& at(std::uint64_t id) const { return chunks_[id >> kShift][id & (kChunk - 1)]; }
    void ensure(std::uint64_t id) {
        auto& c = chunks_[id >> kShift];
        if (!c) {
            c = std::make_unique<Slot[]>(kChunk);
        }
    }
    /// Frees the chunk holding `id` (none of its slots is read again).
    void release(std::uint64_t id) { chunks_[id >> kShift].reset(); }
    /// Moves the records of ids [0, n) out, freeing chunks as it goes.
    std::vector<serving::RequestRecord> take(std::uint64_t n);

private:
    std::vector<std::unique_ptr<Slot[]>> chunks_;
};

/// The records of every router shard: shard k's table and its count of issued requests.
class FleetRecords {
public:
    explicit FleetRecords(std::uint32_t shards)
        : tables_(shards), issued_(shards, 0), shard_count_(shards) {}

    std::uint32_t shards() const { return shard_count_; }
    /// Requests shard k issued so far.
    std::uint64_t issued(std::uint32_t k) const { return issued_[k]; }
    /// The id of shard k's next request.
    std::uint64_t next_id(std::uint32_t k) const { return issued_[k] * shard_count_ + k; }
    /// Counts shard k's next request (id next_id(k)) and returns its slot (fresh).
    Slot& add(std::uint32_t k) {
        const std::uint64_t local = issued_[k]++;
        tables_[k].ensure(local);
        return tables_[k].at(local);
    }
    /// The slot of request `id`: shard id mod K holds it at id / K.
    Slot& slot(std::uint64_t id) {
        if (shard_count_ == 1) {
            return tables_[0].at(id);
        }
        return tables_[id % shard_count_].at(id / shard_count_);
    }

    /// After the run: every request's record, by id, freeing the tables as it goes. With
    /// shards and closed-loop clients (`closed_loop`) the shards may stop at different ids:
    /// the records are numbered again without gaps; open-loop ids have none (checked).
    std::vector<serving::RequestRecord> take(bool closed_loop);

private:
    std::vector<RecordTable> tables_;
    std::vector<std::uint64_t> issued_;
    std::uint32_t shard_count_ = 1;
};

} // namespace trnsim::sim::detail
