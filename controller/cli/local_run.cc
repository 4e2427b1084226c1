#include "controller/cli/local_run.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "api/cells.h"
#include "api/well_known.h"
#include "common/units.h"
#include "controller/report/html.h"
#include "controller/report/markdown.h"
#include "controller/cli/calibration.h"
#include "controller/cli/hlog_recorder.h"
#include "controller/cli/store_flag.h"
#include "controller/orchestrator/observer_fanout.h"
#include "controller/platform/docker/docker_platform.h"
#include "controller/platform/local/local_platform.h"
#include "host/process.h"
#include "controller/store/file_run_store.h"

namespace fairbench::controller {
namespace {

int BadInput(const std::string& message) {
  std::fprintf(stderr, "fairbench: %s\n", message.c_str());
  return 2;
}

// The output folder of one run: made, with logs/ and the controller's log
// in it; the record it holds checked against --resume. An exit code when
// the run cannot start.
std::optional<int> PrepareOutput(const std::string& output, bool resume, FileRunStore& store) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(output) / "logs", ec);
  if (ec) {
    std::fprintf(stderr, "fairbench: cannot create '%s': %s\n", output.c_str(), ec.message().c_str());
    return 1;
  }
  // The controller's own log goes to a file; the terminal shows progress.
  // Named by its file: a calibration's runs (calibration.h) log to their
  // own folders while the run that asked for them waits.
  const std::string log = (std::filesystem::path(output) / "logs" / "controller.log").string();
  spdlog::drop("fairbench:" + log);
  auto logger = spdlog::basic_logger_mt("fairbench:" + log, log);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  if (resume) {
    if (!store.HasRecord()) return BadInput("--resume: nothing to resume in " + output + " (no results.json)");
    // Read now, so that a broken file is bad input (exit 2) before anything starts.
    if (auto rec = store.Load(); !rec.ok()) return BadInput("--resume: " + rec.status().message());
  } else if (store.HasRecord()) {
    std::fprintf(stderr, "fairbench: %s already holds results; continue it with --resume or choose another --output\n",
                 output.c_str());
    return 2;
  }
  return std::nullopt;
}

// The platform the flags ask for, with the CPUs it gives targets and agents.
struct RunPlatform {
  std::unique_ptr<Platform> platform;
  std::vector<int> target_cpus, agent_cpus;
  // This process beside the agents, off the targets' CPUs, for the run.
  std::unique_ptr<host::ProcessPin> pin;
};

Result<RunPlatform> MakePlatform(const api::BenchmarkRun& run, const std::string& base_dir, const std::string& output,
                                 const LocalRunContext& c) {
  const RunFlags& f = c.flags;
  LocalPlatformOptions po;
  po.agent_binary = c.agent_binary;
  po.controller_address = c.controller_address;
  po.token = c.token;
  po.agent_args = c.agent_args;
  po.log_dir = (std::filesystem::path(output) / "logs").string();
  po.base_dir = base_dir;
  po.lock_file = f.lock_file;
  po.program_dir = c.program_dir;
  po.fairbench_version = FAIRBENCH_VERSION;
  po.perf_program = f.perf;
  po.target_cpus = !c.target_cpus.empty() ? c.target_cpus : run.spec.local.target_cpus.cpus;
  po.agent_cpus = !c.agent_cpus.empty() ? c.agent_cpus : run.spec.local.agent_cpus.cpus;
  po.target_stop_grace = c.target_stop_grace;
  RunPlatform out;
  if (f.platform == "docker") {
    DockerPlatformOptions dop;
    dop.docker_host = f.docker_host.empty() ? docker::DefaultDockerHost() : f.docker_host;
    dop.local = po;
    if (f.max_nofile > 0) dop.max_nofile = f.max_nofile;
    auto created = DockerPlatform::Create(dop);
    if (!created.ok()) return created.status();
    if ((*created)->removed_leftovers() > 0 && !f.quiet) {
      std::fprintf(stderr, "fairbench: removed %d container(s) left by an earlier fairbench run that is gone\n",
                   (*created)->removed_leftovers());
    }
    out.target_cpus = (*created)->target_cpus();
    out.agent_cpus = (*created)->agent_cpus();
    out.platform = std::move(*created);
    if (out.target_cpus != out.agent_cpus) out.pin = std::make_unique<host::ProcessPin>(out.agent_cpus);
    return out;
  }
  if (f.max_nofile > 0) {
    return Status::InvalidArgument(
        "--max-nofile: only with --platform docker (locally, a target's nofile is capped at this machine's hard "
        "limit, and the report says so)");
  }
  auto created = LocalPlatform::Create(po);
  if (!created.ok()) return created.status();
  out.target_cpus = (*created)->target_cpus();
  out.agent_cpus = (*created)->agent_cpus();
  out.platform = std::move(*created);
  if (out.target_cpus != out.agent_cpus) out.pin = std::make_unique<host::ProcessPin>(out.agent_cpus);
  return out;
}

