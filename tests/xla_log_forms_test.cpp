// The trace format `xla` on the logs it meets beside exec's own: a process whose XLA pools are on
// several devices (a log of GPU_0_bfc and GPU_1_bfc), TensorFlow's log prefix (tsl's own sink,
// "2026-11-29 02:43:58.030495: I tensorflow/..."), and the replay's OOM in XLA's words. Each log
// is made from the real one in tests/data/exec/xla_log_batch4_8gib.txt (see xla_log_test.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/child_process.hpp"
#include "oomlab/error.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/trace_format.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"

namespace {

namespace fs = std::filesystem;
using oomlab::trace::Op;

constexpr std::uint64_t kFailedRequest = 5'085'851'160;

std::string fixture_text() {
  return oomlab::testing::read_text(oomlab::testing::test_data_dir() +
                                    "/exec/xla_log_batch4_8gib.txt");
}

fs::path write(const std::string& name, const std::string& text) {
  const fs::path folder = oomlab::testing::fresh_temp_folder("xla-log-forms-" + name);
  const fs::path file = folder / "xla-log.txt";
  std::ofstream(file) << text;
  return file;
}

std::string replaced(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

oomlab::trace::Trace load(const fs::path& file, std::optional<std::uint32_t> device = {}) {
  return oomlab::trace::load(file, {.device = device, .device_option = "--device "});
}

oomlab::trace::Event last(const oomlab::trace::Trace& t) {
  return t.events[t.events.size() - 1];
}

std::size_t failed(const oomlab::trace::Trace& t) {
  std::size_t n = 0;
  for (const oomlab::trace::Event e : t.events)
    n += e.op == Op::failed ? 1 : 0;
  return n;
}

// The program's pool moved to device 1, and two buffers of device 0's pool before it.
fs::path two_devices() {
  std::string body = replaced(fixture_text(), "GPU_0_bfc", "GPU_1_bfc");
  body = replaced(body, "on device 0 for BFCAllocator", "on device 1 for BFCAllocator");
  const std::string device0 =
      "I1129 02:43:58.000001     492 gpu_helpers.cc:162] XLA backend allocating 3.00GiB "
      "(3221225472 bytes) on device 0 for BFCAllocator.\n"
      "I1129 02:43:58.000002     492 bfc_allocator.cc:333] AllocateRaw GPU_0_bfc 64 alignment=64\n"
      "I1129 02:43:58.000003     492 bfc_allocator.cc:388] [mem-debug] "
      "AllocateRaw,GPU_0_bfc,64,0x7f0000000000,\n";
  return write("two", device0 + body);
}

TEST(XlaLogForms, PoolsOfSeveralDevicesAreRefusedUnlessOneIsNamed) {
  const fs::path log = two_devices();
  try {
    (void)load(log);
    FAIL() << "a log of two devices' pools read as one";
  } catch (const oomlab::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("GPU_0_bfc"), std::string::npos) << what;
    EXPECT_NE(what.find("GPU_1_bfc"), std::string::npos) << what;
    EXPECT_NE(what.find("--device 0 or --device 1"), std::string::npos) << what;
  }
  const oomlab::trace::Trace one = load(log, 1);
  EXPECT_EQ(failed(one), 1U);
  EXPECT_EQ(last(one).bytes, kFailedRequest) << "device 1's pool is the program's";
  const oomlab::RecordedSettings* settings = oomlab::trace::allocator_settings(one);
  ASSERT_NE(settings, nullptr);
  EXPECT_EQ(settings->get<oomlab::Bytes>("limit").value_or(oomlab::Bytes{}).value, 6'444'548'096U)
      << "its own set-up line, not device 0's";
  const oomlab::trace::Trace zero = load(log, 0);
  EXPECT_EQ(zero.events.size(), 1U);
  EXPECT_EQ(failed(zero), 0U);
  EXPECT_THROW((void)load(log, 7), oomlab::Error);
}

// "I1129 02:43:58.030495     492 bfc_allocator.cc:333] MESSAGE" as TensorFlow's sink writes it.
std::string tensorflow_line(const std::string& line, bool thread) {
  if (line.size() < 22 || line[0] != 'I' || line[5] != ' ') return line;
  const std::size_t close = line.find("] ");
  std::istringstream rest(line.substr(21, close - 21));
  std::string tid;
  std::string place;
  rest >> tid >> place;
  return fmt::format("2026-{}-{} {}: I{} external/local_tsl/tsl/framework/{}{}", line.substr(1, 2),
                     line.substr(3, 2), line.substr(6, 15),
                     thread ? fmt::format(" {:>7}", tid) : "", place, line.substr(close));
}

TEST(XlaLogForms, TensorFlowsPrefixReadsAsXlasWithOrWithoutItsThread) {
  const oomlab::trace::Trace absl = load(write("absl", fixture_text()));
  for (const bool thread : {false, true}) {
    std::istringstream in(fixture_text());
    std::string text;
    for (std::string line; std::getline(in, line);)
      text += tensorflow_line(line, thread) + "\n";
    const fs::path log = write(thread ? "tf-thread" : "tf", text);
    EXPECT_EQ(oomlab::trace::file_format(log), "xla") << text.substr(0, 200);
    const oomlab::trace::Trace tf = load(log);
    ASSERT_EQ(tf.events.size(), absl.events.size()) << "thread " << thread;
    EXPECT_EQ(failed(tf), 1U);
    EXPECT_EQ(last(tf).bytes, kFailedRequest);
    // Without the thread, the refusal's request is the one of its size awaiting an answer: the
    // refusal is placed and dated at the request (line 5738), not at its answer, 10 s later.
    EXPECT_EQ(last(tf).line, last(absl).line) << "thread " << thread;
    EXPECT_EQ(last(tf).line, 5738U);
    EXPECT_EQ(last(tf).t_ns, last(absl).t_ns) << "thread " << thread;
  }
}

// `run replay` on the log: the model refuses the request where XLA did, and says why in XLA's
// terms: the pool's blocks in use and the request exceed its limit, JAX's share of the card.
TEST(XlaLogForms, AReplaysOomIsWordedAsXlasPool) {
  const oomlab::cli::ChildResult r =
      oomlab::cli::run_child({oomlab::testing::oomlab_binary(), "run", "replay", "--trace",
                              oomlab::testing::test_data_dir() + "/exec/xla_log_batch4_8gib.txt",
                              "--budget", "8GiB", "--json", "-"},
                             {.timeout = std::chrono::seconds(120)});
  ASSERT_EQ(r.exit_code, 0) << r.err_tail;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  const nlohmann::json& oom = summary.at("oom");
  EXPECT_EQ(oom.at("cause"), "capacity") << oom.dump(1);
  EXPECT_NE(oom.at("advice").get<std::string>().find("XLA_PYTHON_CLIENT_MEM_FRACTION"),
            std::string::npos);
  const nlohmann::json& xla = oom.at("xla");
  ASSERT_TRUE(xla.is_object()) << oom.dump(1);
  EXPECT_TRUE(oom.at("pytorch").is_null());
  const auto limit = xla.at("allowed_bytes").get<std::uint64_t>();
  EXPECT_EQ(limit, 6'442'450'944U) << "0.75 of the 8 GiB card, in 2 MiB";
  EXPECT_GT(xla.at("allocated_bytes").get<std::uint64_t>() +
                xla.at("failed_request_bytes").get<std::uint64_t>(),
            limit);
  EXPECT_EQ(xla.at("message"),
            "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.74GiB.");
  EXPECT_TRUE(oom.at("frames").empty());
  EXPECT_FALSE(summary.at("metrics").contains("segment_calls"))
      << "the log records no segments to compare";
}

// Without the threads' ids (TensorFlow's default) two threads' requests interleave: only the
// answers say what failed, and a refusal is the one its dump and its answer of 0 say.
TEST(XlaLogForms, RequestsOfThreadsWithoutIdsAreNotTakenForRefusals) {
  const std::string prefix = "2026-11-29 02:43:58.0300";
  const auto line = [&](int us, const std::string& message) {
    return fmt::format("{}{:02d}: I external/local_tsl/tsl/framework/bfc_allocator.cc:333] {}\n",
                       prefix, us, message);
  };
  const std::string text = line(1, "AllocateRaw GPU_0_bfc 256 alignment=64") +
                           line(2, "AllocateRaw GPU_0_bfc 512 alignment=64") +
                           line(3, "[mem-debug] AllocateRaw,GPU_0_bfc,512,0x7f0000000100,") +
                           line(4, "[mem-debug] AllocateRaw,GPU_0_bfc,256,0x7f0000000000,") +
                           line(5, "AllocateRaw GPU_0_bfc 1073741824 alignment=64") +
                           line(6, "BFCAllocator dump for GPU_0_bfc") +
                           line(7, "[mem-debug] AllocateRaw,GPU_0_bfc,1073741824,0,") +
                           line(8, "[mem-debug] DeallocateRaw,GPU_0_bfc,256,0x7f0000000000,");
  const oomlab::trace::Trace t = load(write("tf-threads", text));
  EXPECT_EQ(failed(t), 1U);
  EXPECT_EQ(last(t).op, Op::failed) << "the trace stops at the refusal its dump named";
  EXPECT_EQ(last(t).bytes, 1'073'741'824U);
  EXPECT_TRUE(oomlab::trace::ends_at_failure(t));
}

// A control character in a field is shown as \xNN: a NUL would end the printed message there.
TEST(XlaLogForms, AFieldsControlCharactersAreShownInTheOneLineError) {
  const std::string line = std::string(
                               "I1129 02:43:58.030495     492 bfc_allocator.cc:388] [mem-debug] "
                               "AllocateRaw,GPU_0_bfc,8") +
                           '\0' + "0\x1b,0x10,\n";
  try {
    (void)load(write("nul", line));
    FAIL() << "a size with a NUL in it was read";
  } catch (const oomlab::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'8\\x000\\x1b' is not a number"), std::string::npos) << what;
    EXPECT_EQ(what.find('\0'), std::string::npos);
  }
}

// A FIFO named as the trace is refused at once: opening it would wait for a writer.
TEST(XlaLogForms, AFifoIsRefusedWithoutWaitingForAWriter) {
  const fs::path fifo = oomlab::testing::fresh_temp_folder("xla-log-forms-fifo") / "log";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::vector<std::string>& format :
       {std::vector<std::string>{}, std::vector<std::string>{"--format", "xla"}}) {
    std::vector<std::string> args = {
        oomlab::testing::oomlab_binary(), "run", "replay", "--trace", fifo.string(), "--no-out"};
    args.insert(args.end(), format.begin(), format.end());
    const oomlab::cli::ChildResult r =
        oomlab::cli::run_child(args, {.timeout = std::chrono::seconds(20)});
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err_tail.find("not a regular file"), std::string::npos) << r.err_tail;
  }
}

}  // namespace
