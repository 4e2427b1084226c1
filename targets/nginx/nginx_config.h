// The nginx target's config: the template (targets/nginx/nginx.conf.in,
// compiled into the launcher) with its {{placeholders}} filled in.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace fairbench::targets {

struct NginxTargetConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int workers = 4;
  std::string dir;          // pid file, error log, access log, temp paths
  bool access_log = false;  // one "$msec" line per request in dir/access.log
  std::string echo_module = "/usr/lib/nginx/modules/ngx_http_echo_module.so";
  // HTTPS with this certificate and key (PEM files); HTTP/2 (h2 by ALPN
  // with tls, h2c with prior knowledge without).
  bool tls = false;
  bool http2 = false;
  std::string cert_file;
  std::string key_file;
};

// The template as built into this program.
std::string_view NginxConfigTemplate();

// Replaces every {{name}} in `text` with values[name]; a placeholder with no
// value is InvalidArgument (a template and launcher out of step).
Result<std::string> FillPlaceholders(std::string_view text, const std::map<std::string, std::string>& values);

Result<std::string> RenderNginxConfig(const NginxTargetConfig& config, std::string_view tmpl = NginxConfigTemplate());

}  // namespace fairbench::targets
