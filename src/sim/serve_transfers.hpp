// The KV caches of disaggregated serving (private to the sim module; serve_layout.hpp lists
// the parts): at the end of a prefill the prompt's KV cache moves from the prefill replica's
// chips to the decode replica's as one flow per chip pair over the fabric
// (network::FlowNetwork, resolved at the window edges, docs/adr/0001); the prefill replica
// keeps its copy (a hand-off) until the decode replica releases it.
//
// A transfer is a flow group owned by the decode replica's entity, tagged with the request
// and its attempt (transfer_tag): kKvArrived when it has arrived, kKvCancelled when it was
// cancelled first. When the prefill replica fails, the decode replicas of its live hand-offs
// hear of it (kKvLost, sent by the failed replica) and note the lost transfer here; the
// arrival or the cancellation that follows matches the note.
//
// Threading: the FlowNetwork takes starts and cancels from handlers of any partition; the
// book of replica r (hand-offs, lost transfers) is touched only by r's handler.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "trnsim/network/flow_network.hpp"
#include "trnsim/sim/serve.hpp"
#include "trnsim/topology/fabric.hpp"

#include "serve_layout.hpp"

namespace trnsim::sim::detail {

/// A KV transfer's flow-group tag: the request id (< 2^32, RecordTable) and its attempt.
constexpr std::uint64_t transfer_tag(std::uint64_t request, std::uint16_t attempt) {
    return request | std::uint64_t{attempt} << 32;
}
constexpr std::uint64_t tag_request(std::uint64_t tag) { return tag & 0xffffffffu; }
constexpr std::uint16_t tag_attempt(std::uint64_t tag) {
    return static_cast<std::uint16_t>(tag >> 32);
}

/// The flows of a transfer of `bytes` from replica `from` to replica `to`: one per chip pair
/// (the first min(chips) chips of each, in order), the bytes split evenly.
std::vector<network::FlowSpec> kv_flows(const ReplicaPlacement& from, const ReplicaPlacement& to,
                                        double bytes);

class KvTransfers {
public:
    /// A KV cache held by a prefill replica for a decode replica (by hand-off).
    struct Outgoing {
        std::uint64_t request = 0;
        std::uint32_t decode = 0;
        std::uint16_t attempt = 0;
        bool live = false;
    };

    /// The flow network over `fabric` for `partitions` engine partitions (wake entity kWake,
    /// its events kWakeUp), and a book for each of `replicas` replicas.
    KvTransfers(const ServeInput& in, const topology::Fabric& fabric, std::uint32_t partitions,
                std::size_t replicas);

    /// The KV cache of `input_tokens` prompt tokens.
    double bytes_of(std::int32_t input_tokens) const {
        return static_cast<double>(kv_bytes_per_token_) * static_cast<double>(input_tokens);
    }

    /// Prefill replica `from` hands the KV cache of `request` (attempt `attempt`, `bytes`) to
    /// decode replica `to` under hand-off `handoff`, from a handler of `partition` at `now`:
    /// the flows start, and `to`'s entity gets kKvArrived when they have arrived.
    void send(std::uint32_t partition, std::int64_t now, std::uint32_t from,
              const ReplicaPlacement& from_place, std::uint32_t to,
              const ReplicaPlacement& to_place, std::uint32_t handoff, std::uint64_t request,
              std::uint16_t attempt, double bytes);
    /// The hand-offs replica r holds (live or released), by hand-off.
    const std::vector<Outgoing>& outgoing(std::uint32_t r) const { return books_[r].outgoing; }
    /// Replica r failed: its hand-offs are gone.
    void clear_outgoing(std::uint32_t r) { books_[r].outgoing.clear(); }
    /// Decode replica released hand-off `handoff` of replica r.
    void released(std::uint32_t r, std::uint32_t handoff) {
        books_[r].outgoing[handoff].live = false;
    }

    /// Decode replica r failed: the transfers on their way to it stop now (kKvCancelled).
    void cancel_incoming(std::uint32_t partition, std::int64_t now, std::uint32_t r);
    /// Decode replica r heard that the source of transfer (request, attempt) failed: its
    /// flows stop now (kKvCancelled), and the transfer is noted as lost.
    void lose(std::uint32_t partition, std::int64_t now, std::uint32_t r, std::uint64_t request,
              std::uint16_t attempt);
    /// Whether the transfer (request, attempt) to replica r was noted as lost; the note goes.
    bool take_lost(std::uint32_t r, std::uint64_t request, std::uint16_t attempt);

    void window_edge(ServeEdge& edge) { network_->resolve_at(edge, kWake); }
    /// Transfers cancelled while they still had bytes to send.
    std::uint64_t cancelled() const { return network_->groups_cancelled(); }
    network::FlowNetwork& network() { return *network_; }

private:
    struct Book {
        std::vector<Outgoing> outgoing; ///< a prefill replica's, by hand-off
        /// A decode replica: (request, attempt) of transfers whose source failed before they
        /// arrived (kKvLost); their flows are cancelled, and the entry is matched by the
        /// cancellation or, when the transfer ended first, by its arrival. An entry whose
        /// transfer had arrived before the notice is never matched.
        std::vector<std::pair<std::uint64_t, std::uint16_t>> lost;
    };

    std::int64_t kv_bytes_per_token_;
    std::unique_ptr<network::FlowNetwork> network_;
    std::vector<Book> books_;
};

} // namespace trnsim::sim::detail
