// StoreSite: the pages of `fairbench serve`, read from a result store
// (controller/results/result_store.h) through its interface only, so every
// backend serves the same pages.
//
//   /                        the runs (filters: target, scenario, label=k=v
//                            (repeatable), limit), the series, a form to
//                            compare two runs
//   /runs/ID                 the run's report: report.html as `fairbench
//                            run` writes it (controller/report/html.h)
//   /runs/ID/results.json    the stored record, byte for byte
//   /series?target=&scenario=&connections=&rate=&fingerprint=
//                            one series as a chart and a table, its change
//                            points found as `history check` finds them
//                            (results/series_changes.h) at its defaults
//   /compare?a=ID&b=ID       two runs as `fairbench compare --html` shows them
//
// Every page is one self-contained HTML document: inline CSS, inline SVG,
// no script of its own, nothing loaded from elsewhere (a
// Content-Security-Policy of default-src 'none' says so), every stored
// string escaped. Failures are pages too: 404 for an unknown run or
// series, 400 naming the bad parameter, 503 with the store's message when
// the store cannot be read.
//
// Pure functions of the store's answers; a site is used by one thread at a
// time, as its store is.
#pragma once

#include <map>
#include <string>

#include "controller/results/result_store.h"

namespace fairbench::serve {

struct Page {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

// A query string's parameters, decoded (httplib::Params is this type).
using Params = std::multimap<std::string, std::string>;

class StoreSite {
 public:
  explicit StoreSite(results::ResultStore& store) : store_(store) {}

  Page Index(const Params& params);
  Page Run(const std::string& id);
  Page RunJson(const std::string& id);
  Page SeriesPage(const Params& params);
  Page Compare(const Params& params);

 private:
  results::ResultStore& store_;
};

// A page saying what went wrong, for `status`.
Page ErrorPage(int status, const std::string& message);

// For links: RFC 3986 percent-encoding of everything but the unreserved
// characters.
std::string UrlEncode(const std::string& text);

}  // namespace fairbench::serve
