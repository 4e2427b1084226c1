#include "testing/apiserver/token_auth_file.h"

#include <fstream>
#include <sstream>

namespace fairbench::apiserver {
namespace {

// The fields of one CSV record (RFC 4180 quoting: "…" with "" inside).
Result<std::vector<std::string>> CsvFields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) return Status::InvalidArgument("an unterminated quote");
  return fields;
}

}  // namespace

Result<std::vector<TokenUser>> ParseTokenAuthFile(const std::string& text) {
  std::vector<TokenUser> users;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto fields = CsvFields(line);
    const std::string where = "token file line " + std::to_string(number);
    if (!fields.ok()) return Status::InvalidArgument(where + ": " + fields.status().message());
    if (fields->size() < 3) return Status::InvalidArgument(where + ": needs token,user,uid[,\"groups\"]");
    TokenUser u{(*fields)[0], (*fields)[1], (*fields)[2], {}};
    if (u.token.empty() || u.name.empty()) return Status::InvalidArgument(where + ": an empty token or user name");
    if (fields->size() > 3) {
      std::stringstream groups((*fields)[3]);
      std::string g;
      while (std::getline(groups, g, ',')) {
        if (!g.empty()) u.groups.push_back(g);
      }
    }
    users.push_back(std::move(u));
  }
  return users;
}

Result<std::vector<TokenUser>> ReadTokenAuthFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("token file " + path + " cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTokenAuthFile(ss.str());
}

}  // namespace fairbench::apiserver
