// `fairbench serve`'s server over HTTP, on a temporary SQLite store filled
// with records made from the store's testdata: every page's status and
// content, the stored record served byte for byte, the run page being the
// report `fairbench run` writes, the series page's change point at the run
// where the test put the step, escaping, and the errors (400, 404, 405,
// 503).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "controller/report/compare.h"
#include "controller/report/html.h"
#include "controller/results/result_store.h"
#include "controller/serve/store_server.h"
#include "controller/serve/store_site.h"
#include "testing/support/http_client.h"
#include "testing/support/postgres_server.h"
#include "testing/support/temp_dir.h"

namespace fairbench::serve {
namespace {

const std::string kLocalRun = std::string(RESULTS_TESTDATA) + "/local_run.json";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// ±1 % from a fixed sequence: the store is the same every time.
double Noise(uint64_t& state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (static_cast<double>(state >> 11) / 9007199254740992.0 * 2 - 1) * 0.01;
}

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-serve");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    db_ = dir_->File("results.db");
    template_ = nlohmann::json::parse(ReadFile(kLocalRun));
    auto store = results::OpenResultStore(db_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  // A record of the testdata's cells (beast/hello at 10 and 20
  // connections, two repetitions each) named `name`, started on day `day`
  // of November, each repetition at `rps(connections)` requests/s.
  report::RunRecord Record(const std::string& name, int day, const std::function<double(int)>& rps,
                           const std::function<void(nlohmann::json&)>& edit = {}) {
    nlohmann::json d = template_;
    char start[64], end[64];
    std::snprintf(start, sizeof start, "2026-11-%02dT02:00:00Z", day);
    std::snprintf(end, sizeof end, "2026-11-%02dT02:10:00Z", day);
    d["run"]["metadata"]["name"] = name;
    d["run"]["metadata"]["uid"] = "uid-" + name;
    d["run"]["status"]["startTime"] = start;
    d["run"]["status"]["completionTime"] = end;
    for (auto& c : d["cells"]) c["result"]["requestsPerSecond"] = rps(c["result"]["connections"].get<int>());
    if (edit) edit(d);
    auto record = report::RunRecordFromJsonText(d.dump(1), name);
    EXPECT_TRUE(record.ok()) << record.status().ToString();
    return record.ok() ? std::move(*record) : report::RunRecord{};
  }
  int64_t Store(const report::RunRecord& record) {
    auto receipt = store_->Store(record);
    EXPECT_TRUE(receipt.ok()) << receipt.status().ToString();
    return receipt.ok() ? receipt->id : 0;
  }
  void Serve(const std::string& location) {
    ServeOptions o;
    o.store = location;
    o.port = 0;
    auto s = StoreServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  testing::HttpResponse Request(const std::string& method, const std::string& path, const std::string& body = "") {
    auto c = testing::HttpConnection::Connect("127.0.0.1", static_cast<uint16_t>(server_->port()));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return {};
    EXPECT_TRUE(c->Send(testing::BuildRequest(method, path, "127.0.0.1", {}, body)).ok());
    auto r = c->ReadResponse(std::chrono::seconds(10), method == "HEAD");
    EXPECT_TRUE(r.ok()) << method << " " << path << ": " << r.status().ToString();
    return r.ok() ? std::move(*r) : testing::HttpResponse{};
  }
  testing::HttpResponse Get(const std::string& path) { return Request("GET", path); }

  std::optional<testing::TempDir> dir_;
  std::string db_;
  nlohmann::json template_;
  std::unique_ptr<results::ResultStore> store_;
  std::unique_ptr<StoreServer> server_;
};

// Catches: a run or a series missing from the front page, links that do
// not lead to the run's or the series' page, the filters of the query
// string ignored (label, target, limit), the compare form missing.
TEST_F(ServeTest, FrontPageListsTheRunsAndSeriesWithLinks) {
  const int64_t a = Store(Record(
      "nightly-a", 1, [](int) { return 10000.0; },
      [](nlohmann::json& d) { d["run"]["metadata"]["labels"]["branch"] = "main"; }));
  const int64_t b = Store(Record(
      "nightly-b", 2, [](int) { return 11000.0; },
      [](nlohmann::json& d) { d["run"]["metadata"]["labels"]["branch"] = "feature"; }));
  Serve(db_);
  testing::HttpResponse r = Get("/");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "text/html; charset=utf-8");
  for (int64_t id : {a, b}) {
    EXPECT_NE(r.body.find("<a href=\"/runs/" + std::to_string(id) + "\">"), std::string::npos) << id;
  }
  EXPECT_NE(r.body.find("nightly-a"), std::string::npos);
  EXPECT_NE(r.body.find("nightly-b"), std::string::npos);
  // The newest first.
  EXPECT_LT(r.body.find("nightly-b"), r.body.find("nightly-a"));
  EXPECT_NE(r.body.find("href=\"/series?target=beast&amp;scenario=hello&amp;connections=10\""), std::string::npos);
  EXPECT_NE(r.body.find("href=\"/series?target=beast&amp;scenario=hello&amp;connections=20\""), std::string::npos);
  EXPECT_NE(r.body.find("action=\"/compare\""), std::string::npos);

  r = Get("/?label=branch%3Dfeature");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("nightly-b"), std::string::npos);
  EXPECT_EQ(r.body.find("nightly-a"), std::string::npos);
  r = Get("/?limit=1");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("nightly-b"), std::string::npos);
  EXPECT_EQ(r.body.find("nightly-a"), std::string::npos);
  r = Get("/?target=nginx");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body.find("nightly-"), std::string::npos);
  EXPECT_NE(r.body.find("No run matches."), std::string::npos);
}

