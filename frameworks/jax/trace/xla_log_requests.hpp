// The device pool's requests in XLA's log, each awaiting its answer. XLA's BFC allocator logs a
// request ("AllocateRaw GPU_0_bfc <bytes> alignment=<n>") and then, on the same thread, its answer
// ("[mem-debug] AllocateRaw,GPU_0_bfc,<bytes>,<address>,", address 0 where it refused): in every
// log in tests/data/exec a request is answered before its thread asks again. Where lines name
// their thread, a request awaits its thread's answer; without (TensorFlow's default), an answer is
// the earliest request of its size still awaiting one. A request whose thread asked again before
// its answer (the answers left out of the log), or still awaiting one at the log's end (the file
// cut off), is an error at its line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace oomlab::jax {

struct Request {
  std::uint64_t bytes = 0;
  std::uint64_t t_ns = 0;  // the log's clock
  std::uint64_t line = 0;
};

class PendingRequests {
 public:
  // `pool`: the pool the requests are of, for the errors' words.
  PendingRequests(const std::filesystem::path& path, std::string_view pool);

  // A request; `thread` none where its line does not name it. Error(input) where the thread's
  // last request is still awaiting its answer.
  void ask(std::optional<std::uint64_t> thread, const Request& request);
  // The thread's request the pool's dump gave up on: failed there, its answer (0) still to come.
  std::optional<Request> give_up(std::uint64_t thread);

  struct Answered {
    std::optional<Request> request;  // none where no request awaited it
    bool given_up = false;           // its request failed already, at the pool's dump
  };
  // An answer of `bytes` on `thread` (none where its line does not name it).
  Answered answer(std::optional<std::uint64_t> thread, std::uint64_t bytes);

  // Error(input) at the first request still awaiting its answer: the log ends before it.
  void check_all_answered() const;

 private:
  const std::filesystem::path& path_;
  std::string pool_;
  std::map<std::uint64_t, Request> by_thread_;
  std::set<std::uint64_t> given_up_;               // threads whose request's dump came, not its 0
  std::multimap<std::uint64_t, Request> by_size_;  // threads unknown: by bytes, earliest first
};

}  // namespace oomlab::jax
