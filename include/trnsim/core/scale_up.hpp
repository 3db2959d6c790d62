// How the chips of a scale-up domain (an instance, an UltraServer) are connected: shared by the
// chip description (compute), the fabric description (topology) and the hierarchy (cluster).
#pragma once

#include "trnsim/core/enum_names.hpp"

#include <array>
#include <cstdint>

namespace trnsim {

enum class ScaleUpKind : std::uint8_t {
    torus,    ///< NeuronLink rings per dimension (Trn1, Trn2; an UltraServer adds one ring)
    switched, ///< every chip of the domain through NeuronLink switches (Trn3 NeuronSwitch-v1)
};

constexpr std::array<EnumName<ScaleUpKind>, 2> enum_names(ScaleUpKind) {
    return {{
        {ScaleUpKind::torus, "torus"},
        {ScaleUpKind::switched, "switched"},
    }};
}
inline const char* to_string(ScaleUpKind v) { return enum_name(v); }

} // namespace trnsim