// Catches: a run page that is not the report `fairbench run` writes (the
// same renderer over the same record), a report of another run, a
// results.json that differs from the stored record by a byte or is served
// as something other than JSON.
TEST_F(ServeTest, RunPageIsTheRunsReportAndResultsJsonTheStoredRecord) {
  Store(Record("unrelated-run", 1, [](int) { return 9000.0; }));
  const report::RunRecord record = Record("nightly-7", 7, [](int c) { return c == 10 ? 12345.0 : 23456.0; });
  const int64_t id = Store(record);
  Serve(db_);

  testing::HttpResponse json = Get("/runs/" + std::to_string(id) + "/results.json");
  ASSERT_EQ(json.status, 200);
  EXPECT_EQ(json.Header("Content-Type"), "application/json");
  auto stored = store_->LoadResultsJson(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(json.body, *stored);

  testing::HttpResponse page = Get("/runs/" + std::to_string(id));
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("nightly-7"), std::string::npos);
  EXPECT_EQ(page.body.find("unrelated-run"), std::string::npos);
  // The two repetitions' requests/s as the test set them.
  EXPECT_NE(page.body.find("12,345"), std::string::npos);
  EXPECT_NE(page.body.find("23,456"), std::string::npos);
  // Without its line of links, the page is the report of the stored record.
  std::string report = page.body;
  const size_t nav = report.find("<nav style=");
  ASSERT_NE(nav, std::string::npos);
  EXPECT_NE(report.find("href=\"/runs/" + std::to_string(id) + "/results.json\"", nav), std::string::npos);
  report.erase(nav, report.find("</nav>\n", nav) + 7 - nav);
  auto parsed = report::RunRecordFromJsonText(*stored, "stored");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(report, report::RenderHtml(*parsed));

  testing::HttpResponse head = Request("HEAD", "/runs/" + std::to_string(id));
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
}

