// A replica's sequences and the lists they are on. One of the parts of ReplicaScheduler
// (scheduler.hpp describes the policy); public so that it can be tested alone.
//
// A sequence lives in a slot, reused once freed; each reuse or state change that makes older
// references stale bumps its version, so a (slot, version) pair names one sequence in one
// state. The lists: the queue to prefill (`waiting`, preempted ones at the front), the
// transferred sequences waiting to join the decode batch (`ready`, decode replica), the
// running list in admission order (the youngest last: the one preempted first), and among the
// running ones those in prefill (`prefilling`, admission order) and those joining the decode
// batch this step (`joining`).
//
// O(1) per call but ids() and erase(). Not thread-safe.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/serving/kv_cache.hpp"
#include "trnsim/serving/request.hpp"

#include <cstdint>
#include <deque>
#include <vector>

namespace trnsim::serving {

enum class SeqState : std::uint8_t { free, waiting, prefill, decode, joining };

/// One sequence. In decode without speculation (the offset form, DecodeBook) `kv` is the base
/// (the KV tokens are base + the decode counter), `generated` counts the tokens when it
/// entered decode and `own` is not kept (computed from the KV tokens when it leaves).
struct Seq {
    Request req;
    SimTime first_token = SimTime::from_ns(-1);
    std::int64_t generated = 0; ///< tokens generated (offset form: when it entered decode)
    std::int64_t target = 0;    ///< tokens this prefill covers (prompt + generated)
    std::int64_t done = 0;      ///< of them, cached or computed
    std::int64_t chunk = 0;     ///< prefill tokens of the current step
    std::int64_t own = 0;       ///< private blocks (offset form: computed from kv)
    std::int64_t kv = 0;        ///< KV tokens (offset form: the base)
    std::uint64_t admitted = 0; ///< admission order
    std::uint32_t entry = kNone; ///< its prefix cache entry (KvCache)
    std::uint32_t preemptions = 0;
    std::uint32_t spec_iterations = 0;
    std::uint32_t version = 0;
    /// Its last token came at tok, as of the decode step count tok_step (in decode
    /// without speculation: at the last decode iteration's end once a decode step ran
    /// since, TokenGapLog::last_token()).
    SimTime tok;
    std::uint64_t tok_step = 0;
    std::uint32_t prev = kNone, next = kNone; ///< running list (admission order)
    SeqState state = SeqState::free;
    bool transferred = false;
};

class SequenceTable {
public:
    /// A new sequence for `r` (state free, on no list); its slot.
    std::uint32_t add(const Request& r);
    /// Frees slot s (its sequence must be on no list).
    void free(std::uint32_t s);

    Seq& operator[](std::uint32_t s) { return seqs_[s]; }
    const Seq& operator[](std::uint32_t s) const { return seqs_[s]; }
    /// Whether (slot, version) is still the sequence it was, in decode.
    bool decoding(std::uint32_t s, std::uint32_t version) const {
        const Seq& q = seqs_[s];
        return q.version == version && q.state == SeqState::decode;
    }

    /// Running list: s joins it last (stamping its admission order), or leaves it.
    void link(std::uint32_t s);
    void unlink(std::uint32_t s);
    std::uint32_t head() const { return head_; }
    std::uint32_t tail() const { return tail_; }
    std::uint32_t next(std::uint32_t s) const { return seqs_[s].next; }
    std::int64_t running() const { return running_; }

    std::deque<std::uint32_t>& waiting() { return waiting_; }
    std::deque<std::uint32_t>& ready() { return ready_; }
    std::vector<std::uint32_t>& prefilling() { return prefilling_; }
    std::vector<std::uint32_t>& joining() { return joining_; }
    const std::vector<std::uint32_t>& prefilling() const { return prefilling_; }
    const std::vector<std::uint32_t>& joining() const { return joining_; }
    std::int64_t queued() const {
        return static_cast<std::int64_t>(waiting_.size() + ready_.size());
    }
    /// Removes s from `list` (prefilling or joining). O(list).
    static void erase(std::vector<std::uint32_t>& list, std::uint32_t s);

    /// The request ids of every sequence held, sorted.
    std::vector<std::uint64_t> ids() const;
    /// No sequence at all (slots and versions start again).
    void clear();

private:
    std::vector<Seq> seqs_;
    std::vector<std::uint32_t> free_slots_;
    std::deque<std::uint32_t> waiting_; ///< to prefill (preempted ones at the front)
    std::deque<std::uint32_t> ready_;   ///< decode replica: transferred, to join the batch
    std::uint32_t head_ = kNone, tail_ = kNone; ///< running list
    std::int64_t running_ = 0;
    std::uint64_t admissions_ = 0;
    std::vector<std::uint32_t> prefilling_; ///< in admission order
    std::vector<std::uint32_t> joining_;    ///< transferred sequences joining this step
};

} // namespace trnsim::serving
