// A framework as the registry holds it: what it brings to oomlab, registered from its own folder
// (frameworks/NAME/) as a scenario is, with one line (OOMLAB_REGISTER_FRAMEWORK). The engine, the
// reports and the CLI name no framework: they ask the registry.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oomlab {

class Registry;
struct CacheState;

// A framework's report of running out of GPU memory, as read from one line of a program's output:
// who reported it and the figures the message carries (absent: the message does not say).
struct OomReport {
  // "PyTorch", "cuBLAS"; one dialect may name several ("TensorFlow" or "JAX/XLA" from one shared
  // allocator's log).
  std::string framework;
  std::optional<std::uint64_t> request_bytes;
  std::optional<std::uint64_t> device_total_bytes;
  std::optional<std::uint64_t> device_free_bytes;
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::uint64_t> framework_allocated_bytes;
  std::optional<std::uint64_t> framework_cached_free_bytes;  // reserved by it but unallocated
  // A pool with a limit of its own (XLA's BFC allocator): the limit, and its largest free piece.
  std::optional<std::uint64_t> framework_limit_bytes;
  std::optional<std::uint64_t> framework_largest_free_bytes;
  // An allocator that sized its own pool from the device's TOTAL memory and so cannot start under
  // a smaller budget: the setting that fixes it ("" otherwise).
  std::string sizing_setting;
  // A CUDA library's own allocation failed (its handle, its workspace): beside any framework's
  // allocator, whose cache may hold what the library could not get.
  bool library = false;
  // A failure the framework logs and then retries with less (TF/XLA's BFC allocator backs off
  // after a refused region): evidence, but not yet the failure itself.
  bool may_be_retried = false;
  // The allocator's own request of the device (its pool, a region of it: "Failed to allocate
  // device memory of ..."), not a request of the program's that its pool refused: one larger than
  // the budget says the allocator sized itself from the device's total.
  bool pool_region = false;
  // Lines after this one that may carry more of its figures (its dialect's `follow_up` reads them).
  int follow_up_lines = 0;
};

// What to do about a reporter's OOM, in its own terms ("" where it has nothing of its own: the
// engine's general words then).
struct OomAdvice {
  std::string framework;      // the reporter, as OomReport::framework names it
  std::string fragmentation;  // its cache holds enough free memory, in pieces too small
  std::string capacity;       // the program needs more than the budget holds
  // The setting that stops its allocator sizing its pool from the device's total memory.
  std::string sizing_setting;
};

// How a framework words its out-of-memory report. `recognise` reads one line (only the words the
// framework itself prints around its figures, never "memory" alone; safe on any bytes, never
// throws); `follow_up` reads a line after one it recognised and says whether it added a figure.
struct OomDialect {
  std::string name;  // "PyTorch's caching allocator", for messages
  // Asked before dialects of a lower rank: a message that quotes another's words (a CUDA error
  // inside a framework's own report) belongs to the most specific.
  int rank = 0;
  std::optional<OomReport> (*recognise)(std::string_view line) = nullptr;
  bool (*follow_up)(OomReport& report, std::string_view line) = nullptr;  // null: none come
  std::vector<OomAdvice> advice;  // for the reporters it names
  // A reporter its line cannot tell apart ("TensorFlow/XLA": the BFC allocator both share), and
  // the words in the program's command line or output that name which one it was ({"jax",
  // "JAX/XLA"}, {"tensorflow", "TensorFlow"}): where exactly one of them appears, the report is
  // that one's.
  std::string shared_reporter;
  std::vector<std::pair<std::string, std::string>> reporter_named_by;
};