// Catches: a step not marked, marked at the wrong run or in the wrong
// direction, a change marked in a series without one, points that do not
// link to their runs, a series page that is not that series.
TEST_F(ServeTest, SeriesPageMarksTheStepWhereTheTestPutIt) {
  // 24 runs: at 10 connections 40,000 requests/s, from the 13th run on
  // 28,000 (−30 %); at 20 connections 40,000 throughout; ±1 % noise.
  uint64_t noise = 7;
  std::vector<int64_t> ids;
  for (int i = 0; i < 24; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "nightly-%02d", i);
    ids.push_back(Store(Record(name, i + 1, [&](int c) {
      return std::round((c == 10 && i >= 12 ? 28000.0 : 40000.0) * (1 + Noise(noise)));
    })));
  }
  Serve(db_);
  testing::HttpResponse r = Get("/series?target=beast&scenario=hello&connections=10");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("beast/hello at 10 connections"), std::string::npos);
  const size_t rps_chart = r.body.find("<svg class=\"series-chart\" id=\"chart-rps\"");
  const size_t p99_chart = r.body.find("<svg class=\"series-chart\" id=\"chart-p99\"");
  ASSERT_NE(rps_chart, std::string::npos);
  ASSERT_NE(p99_chart, std::string::npos);
  const std::string rps = r.body.substr(rps_chart, p99_chart - rps_chart);
  EXPECT_EQ(Count(rps, "<circle class=\"point\""), 24u);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_NE(rps.find("<a href=\"/runs/" + std::to_string(ids[i]) + "\"><circle class=\"point\" data-run=\"" +
                       std::to_string(ids[i]) + "\" data-index=\"" + std::to_string(i) + "\""),
              std::string::npos)
        << i;
  }
  ASSERT_EQ(Count(rps, "<g class=\"change"), 1u) << rps;
  EXPECT_NE(rps.find("<g class=\"change regression\" data-index=\"12\" data-run=\"" + std::to_string(ids[12]) + "\">"),
            std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(rps, m, std::regex("requests/s regression −([0-9.]+) %"))) << rps;
  EXPECT_NEAR(std::stod(m[1]), 30.0, 1.0);
  // p99 stayed where it was.
  EXPECT_EQ(Count(r.body.substr(p99_chart), "<g class=\"change"), 0u);

  r = Get("/series?target=beast&scenario=hello&connections=20");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Count(r.body, "<g class=\"change"), 0u);
  EXPECT_EQ(Count(r.body, "<circle class=\"point\""), 48u);  // two charts
}

// Catches: a comparison that is not `fairbench compare`'s, the two runs
// swapped, a change of the wrong size.
TEST_F(ServeTest, ComparePageIsTheCompareReport) {
  const int64_t a = Store(Record("base-run", 1, [](int) { return 10000.0; }));
  const int64_t b = Store(Record("new-run", 2, [](int) { return 12000.0; }));
  Serve(db_);
  testing::HttpResponse r = Get("/compare?a=" + std::to_string(a) + "&b=" + std::to_string(b));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("run " + std::to_string(a) + " (base-run)"), std::string::npos);
  EXPECT_NE(r.body.find("run " + std::to_string(b) + " (new-run)"), std::string::npos);
  EXPECT_NE(r.body.find("+20.0 %"), std::string::npos);  // 12,000 / 10,000
  std::string page = r.body;
  const size_t nav = page.find("<nav style=");
  ASSERT_NE(nav, std::string::npos);
  page.erase(nav, page.find("</nav>\n", nav) + 7 - nav);
  auto base = report::RunRecordFromJsonText(*store_->LoadResultsJson(a), "a");
  auto next = report::RunRecordFromJsonText(*store_->LoadResultsJson(b), "b");
  ASSERT_TRUE(base.ok() && next.ok());
  auto c = report::Compare(*base, *next);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(page, report::RenderHtml(report::CompareDocument(*c, "run " + std::to_string(a) + " (base-run)",
                                                             "run " + std::to_string(b) + " (new-run)", {})));
}

