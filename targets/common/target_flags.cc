#include "targets/common/target_flags.h"

namespace fairbench::targets {

void AddTargetFlags(CLI::App& app, TargetFlags* flags) {
  app.add_option("--port", flags->port, "TCP port to listen on")->required();
  app.add_option("--host", flags->host, "address to listen on")->capture_default_str();
  app.add_option("--threads", flags->threads, "worker threads")->capture_default_str()->check(CLI::Range(1, 1024));
  app.add_option("--request-log", flags->request_log,
                 "append '<unix ms> <count>' per 100 ms interval with requests, then 'total <n>' at exit");
}

}  // namespace fairbench::targets