// The run could not be carried out: says why; false when the next runs
// must not start either.
bool ReportRunError(const api::BenchmarkRun& run, const Status& error, FileRunStore& store, int* exit_code) {
  if (error.code() == Status::Code::kIoError) {
    // The output folder cannot be written (full, read-only…): the run
    // stopped at once; say what the last record written whole holds.
    std::string kept = "no record was written";
    if (auto stored = store.Load(); stored.ok() && stored->has_value()) {
      kept = store.results_path().string() +
             " holds the last record written whole: " + std::to_string((*stored)->cells.size()) + " of " +
             std::to_string(api::CountCells(run.spec)) +
             " cells (continue with --resume once the folder can be written)";
    } else if (!stored.ok()) {
      kept = stored.status().message();
    }
    std::fprintf(stderr, "fairbench: the run stopped: %s; %s\n", error.message().c_str(), kept.c_str());
    *exit_code = 1;
    return false;  // the next run's folder is most likely on the same disk
  }
  std::fprintf(stderr, "fairbench: %s\n", error.message().c_str());
  *exit_code = error.code() == Status::Code::kFailedPrecondition ? 2 : 1;
  return true;
}

// spec.calibration: the harness tested on this machine before the run's
// targets, the two cells' runs in OUTPUT/calibration/ (made afresh: a
// resumed run calibrates again, on the machine as it is now). A
// calibration that could not be run is recorded with its error; the run
// goes on either way.
report::CalibrationRecord Calibrate(const api::Calibration& spec, const std::string& output, const LocalRunContext& c) {
  const std::filesystem::path dir = std::filesystem::path(output) / "calibration";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "this machine");
  CalibrationSettings s;
  s.stall = spec.stall;
  s.duration = spec.duration;
  s.duration_text = FormatDuration(spec.duration);
  s.rate = spec.rate;
  s.lock_file = c.flags.lock_file;
  if (!c.flags.quiet) {
    std::fprintf(stderr, "fairbench: calibrating: a %s stall of the delay server in an open and a closed cell\n",
                 FormatDuration(spec.stall).c_str());
  }
  int exit_code = 0;
  const std::shared_ptr<spdlog::logger> log = spdlog::default_logger();  // the cells' runs set their own
  auto outcome = RunCalibration(s, dir.string(), c, c.progress, &exit_code);
  spdlog::set_default_logger(log);
  report::CalibrationRecord r;
  if (!outcome.ok()) {
    r.host = host;
    r.error = outcome.status().message();
    std::fprintf(stderr, "fairbench: the calibration could not be run: %s\n", r.error.c_str());
    return r;
  }
  r = CalibrationRecordOf(*outcome, host);
  if (!c.flags.quiet) {
    std::fprintf(stderr, "fairbench: the harness %s its calibration on %s\n", r.passed ? "passed" : "FAILED", host);
  }
  return r;
}