// Catches: an unknown run answered with 200 or 500, a bad parameter not
// named, a page that is not there answered with anything but 404, a
// method that writes accepted (or answered 404 instead of 405).
TEST_F(ServeTest, ErrorsNameWhatIsWrong) {
  const int64_t id = Store(Record("only", 1, [](int) { return 10000.0; }));
  Serve(db_);
  struct Case {
    std::string path;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"/runs/999", 404, "no run 999"},
      {"/runs/999/results.json", 404, "no run 999"},
      {"/runs/abc", 400, "parameter &#39;run&#39;"},
      {"/runs/-1", 400, "parameter &#39;run&#39;"},
      {"/series?scenario=hello&connections=10", 400, "parameter &#39;target&#39;"},
      {"/series?target=beast&connections=10", 400, "parameter &#39;scenario&#39;"},
      {"/series?target=beast&scenario=hello", 400, "parameter &#39;connections&#39;"},
      {"/series?target=beast&scenario=hello&connections=ten", 400, "parameter &#39;connections&#39;"},
      {"/series?target=beast&scenario=hello&connections=10&rate=x", 400, "parameter &#39;rate&#39;"},
      {"/series?target=beast&scenario=hello&connections=10&fingerprint=zz", 400, "parameter &#39;fingerprint&#39;"},
      {"/series?target=beast&scenario=hello&connections=10&fingerprint=0000", 404, "under fingerprint 0000"},
      {"/series?target=nginx&scenario=hello&connections=10", 404, "nginx/hello at 10 connections"},
      {"/compare?a=" + std::to_string(id), 400, "parameter &#39;b&#39;"},
      {"/compare?a=x&b=1", 400, "parameter &#39;a&#39;"},
      {"/compare?a=" + std::to_string(id) + "&b=777", 404, "no run 777"},
      {"/?limit=many", 400, "parameter &#39;limit&#39;"},
      {"/?label=nokey", 400, "parameter &#39;label&#39;"},
      {"/no/such/page", 404, "no page /no/such/page"},
  };
  for (const Case& c : cases) {
    testing::HttpResponse r = Get(c.path);
    EXPECT_EQ(r.status, c.status) << c.path << ": " << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.path << ": " << r.body;
    EXPECT_EQ(r.Header("Content-Type"), "text/html; charset=utf-8") << c.path;
  }
  // With a body and without one; then a GET on the same connection, so a
  // body left unread would show up as a broken request.
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"}) {
    for (const std::string body : {"{}", ""}) {
      auto c = testing::HttpConnection::Connect("127.0.0.1", static_cast<uint16_t>(server_->port()));
      ASSERT_TRUE(c.ok());
      auto r = c->RoundTrip(testing::BuildRequest(method, "/runs/" + std::to_string(id), "127.0.0.1", {}, body));
      ASSERT_TRUE(r.ok()) << method << ": " << r.status().ToString();
      EXPECT_EQ(r->status, 405) << method << " with body '" << body << "': " << r->body;
      EXPECT_EQ(r->Header("Allow"), "GET, HEAD") << method;
      auto next =
          c->RoundTrip(testing::BuildRequest("GET", "/runs/" + std::to_string(id) + "/results.json", "127.0.0.1"));
      ASSERT_TRUE(next.ok()) << method << ": " << next.status().ToString();
      EXPECT_EQ(next->status, 200) << method << " with body '" << body << "'";
    }
  }
  {
    // A POST without Content-Length (curl -X POST): no body, still 405.
    auto c = testing::HttpConnection::Connect("127.0.0.1", static_cast<uint16_t>(server_->port()));
    ASSERT_TRUE(c.ok());
    auto r = c->RoundTrip("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 405) << r->body;
  }
  // Still there, unchanged.
  EXPECT_EQ(Get("/runs/" + std::to_string(id)).status, 200);
}

// Catches: a stored string written into a page unescaped — a label value
// (front page) and an environment note (the run's report) holding markup.
TEST_F(ServeTest, EscapesWhatTheRunsRecorded) {
  report::RunRecord record = Record("escapes", 1, [](int) { return 10000.0; });
  record.run.metadata.labels["note"] = "<script>alert(1)</script>";
  record.environment.notes.push_back("<script>alert(2)</script>");
  const int64_t id = Store(record);
  Serve(db_);
  testing::HttpResponse r = Get("/");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(r.body.find("note=&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  r = Get("/runs/" + std::to_string(id));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("<script>alert(2)"), std::string::npos);
  EXPECT_NE(r.body.find("&lt;script&gt;alert(2)&lt;/script&gt;"), std::string::npos);
  // In a parameter echoed back in an error, and in a path that is no page.
  r = Get("/runs/%3Cscript%3Ealert(3)");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body.find("<script>alert(3)"), std::string::npos);
  EXPECT_NE(r.body.find("&lt;script&gt;alert(3)"), std::string::npos);
  r = Get("/runs/%3Cscript%3Ealert(4)%3C%2Fscript%3E");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body.find("<script>alert(4)"), std::string::npos);
  EXPECT_NE(r.body.find("&lt;script&gt;alert(4)&lt;/script&gt;"), std::string::npos);
}

