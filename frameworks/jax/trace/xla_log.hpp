// The trace format `xla`: the log of XLA's BFC allocator that exec keeps for a JAX program
// (xla-log.txt: TF_CPP_MIN_LOG_LEVEL=0, TF_CPP_VMODULE=bfc_allocator=4), read back as the pool's
// requests and frees. Each buffer of the device's pool (GPU_<n>_bfc, the first such pool named)
// comes as "[mem-debug] AllocateRaw,GPU_0_bfc,<bytes>,<address>," and its free as "[mem-debug]
// DeallocateRaw,GPU_0_bfc,<bytes>,<address>,"; a request ("AllocateRaw GPU_0_bfc <bytes>
// alignment=<n>") failed (XLA's RESOURCE_EXHAUSTED) where the pool's dump follows it on the same
// thread ("BFCAllocator dump for GPU_0_bfc"), or where its answer's address is 0; a request with
// no answer is an error at its line (xla_log_requests.hpp), as is a [mem-debug] line not of
// these forms. Where the program asked for less than a tenth of such a
// dumped request in all after it, that request was its OOM, and the trace stops there. The pool's
// set-up line says whether it was preallocated ("XLA backend allocating ...") or grown ("XLA
// backend will use up to ..."): the backend `xla` takes that as its default. Times are the log's
// own (time of day, microseconds); the other pools (the host's, the collectives') are left out.
// The program's requests (the thread of the first) are the trace's first stream; those of the
// other threads (XLA's compiler: its autotuner's candidates, as many as it likes at each shape)
// are a second one, which a series makes apart (trace::FormatInfo::side_streams).
#pragma once

#include <filesystem>
#include <string_view>

#include "oomlab/trace.hpp"

namespace oomlab::jax {

inline constexpr const char* kXlaFormatName = "xla";

[[nodiscard]] bool is_xla_log(std::string_view head);
[[nodiscard]] trace::Trace load_xla_log(const std::filesystem::path& path,
                                        const trace::LoadOptions& options);

}  // namespace oomlab::jax
