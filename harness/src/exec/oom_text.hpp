// Reading the sizes that frameworks print in their OOM messages: "20.00 MiB" (PyTorch), "60.6GiB"
// and "17.79G" (TensorFlow/XLA), "1,073,741,824 bytes" (CuPy), "1.000 GiB" (Julia). Every one of
// them prints 1024-based sizes, so K/M/G/T are binary here with or without the "i".
// Internal to exec/: the lines are program output, not user input, so this is not the CLI's parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oomlab::oom_text {

struct SizeRead {
  std::uint64_t bytes = 0;
  std::size_t end = 0;  // one past the last character read
};

[[nodiscard]] inline bool contains(std::string_view text, std::string_view key) {
  return text.find(key) != std::string_view::npos;
}

// The size that starts at `at` (spaces skipped): digits with optional thousands commas and
// decimals, then an optional unit. A number without a unit is bytes. Never reads past `text`.
[[nodiscard]] std::optional<SizeRead> read_size(std::string_view text, std::size_t at);

// The size right after the first `key`; "17.79G (19104890880 bytes)" gives the exact count.
[[nodiscard]] std::optional<std::uint64_t> size_after(std::string_view text, std::string_view key);

// The size that ends just before the first `key` ("178.04 MiB" of "178.04 MiB is reserved").
[[nodiscard]] std::optional<std::uint64_t> size_before(std::string_view text, std::string_view key);

// TensorFlow's "shape[8,64,512,512] and type float": elements × the type's size.
[[nodiscard]] std::optional<std::uint64_t> tensor_bytes(std::string_view text);

// PyTorch's format_size: "512 bytes", "1.50 KiB", "178.04 MiB", "2.00 GiB".
[[nodiscard]] std::string two_decimal_size(std::uint64_t bytes);

}  // namespace oomlab::oom_text
