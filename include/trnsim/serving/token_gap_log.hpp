// A replica's inter-token gaps (the ITL of metrics.hpp). One of the parts of ReplicaScheduler
// (scheduler.hpp describes when a gap is recorded); public so that it can be tested alone.
//
// Gaps are kept as (ns, count) runs, merged with the last run when equal and compacted
// (compact_gaps) every 4,096 runs: a replica's gaps take a few distinct iteration times.
//
// Each sequence stamps its last token (Seq::tok, and tok_step: the decode steps so far at
// that moment). Without speculation a sequence in decode decodes in every decode iteration,
// so once a decode step has run since its stamp its last token came at the last decode
// iteration's end (last_token()); a decode step therefore records one gap per sequence that
// entered decode since the last decode step (fresh(), checked against its stamp) and one run
// for all the others: O(1) per step plus O(1) per sequence entering decode.
//
// Not thread-safe.
#pragma once

#include "trnsim/serving/metrics.hpp"
#include "trnsim/serving/sequence_table.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::serving {

class TokenGapLog {
public:
    /// `count` gaps of `ns` (none when count <= 0).
    void record(std::int64_t ns, std::int64_t count);
    /// q's tokens came at t: a gap since its last one, and its new stamp.
    void token(Seq& q, std::int64_t t) {
        record(t - q.tok.ns(), 1);
        stamp(q, t);
    }
    /// q's last token came at t (no gap).
    void stamp(Seq& q, std::int64_t t) const {
        q.tok = SimTime::from_ns(t);
        q.tok_step = decode_steps_;
    }
    /// When q's last token came (offset-form decode included).
    std::int64_t last_token(const Seq& q) const {
        return decode_steps_ > q.tok_step ? last_decode_end_ : q.tok.ns();
    }

    /// Sequence s entered the offset-form decode (its first decode iteration is fresh).
    void fresh(std::uint32_t s, std::uint32_t version) { fresh_.push_back({s, version}); }
    /// An offset-form decode step of n iterations of d from `start`, over `decoding` sequences
    /// in decode before it (`seqs` tells which fresh ones still are): each one's first gap,
    /// then (n - 1) x `sequences` gaps of d (`sequences`: every sequence the step decodes).
    void decoded(const SequenceTable& seqs, std::int64_t start, std::int64_t d, std::int64_t n,
                 std::int64_t decoding, std::int64_t sequences);
    /// A step that decoded ended at t.
    void decode_step_ended(std::int64_t t) {
        ++decode_steps_;
        last_decode_end_ = t;
        fresh_.clear();
    }
    /// Forgets the fresh sequences (their replica failed); the gaps stay.
    void drop_fresh() { fresh_.clear(); }

    /// The gaps so far, compacted.
    std::vector<TokenGap> gaps() const;

private:
    struct Fresh {
        std::uint32_t slot;
        std::uint32_t version;
    };
    std::uint64_t decode_steps_ = 0;   ///< steps that decoded
    std::int64_t last_decode_end_ = 0; ///< the end of the last of them
    std::vector<Fresh> fresh_;         ///< entered decode since the last decode step
    std::vector<TokenGap> gaps_;
};

// Inline: once per decode step, on the scheduler's hot path.
inline void TokenGapLog::decoded(const SequenceTable& seqs, std::int64_t start, std::int64_t d,
                                 std::int64_t n, std::int64_t decoding,
                                 std::int64_t sequences) {
    // The first iteration's gaps against each sequence's previous token, then d.
    const std::int64_t t1 = start + d;
    std::int64_t fresh = 0;
    for (const Fresh& f : fresh_) {
        const Seq& q = seqs[f.slot];
        if (seqs.decoding(f.slot, f.version) && q.tok_step == decode_steps_) {
            record(t1 - q.tok.ns(), 1);
            ++fresh;
        }
    }
    record(t1 - last_decode_end_, decoding - fresh);
    record(d, (n - 1) * sequences);
}

} // namespace trnsim::serving