// How a framework speaks of its caching allocator's state at an OOM (a CacheState whose
// `framework` is `key`). The engine's diagnosis and the reports speak of blocks in use, memory
// cached but free, segments and a pool's chunks; they ask these for the framework's own terms.
struct CacheWords {
  std::string key;    // CacheState::framework, and summary.json's oom.<key> ("pytorch")
  std::string owner;  // as a sentence names the allocator's owner ("allocated by PyTorch")
  // The environment variable its allocator's settings are spelled in ("PYTORCH_CUDA_ALLOC_CONF").
  std::string settings_variable;
  // What to do when its cache holds enough free memory for the request, in pieces it cannot
  // reuse; and when its stream-ordered pool's chunks each keep a live block.
  std::string fragmentation_advice;
  std::string pool_fragmentation_advice;
  // What to do when its blocks in use and the request exceed what it may hold (empty: the
  // engine's words, which name no setting).
  std::string capacity_advice;
  // Its allocator's backends as its record names them (summary.json's oom.<key>.backend): the
  // one with a cache of segments of its own ("native") and the stream-ordered pool ("async").
  std::string cache_backend;
  std::string pool_backend;
  std::string (*size)(std::uint64_t bytes) = nullptr;  // a size as the framework prints it
  // The message its own out-of-memory error gives for this state.
  std::string (*message)(const CacheState& cache, std::uint64_t request_bytes,
                         std::uint64_t device_free_bytes,
                         std::uint64_t device_total_bytes) = nullptr;
};

// exec's instrumentation of the framework's Python programs: a module that the start-up shim
// (sitecustomize.py, written with it into a folder first on the program's PYTHONPATH) imports in
// every Python process, running its `install()`; and why no snapshot came, read from the
// furthest status event (oomlab_shim.status) any process wrote.
struct ProgramShim {
  std::string module;       // "oomlab_pytorch_shim", written as module + ".py"
  std::string_view source;  // the module's text
  // Its status events, furthest first, each with why no snapshot was written when it is the
  // furthest any process got ({"torch", "the program imported torch but never initialised CUDA"}).
  std::vector<std::pair<std::string, std::string>> stops;
};

// One worker's failure, as a distributed job's launcher reports it in the job's output.
struct LauncherFailure {
  int rank = 0;
  std::optional<int> local_rank;
  std::optional<int> exit_code;
  std::optional<int> pid;
  std::string time;         // as the launcher printed it
  std::string error_file;   // the file the worker's error went to; empty: none
  bool root_cause = false;  // the failure the launcher names as the first
};

// Fed the job's output line by line (any bytes; never throws); keeps every failure the launcher
// reports.
class LauncherReport {
 public:
  LauncherReport() = default;
  virtual ~LauncherReport() = default;
  LauncherReport(const LauncherReport&) = delete;
  LauncherReport& operator=(const LauncherReport&) = delete;
  LauncherReport(LauncherReport&&) = delete;
  LauncherReport& operator=(LauncherReport&&) = delete;

  virtual void feed_line(std::string_view line) = 0;
  [[nodiscard]] const std::vector<LauncherFailure>& failures() const { return failures_; }
  [[nodiscard]] const LauncherFailure* root_cause() const {
    for (const LauncherFailure& f : failures_) {
      if (f.root_cause) return &f;
    }
    return nullptr;
  }

 protected:
  std::vector<LauncherFailure> failures_;
};

// A distributed job's launcher, as the framework that ships it brings it ("torchrun"): its
// report of failed workers, the error file a failure names, and the words for the rank marks
// on its workers' lines ("[rank1]: " a global rank, "[default1]:" a local one: exec's
// read_rank_marks).
struct Launcher {
  std::string name;  // "torchrun"
  std::unique_ptr<LauncherReport> (*report)() = nullptr;
  // The message of the error file a failure names; none when it is missing or not such a file.
  std::optional<std::string> (*error_message)(const std::filesystem::path& file) = nullptr;
  std::string global_mark;  // what puts a global rank's mark ("torch.distributed's traceback mark")
  std::string local_mark;   // what puts a local rank's ("torchrun --tee")
};

namespace cli {
class CommandTable;  // oomlab/command_table.hpp: the command line's commands
}
struct RunResult;       // run/run_result.hpp: a run's record, a program's too
struct ExecConfig;      // exec/exec_run.hpp: a program's run, typed
class ExecDevices;      // exec/exec_devices.hpp: the devices it runs on
struct RemedyCheck;     // run/framework_model.hpp: a rerun with the setting the model named
struct FitResult;       // run/fit.hpp: the largest value that fits
struct SeriesQuestion;  // exec/exec_fit.hpp: a trace series' answer asked of the model

