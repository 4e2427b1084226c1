#include "targets/nginx/nginx_config.h"

#include "targets/nginx/nginx_conf_template.h"  // generated from nginx.conf.in

namespace fairbench::targets {

std::string_view NginxConfigTemplate() { return kNginxConfTemplate; }

Result<std::string> FillPlaceholders(std::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) return Status::InvalidArgument("unterminated {{ in nginx template");
    std::string name(text.substr(open + 2, close - open - 2));
    auto it = values.find(name);
    if (it == values.end()) return Status::InvalidArgument("nginx template: no value for {{" + name + "}}");
    out.append(text.substr(pos, open - pos)).append(it->second);
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

Result<std::string> RenderNginxConfig(const NginxTargetConfig& c, std::string_view tmpl) {
  if (c.dir.empty()) return Status::InvalidArgument("nginx config: no directory");
  const bool v6 = c.host.find(':') != std::string::npos;
  std::string listen = (v6 ? "[" + c.host + "]" : c.host) + ":" + std::to_string(c.port);
  std::string tls;
  if (c.tls) {
    if (c.cert_file.empty() || c.key_file.empty())
      return Status::InvalidArgument("nginx config: TLS without a certificate");
    listen += " ssl";
    tls = "    ssl_certificate " + c.cert_file + ";\n" + "    ssl_certificate_key " + c.key_file + ";\n" +
          "    ssl_protocols TLSv1.2 TLSv1.3;\n"
          "    # Resumption across worker processes (tickets work without it).\n"
          "    ssl_session_cache shared:fairbench:10m;\n";
  }
  if (c.http2) listen += " http2";
  return FillPlaceholders(tmpl, {
                                    {"workers", std::to_string(c.workers)},
                                    {"dir", c.dir},
                                    {"listen", listen},
                                    {"tls", tls},
                                    {"echo_module", c.echo_module},
                                    {"access_log", c.access_log ? c.dir + "/access.log fairbench_count" : "off"},
                                });
}

}  // namespace fairbench::targets
