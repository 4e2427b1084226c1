#include "controller/cli/fetch_command.h"

#include <cstdio>

#include "api/cells.h"
#include "controller/report/html.h"
#include "controller/report/markdown.h"
#include "controller/cli/store_flag.h"
#include "controller/kube/client.h"
#include "controller/kube/kubeconfig.h"
#include "controller/store/configmap_run_store.h"
#include "controller/store/file_run_store.h"

namespace fairbench::controller {
namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "fairbench: %s\n", message.c_str());
  return code;
}

// 1 when the API server could not be reached or answered with a server
// error, 2 for everything the user has to change.
int ExitCodeFor(const Status& s) {
  return s.code() == Status::Code::kUnavailable || s.code() == Status::Code::kDeadlineExceeded ? 1 : 2;
}

}  // namespace

CLI::App* AddFetchCommand(CLI::App& app, FetchFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "fetch",
      "Copy a BenchmarkRun's record from Kubernetes into a folder (results.json, cells/, report.md, report.html)");
  cmd->add_option("run", f.run, "The BenchmarkRun's name")->required();
  cmd->add_option("-o,--output", f.output, "Directory to write")->required();
  cmd->add_option("--kubeconfig", f.kubeconfig, "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)");
  cmd->add_option("--context", f.context, "kubeconfig context (default: its current context)");
  cmd->add_option("-n,--namespace", f.ns, "The run's namespace (default: the context's)");
  cmd->add_option("--timeout", f.timeout_seconds, "Seconds per API call (default 30)")->check(CLI::Range(1, 3600));
  AddStoreOption(*cmd, f.store, "Also store the record in this result store");
  return cmd;
}

Status WriteRunFolder(const report::RunRecord& record, const std::filesystem::path& dir) {
  FileRunStore files(dir);
  if (Status s = files.Save(record); !s.ok()) return s;
  for (const report::CellRecord& c : record.cells) {
    api::Cell cell;
    cell.target = c.result.target;
    cell.scenario = c.result.scenario;
    cell.connections = c.result.connections;
    cell.repetition = c.result.repetition;
    if (Status s = files.SaveCell(cell, c); !s.ok()) return s;
  }
  if (Status s = WriteFileAtomically(dir / "report.md", report::RenderMarkdown(record)); !s.ok()) return s;
  return WriteFileAtomically(dir / "report.html", report::RenderHtml(record));
}

int RunFetchCommand(const FetchFlags& f) {
  kube::KubeconfigOptions ko;
  if (!f.kubeconfig.empty()) ko.paths = {f.kubeconfig};
  ko.context = f.context;
  auto config = kube::LoadKubeconfig(ko);
  if (!config.ok()) return Fail(2, config.status().message());
  config->timeout = std::chrono::seconds(f.timeout_seconds);
  const std::string ns = f.ns.empty() ? config->default_namespace : f.ns;
  const std::string server = config->server;
  kube::ClientOptions co;
  co.max_attempts = 3;
  auto client = kube::Client::Create(*config, co);
  if (!client.ok()) return Fail(2, client.status().message());

  ConfigMapRunStoreOptions so;
  so.ns = ns;
  so.run = f.run;
  ConfigMapRunStore store(**client, so);
  auto record = store.Load();
  if (!record.ok()) {
    const Status& s = record.status();
    if (ExitCodeFor(s) == 1) return Fail(1, "cannot reach the API server at " + server + ": " + s.message());
    return Fail(2, "run " + ns + "/" + f.run + ": " + s.message());
  }
  if (!record->has_value()) {
    auto run = (*client)->Get(kube::resources::BenchmarkRuns(), ns, f.run);
    if (!run.ok()) {
      const Status s = run.error().ToStatus();
      if (run.reason() == kube::Reason::kNotFound) {
        return Fail(2, "no BenchmarkRun " + f.run + " in namespace " + ns);
      }
      if (ExitCodeFor(s) == 1) return Fail(1, "cannot reach the API server at " + server + ": " + s.message());
      return Fail(2, "run " + ns + "/" + f.run + ": " + s.message());
    }
    std::string phase = "no phase yet";
    if (run->contains("status") && (*run)["status"].is_object()) phase = (*run)["status"].value("phase", phase);
    return Fail(2, "BenchmarkRun " + ns + "/" + f.run + " has no stored record yet (" + phase +
                       "): nothing to fetch until its first target starts");
  }
  const report::RunRecord& r = **record;
  if (Status s = WriteRunFolder(r, f.output); !s.ok()) return Fail(1, s.message());
  const std::string phase = r.run.status.phase ? std::string(api::ToString(*r.run.status.phase)) : "no phase";
  std::fprintf(stderr, "fairbench: run %s/%s (%s, %zu of %lld cells) written to %s\n", ns.c_str(), f.run.c_str(),
               phase.c_str(), r.cells.size(), static_cast<long long>(r.run.status.progress.total), f.output.c_str());
  return StoreFinishedRun(f.store, r, f.output, false) ? 0 : 1;
}

}  // namespace fairbench::controller
