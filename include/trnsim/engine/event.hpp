// Events of the discrete-event engine.
//
// An event is a 32-byte trivially copyable record: when it happens, which entity handles it, a
// model-defined type tag and a small payload (a value, or an index into a model-owned pool).
// Events are stored by value in per-partition queues and outboxes: no allocation per event.
//
// Order. Events are handled in the total order of their key (time, priority class, source
// entity, per-source sequence number). The last three are packed into one 64-bit `order` word:
//
//     bits 63..58  priority class (0 first; 64 classes)
//     bits 57..32  source entity id (the entity whose handler scheduled it; 2^26 entities)
//     bits 31..0   sequence number of that source's scheduling calls (wraps after 2^32)
//
// The key depends only on the model's behaviour, never on threads, partitions or insertion
// order, so every scheduler (sequential or parallel, any partitioning) handles each entity's
// events in the same order.
#pragma once

#include "trnsim/core/units.hpp"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace trnsim::engine {

using EntityId = std::uint32_t;
using EventType = std::uint16_t;

/// Entity ids are dense integers below this bound (26 bits of the order word).
inline constexpr std::uint32_t kMaxEntities = 1u << 26;
inline constexpr std::uint32_t kPriorityClasses = 64;
/// "No pending event": later than every time.
inline constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

struct Event {
    std::int64_t time = 0;     ///< nanoseconds
    std::uint64_t order = 0;   ///< priority | source | sequence (see above)
    EntityId target = 0;
    EventType type = 0;
    std::uint16_t aux = 0;     ///< model-defined (a port, a phase)
    std::uint64_t payload = 0; ///< model-defined (a value or a pool index)

    SimTime at() const { return SimTime::from_ns(time); }
    std::uint32_t priority() const { return static_cast<std::uint32_t>(order >> 58); }
    EntityId source() const { return static_cast<EntityId>((order >> 32) & (kMaxEntities - 1)); }
    std::uint32_t sequence() const { return static_cast<std::uint32_t>(order); }
};

static_assert(sizeof(Event) == 32, "events are 32 bytes");
static_assert(std::is_trivially_copyable_v<Event>, "events are plain records");

inline constexpr std::uint64_t make_order(std::uint32_t priority, EntityId source,
                                          std::uint32_t sequence) {
    return (std::uint64_t{priority} << 58) | (std::uint64_t{source} << 32) | sequence;
}

/// The handling order: true when `a` comes before `b`.
inline bool before(const Event& a, const Event& b) {
    return a.time < b.time || (a.time == b.time && a.order < b.order);
}

} // namespace trnsim::engine