// Catches: a store that cannot be read answered with 200, 500 or a
// dropped connection instead of 503 and the store's message; a server
// that makes an empty store where none was (serve only reads).
TEST_F(ServeTest, StoreThatCannotBeReadIs503) {
  const std::string missing = dir_->File("no-such-dir/results.db");
  Serve(missing);
  for (const char* path : {"/", "/runs/1", "/series?target=a&scenario=b&connections=1", "/compare?a=1&b=2"}) {
    testing::HttpResponse r = Get(path);
    EXPECT_EQ(r.status, 503) << path;
    EXPECT_NE(r.body.find("no-such-dir"), std::string::npos) << path << ": " << r.body;
  }
  EXPECT_FALSE(std::filesystem::exists(missing));
  const std::string not_a_store = dir_->File("garbage.db");
  std::ofstream(not_a_store) << std::string(4096, 'x');
  server_->Stop();
  Serve(not_a_store);
  EXPECT_EQ(Get("/").status, 503);
}

// Catches: a page that depends on the backend — the server reaching past
// the ResultStore interface, or reading what one backend answers
// differently (order, ids, the record's bytes). The same runs in SQLite and
// in a real PostgreSQL give the same pages, but for the store's name.
TEST_F(ServeTest, SamePagesOnPostgreSQL) {
  auto pg = testing::PostgresServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  auto url = (*pg)->CreateDatabase("serve");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  auto other = results::OpenResultStore(*url);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  uint64_t noise = 11;
  for (int i = 0; i < 12; ++i) {
    report::RunRecord r = Record("pg-" + std::to_string(i), i + 1, [&](int c) {
      return std::round((c == 10 && i >= 6 ? 30000.0 : 40000.0) * (1 + Noise(noise)));
    });
    r.run.metadata.labels["note"] = "<b>" + std::to_string(i % 2) + "</b>";
    const int64_t id = Store(r);
    auto receipt = (*other)->Store(r);
    ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
    ASSERT_EQ(receipt->id, id);
  }
  const std::vector<std::string> paths = {"/",
                                          "/?label=note%3D%3Cb%3E1%3C%2Fb%3E&limit=3",
                                          "/runs/3",
                                          "/runs/3/results.json",
                                          "/series?target=beast&scenario=hello&connections=10",
                                          "/series?target=beast&scenario=hello&connections=20",
                                          "/compare?a=2&b=9",
                                          "/runs/99",
                                          "/series?target=x&scenario=y&connections=1"};
  std::vector<testing::HttpResponse> sqlite, postgres;
  Serve(db_);
  for (const std::string& p : paths) sqlite.push_back(Get(p));
  const std::string sqlite_name = store_->Describe();
  server_->Stop();
  Serve(*url);
  for (const std::string& p : paths) postgres.push_back(Get(p));
  const std::string pg_name = (*other)->Describe();
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string expected = sqlite[i].body;
    for (size_t at = expected.find(report::EscapeHtml(sqlite_name)); at != std::string::npos;
         at = expected.find(report::EscapeHtml(sqlite_name), at + 1)) {
      expected.replace(at, report::EscapeHtml(sqlite_name).size(), report::EscapeHtml(pg_name));
    }
    EXPECT_EQ(postgres[i].status, sqlite[i].status) << paths[i];
    EXPECT_EQ(postgres[i].body, expected) << paths[i];
  }
  EXPECT_EQ(sqlite[4].status, 200);
  EXPECT_EQ(Count(sqlite[4].body, "<g class=\"change regression\" data-index=\"6\""), 1u);
}

// Catches: --listen parsed wrongly (IPv6 without brackets taken apart at
// its last colon, a port out of range accepted).
TEST(ParseListenTest, HostAndPort) {
  std::string host;
  int port = -1;
  ASSERT_TRUE(ParseListen("127.0.0.1:8089", host, port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8089);
  ASSERT_TRUE(ParseListen("[::1]:0", host, port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(ParseListen("localhost:80", host, port).ok());
  EXPECT_EQ(host, "localhost");
  for (const char* bad : {"", "8089", ":8089", "127.0.0.1:", "127.0.0.1:65536", "::1:80", "host:8a", "[::1:80"}) {
    EXPECT_FALSE(ParseListen(bad, host, port).ok()) << bad;
  }
}

// Catches: links whose query breaks on a name with '&', '=', a space or
// non-ASCII text.
TEST(UrlEncodeTest, EncodesAllButUnreserved) {
  EXPECT_EQ(UrlEncode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(UrlEncode("a&b=c d/é"), "a%26b%3Dc%20d%2F%C3%A9");
}

}  // namespace
}  // namespace fairbench::serve
