// FlowNetwork's groups (private to the network module; flow_network.hpp describes them): the
// groups handlers start and cancel during a window, buffered per partition until the window
// edge; the admitted groups in flight, each counting the arrivals it still waits for; and the
// completion or cancellation event each gets when its last flow has arrived.
#pragma once

#include "trnsim/network/flow_network.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace trnsim::network {

/// One flow of a group (or the group's admission token) has arrived.
struct FlowArrival {
    std::uint32_t group;
    std::int64_t when; ///< FlowGroups::kStopped for a flow stopped by a cancel
};

class FlowGroups {
public:
    /// Time of a cancel that matched a group, when none did.
    static constexpr std::int64_t kNotCancelled = -1;
    /// An arrival's time for a flow stopped by cancel().
    static constexpr std::int64_t kStopped = -1;

    /// An admitted group in flight.
    struct Group {
        engine::EntityId owner;
        engine::EventType done_type;
        std::uint64_t tag;
        std::uint32_t outstanding;
        std::int64_t arrival; ///< latest arrival so far
        /// Time of the cancel() that matched it, kNotCancelled when none.
        std::int64_t cancel_at;
        engine::EventType cancelled_type;
        bool stopped; ///< cancelled with a flow still transmitting: no completion event
    };
    /// A group started during the window, not yet admitted.
    struct Pending {
        std::int64_t start;
        engine::EntityId owner;
        engine::EventType done_type;
        std::uint64_t tag;
        std::vector<FlowSpec> owned;
        std::span<const FlowSpec> flows; ///< `owned`, or the caller's data
    };

    explicit FlowGroups(std::uint32_t partitions) : pending_(partitions), cancels_(partitions) {}

    /// FlowNetwork::start_group, start_group_view and cancel, from a handler of `partition`.
    void start(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
               engine::EventType done_type, std::uint64_t tag, std::vector<FlowSpec> flows);
    void start_view(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                    engine::EventType done_type, std::uint64_t tag,
                    std::span<const FlowSpec> flows);
    void cancel(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                std::uint64_t tag, engine::EventType cancelled_type);

    /// True when no group and no cancel is buffered.
    bool nothing_buffered() const;
    bool has_cancels() const;
    /// At the start of an edge `now`: drops the cancelled groups not yet admitted (their
    /// owners get the cancellation event now) and marks the admitted ones (their flows stop
    /// when their shards run). True when some admitted group matched.
    bool apply_cancels(std::int64_t now, const FlowNetwork::Schedule& schedule);

    /// The groups buffered per partition, in the order their handlers started them.
    const std::vector<std::vector<Pending>>& pending() const { return pending_; }
    void clear_pending() {
        for (auto& part : pending_) {
            part.clear();
        }
    }
    /// Admits a buffered group: waits for one arrival per flow plus its admission token.
    std::uint32_t admit(const Pending& p);
    /// Makes room for `more` admissions without reallocation (the shards read the groups
    /// while placement admits).
    void reserve(std::size_t more) { groups_.reserve(groups_.size() + more); }
    const Group& operator[](std::uint32_t gid) const { return groups_[gid]; }
    /// One flow (or the admission token) of group `gid` has arrived at `when`; after the last,
    /// schedules the owner's event (at `now` at the earliest) and frees the group.
    void arrive(std::uint32_t gid, std::int64_t when, std::int64_t now,
                const FlowNetwork::Schedule& schedule);
    /// Groups cancelled so far (those that had a flow still transmitting).
    std::uint64_t cancelled() const { return cancelled_; }

private:
    struct Cancel {
        std::int64_t at;
        engine::EntityId owner;
        std::uint64_t tag;
        engine::EventType cancelled_type;
        std::size_t started; ///< groups its partition had started in this window before it
    };

    std::vector<std::vector<Pending>> pending_; ///< per partition
    std::vector<std::vector<Cancel>> cancels_;  ///< per partition
    std::vector<Group> groups_;
    std::vector<std::uint32_t> free_;
    std::uint64_t cancelled_ = 0;
};

} // namespace trnsim::network
