#include "testing/delay_server/delay_records.h"

#include <cstdio>
#include <sstream>

namespace fairbench::testing {
namespace {

constexpr const char* kMagic = "fairbench-delay-records";
constexpr const char* kColumns = "conn seq index stalled arrived_ns sent_ns";

std::string Encode(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c > ' ' && c <= '~' && c != '%') {
      out += ch;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

bool Decode(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      *out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return false;
    *out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return true;
}

}  // namespace

std::string DelayRecords::ToText() const {
  std::string out;
  out.reserve(128 + records.size() * 40);
  out += std::string(kMagic) + " 1\n";
  out += "snapshot " + std::to_string(snapshot) + "\n";
  out += "connections " + std::to_string(connections) + "\n";
  out += "requests " + std::to_string(requests) + "\n";
  out += "served " + std::to_string(served) + "\n";
  out += "abandoned " + std::to_string(abandoned) + "\n";
  out += "dropped " + std::to_string(dropped) + "\n";
  out += std::string(kColumns) + "\n";
  for (const DelayRecord& r : records) {
    out += std::to_string(r.conn);
    out += ' ';
    out += std::to_string(r.seq);
    out += ' ';
    out += std::to_string(r.index);
    out += r.stalled ? " 1 " : " 0 ";
    out += std::to_string(r.arrived_ns);
    out += ' ';
    out += std::to_string(r.sent_ns);
    if (!r.request.empty()) {
      out += ' ';
      out += Encode(r.request);
    }
    out += '\n';
  }
  return out;
}

Result<DelayRecords> DelayRecords::FromText(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  int version = 0;
  if (!(in >> word >> version) || word != kMagic || version != 1) {
    return Status::InvalidArgument("not a delay-server records file");
  }
  DelayRecords r;
  const std::pair<const char*, uint64_t*> fields[] = {
      {"snapshot", &r.snapshot}, {"connections", &r.connections}, {"requests", &r.requests},
      {"served", &r.served},     {"abandoned", &r.abandoned},     {"dropped", &r.dropped},
  };
  for (const auto& [name, value] : fields) {
    if (!(in >> word >> *value) || word != name) {
      return Status::InvalidArgument(std::string("records file: expected '") + name + "'");
    }
  }
  std::string header;
  std::getline(in >> std::ws, header);
  if (header != kColumns) return Status::InvalidArgument("records file: expected the column line");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream cols(line);
    DelayRecord rec;
    int stalled = 0;
    std::string request;
    if (!(cols >> rec.conn >> rec.seq >> rec.index >> stalled >> rec.arrived_ns >> rec.sent_ns)) {
      return Status::InvalidArgument("records file: bad line after " + std::to_string(r.records.size()) + " records");
    }
    rec.stalled = stalled != 0;
    if (cols >> request && !Decode(request, &rec.request)) {
      return Status::InvalidArgument("records file: bad request field after " + std::to_string(r.records.size()) +
                                     " records");
    }
    r.records.push_back(std::move(rec));
  }
  return r;
}

}  // namespace fairbench::testing