// The report: written next to results.json and printed.
void Report(const report::RunRecord& record, const std::string& output, const LocalRunContext& c, int* exit_code) {
  const std::string markdown = report::RenderMarkdown(record);
  for (const auto& [name, text] : {std::pair<const char*, std::string>{"report.md", markdown},
                                   std::pair<const char*, std::string>{"report.html", report::RenderHtml(record)}}) {
    if (Status s = WriteFileAtomically(std::filesystem::path(output) / name, text); !s.ok()) {
      std::fprintf(stderr, "fairbench: %s (results.json holds the whole record)\n", s.message().c_str());
      *exit_code = 1;
    }
  }
  std::fputs(markdown.c_str(), stdout);
  std::fflush(stdout);
  if (!c.flags.quiet) {
    std::fprintf(stderr, "fairbench: report in %s/report.md and report.html; every number in %s/results.json\n",
                 output.c_str(), output.c_str());
  }
  if (record.run.status.phase == api::RunPhase::kCancelled) {
    for (const api::Condition& cond : record.run.status.conditions) {
      if (cond.type == api::condition::kProgressing) std::fprintf(stderr, "fairbench: %s\n", cond.message.c_str());
    }
    *exit_code = 128 + (c.signals.first() != 0 ? c.signals.first() : SIGINT);
  } else if (record.run.status.phase != api::RunPhase::kSucceeded && *exit_code == 0) {
    *exit_code = 3;
  }
}

}  // namespace

bool CarryOutRun(const api::BenchmarkRun& run, const std::string& base_dir, size_t count, const LocalRunContext& c,
                 int* exit_code) {
  const RunFlags& f = c.flags;
  std::string output = f.output;
  if (output.empty()) {
    output = "out/" + run.metadata.name;
  } else if (count > 1) {
    output = (std::filesystem::path(output) / run.metadata.name).string();
  }
  FileRunStore store(output);
  if (auto code = PrepareOutput(output, f.resume, store)) {
    *exit_code = *code;
    return false;
  }
  auto platform = MakePlatform(run, base_dir, output, c);
  if (!platform.ok()) {
    *exit_code = BadInput(platform.status().message());
    return false;
  }

  OrchestratorOptions oo;
  oo.fairbench_version = FAIRBENCH_VERSION;
  // Each cell's intervals as HdrHistogram logs, beside the other observers.
  HlogRecorder hlogs(std::filesystem::path(output) / "hlog", "Logged with fairbench " FAIRBENCH_VERSION);
  std::vector<RunObserver*> observers{&hlogs};
  if (c.observer != nullptr) observers.insert(observers.begin(), c.observer);
  ObserverFanout fanout(std::move(observers));
  Orchestrator orchestrator(*platform->platform, c.agents, oo, &fanout);
  if (!f.quiet) {
    std::fprintf(stderr, "fairbench: run %s: %zu cells; targets on CPUs %s, agents on CPUs %s; output in %s\n",
                 run.metadata.name.c_str(), api::CountCells(run.spec), CpuListText(platform->target_cpus).c_str(),
                 CpuListText(platform->agent_cpus).c_str(), output.c_str());
  }
  std::optional<report::CalibrationRecord> calibration;
  if (run.spec.calibration && c.signals.first() == 0) calibration = Calibrate(*run.spec.calibration, output, c);
  c.running(&orchestrator);
  auto record = orchestrator.Run(run, store, f.resume);
  c.running(nullptr);
  c.progress.Finish();
  if (!record.ok()) return ReportRunError(run, record.status(), store, exit_code);
  if (calibration) {
    record->calibration = std::move(calibration);
    if (Status s = store.Save(*record); !s.ok()) return ReportRunError(run, s, store, exit_code);
  }
  Report(*record, output, c, exit_code);
  if (!StoreFinishedRun(f.store, *record, output, f.quiet) && *exit_code == 0) *exit_code = 1;
  return true;
}

}  // namespace fairbench::controller