// What a framework's model of its allocator answers of a program `exec` ran, from the snapshots
// its start-up shim recorded (Framework::program_shim): exec's model, --check-remedy's rerun, and
// the searches' predictions (frontier exec, fit exec, frontier exec --from).
struct ProgramModelling {
  // Whose allocator its records are of, as a sentence names it ("PyTorch": "PyTorch's allocator").
  std::string owner;
  // The trace format of the records it reads ("pytorch", "xla"): a run's model is the one whose
  // format its first snapshot (ProgramRun::snapshots) is in.
  std::string format;
  // Each snapshot of run.program through the model, into run.models (a stop ends it).
  void (*model)(RunResult& run, const std::atomic<bool>* stop) = nullptr;
  // The program run again at the same budget with the setting the model named: "" when it ran,
  // else why it did not. Runs that do not depend on each other may go at once, one on each of
  // `gpus` (each a run's devices, with its own ballast). Throws what running it throws.
  std::string (*check_remedy)(const ExecConfig& config, std::span<ExecDevices* const> gpus,
                              RunResult& run) = nullptr;
  std::string (*remedy_words)(const RemedyCheck& check) = nullptr;  // the check in one line
  // From a trace series of the program's snapshots: the largest value whose made trace completes
  // in a budget, and the smallest budget a value's made trace completes in.
  FitResult (*fit_series)(const SeriesQuestion& question) = nullptr;
  std::optional<std::uint64_t> (*frontier_series)(const SeriesQuestion& question) = nullptr;
  // Where fit exec's second run goes to the largest value the first run's requests, each grown in
  // proportion to the value (trace::TraceSeries::in_proportion), would fit, rather than to the
  // next value: where a compiler schedules a small value around what does not grow (a step
  // compiled under a tight limit), two near values cannot tell its choices from the growth. The
  // least value that is far enough (under it, the next value); 0: always the next value.
  std::uint64_t far_second_run = 0;
};

// How its users spell its allocator's settings (PyTorch's PYTORCH_CUDA_ALLOC_CONF): the backend
// whose options they are, the flag the engine's commands take them with, and the reader that
// turns them into that backend's `name=value` options (Error(usage) naming `flag`; the CLI calls
// it, the only place that parses text).
struct SettingsSpelling {
  std::string backend;  // "torch"
  std::string flag;     // "--alloc-conf"
  std::string help;     // the flag's help on the engine's commands
  std::vector<std::string> (*assignments)(std::string_view text, std::string_view flag) = nullptr;
};

// A framework whose allocator sizes itself from the device's TOTAL memory (JAX's pool: 75% of
// it by default): under a budget its program would size itself as on the whole device, not on a
// card of the budget's size. `variables` gives what to set in the program's environment so that
// it sizes itself from a card of `budget_bytes` instead, and a line that says so; `current` is
// the program's own value of a variable (none: unset), so that a setting of the user's is scaled,
// not replaced. exec sets them in every program it runs (they are the framework's alone) and
// records the line where the program's command or output names `hint`.
struct CardSizing {
  struct Variables {
    std::vector<std::pair<std::string, std::string>> set;
    std::string note;
  };
  Variables (*variables)(
      std::uint64_t budget_bytes, std::uint64_t device_total_bytes,
      const std::function<std::optional<std::string>(std::string_view)>& current) = nullptr;
  std::string hint;  // "jax"
};

// A run exec records, as ProgramLog::recording is told of it.
struct RecordedRun {
  // The value the program sees of a variable (none: unset).
  std::function<std::optional<std::string>(std::string_view)> current;
  std::filesystem::path folder;  // where the log is kept
  // A run a search predicts from: fit exec's first two runs that record, frontier exec's top run,
  // the runs of `frontier exec --from`.
  bool predicting = false;
};

