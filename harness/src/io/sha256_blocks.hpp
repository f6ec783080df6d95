// SHA-256's compression function over whole 64-byte blocks, as FIPS 180-4 defines it: in
// portable C++, and with the x86 SHA extensions where the CPU has them (a file of gigabytes, a
// replay's trace, is hashed at ~2 GB/s instead of ~0.3).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace oomlab::sha256 {

using State = std::array<std::uint32_t, 8>;

void blocks_portable(State& state, const std::uint8_t* data, std::size_t blocks);
// False where the CPU (or the build) has no SHA extensions: then blocks_native must not be called.
[[nodiscard]] bool has_native();
void blocks_native(State& state, const std::uint8_t* data, std::size_t blocks);

}  // namespace oomlab::sha256