// A framework whose allocator says what it held at an OOM, and what it did, only at a log level
// its users do not see by default (XLA's BFC allocator: its chunk map and pool summary at INFO,
// under JAX's TF_CPP_MIN_LOG_LEVEL=1; each request and free at VLOG 4): exec sets `set` (and,
// while it records, `record`) in the program's environment unless the user set
// `level_variable`, keeps the lines of that level (`is_log_line`) out of the output the user
// sees, copies them to `file` in the run folder, and reads them for the OOM's figures as any line.
struct ProgramLog {
  std::string level_variable;  // "TF_CPP_MIN_LOG_LEVEL"
  std::vector<std::pair<std::string, std::string>> set;
  // A line of it, given the line before when that one was the log's (null otherwise): a log line
  // may go on over the lines after it.
  bool (*is_log_line)(std::string_view line, const std::string* previous_log_line) = nullptr;
  // What else it sets while exec records the program (not under --no-snapshot), unless the user
  // set the variable: its allocator's every request and free, for a trace (format `xla`).
  std::vector<std::pair<std::string, std::string>> record;
  // What else it sets on a run it records, after `record` (whole assignments, empty for none):
  // JAX's: its compiler's account of each compiled step written beside the log, and on a run a
  // search predicts from, a compiler flag that makes the step the smallest it can be
  // (jax/exec/xla_program.hpp).
  std::vector<std::pair<std::string, std::string>> (*recording)(const RecordedRun& run) = nullptr;
  std::string file;  // "xla-log.txt"
  // The time of day a line of the log carries, or of a line of the program's stderr written by
  // the same logger (none for other lines): a run folder re-read puts the kept log back among the
  // program's output by it, as the run read them. Null: a re-read leaves the log unread.
  std::optional<std::uint64_t> (*line_time)(std::string_view line) = nullptr;
  // The log, recorded, is the run's record of the allocator (a trace of a format the framework
  // registers, its model's to read: ProgramModelling): listed with the run's snapshots, and kept
  // in the trials' snapshot folders by the searches that run without a folder of their own.
  bool is_trace = false;
  // The name the exec shim gives the framework when a process imports it (FrameworkSeen::name,
  // "jax"): the log is the run's snapshot only where one did (a TensorFlow program logs the same
  // allocator's lines).
  std::string seen_as;
};

struct Framework {
  std::string name;     // "PyTorch"
  std::string summary;  // one line, for `oomlab list`
  // What it adds to the catalogues when they are first read, after the engine's own backends and
  // formats (so that an adaptor can offer every backend it may sit over); null: nothing.
  void (*add_backends)(Registry& registry) = nullptr;
  void (*add_trace_formats)(Registry& registry) = nullptr;
  void (*add_oom_dialects)(Registry& registry) = nullptr;
  // Its own code's top folders as a Python frame names them ("torch/"): a block allocated there is
  // charged to the first frame outside them, the user's code or the library that called it.
  std::vector<std::string> packages;
  // Its own code between two calls of the user's: a frame containing one of these is left out
  // when a stack is shown ("torch/nn/modules/module.py:").
  std::vector<std::string> plumbing_frames;
  // Its recording's own machinery in a stack it recorded, by a part of the frame's name (the C++
  // unwinder that gathered the stack, "unwind::unwind", and the allocator that asked for it):
  // never the program's, so left out of the OOM record's frames and never charged a block
  // (trace::recording_frame).
  std::vector<std::string> recording_frames;
  // Set in the environment of every program `exec` runs, over any value it had: what keeps the
  // framework's memory inside the budget's account (its NVLink multicast buffers off, say).
  std::vector<std::pair<std::string, std::string>> program_environment;
  std::optional<CardSizing> card_sizing;  // none: it sizes itself from what it is given
  std::optional<ProgramLog> program_log;  // none: its OOM says all it knows at its default level
  // Where it has a caching allocator oomlab models: how its state at an OOM is worded. exec's
  // model of a program's snapshots is of the framework whose words say `models_snapshots`.
  std::optional<CacheWords> cache_words;
  bool models_snapshots = false;
  std::optional<ProgramShim> program_shim;  // none: exec does not instrument its programs
  // What its instrumentation and model add to a program's run, for `exec --help` (paragraphs,
  // each line indented as the help's are; "" none).
  std::string exec_help;
  std::optional<Launcher> launcher;                   // the distributed launcher it ships, if any
  std::optional<SettingsSpelling> settings_spelling;  // none: its options spelled as oomlab's
  std::optional<ProgramModelling> program_modelling;  // its model of what exec recorded
  // Its face on the command line: the commands it brings (PyTorch's whatif) and the flags it adds
  // to the engine's, put in the CLI's table by code of its own above the CLI; null: none.
  void (*add_commands)(cli::CommandTable& table) = nullptr;
};

}  // namespace oomlab
