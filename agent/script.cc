#include "agent/script.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "agent/request_text.h"

namespace fairbench::agent {
namespace {

constexpr const char* kThreadMeta = "fairbench.thread";
constexpr const char* kAddrMeta = "fairbench.addr";
constexpr const char* kStatsMeta = "fairbench.stats";

// The wrk table's Lua half. Header tables match names case-insensitively
// (keys are kept in lower case, as wrk keeps them) and remember how each
// name was spelled, so that a request carries the names as the script
// wrote them.
constexpr const char* kPrelude = R"lua(
local spelled = setmetatable({}, { __mode = "k" })

local function headers_table()
  local names = {}
  local t = setmetatable({}, {
    __index = function(self, k)
      if type(k) == "string" then return rawget(self, k:lower()) end
    end,
    __newindex = function(self, k, v)
      if type(k) == "string" then
        local lower = k:lower()
        names[lower] = k
        rawset(self, lower, v)
      else
        rawset(self, k, v)
      end
    end,
  })
  spelled[t] = names
  return t
end

wrk = {
  scheme  = "http",
  host    = "localhost",
  port    = nil,
  method  = "GET",
  path    = "/",
  headers = headers_table(),
  body    = nil,
  thread  = nil,
}

-- wrk's own steps, as its wrk.lua has them: the agent calls wrk.setup in
-- the setup state and wrk.init in each thread's state, and sends what
-- wrk.request() returns when the script has no request().
function wrk.resolve(host, service)
  local addrs = wrk.lookup(host, service)
  for i = #addrs, 1, -1 do
    if not wrk.connect(addrs[i]) then
      table.remove(addrs, i)
    end
  end
  wrk.addrs = addrs
end

function wrk.setup(thread)
  thread.addr = wrk.addrs[1]
  if type(setup) == "function" then
    setup(thread)
  end
end

function wrk.init(args)
  if not wrk.headers["Host"] then
    local host = wrk.host
    local port = wrk.port
    host = host:find(":") and ("[" .. host .. "]") or host
    host = port and (host .. ":" .. port) or host
    wrk.headers["Host"] = host
  end
  if type(init) == "function" then
    init(args)
  end
  local req = wrk.format()
  wrk.request = function()
    return req
  end
end

function wrk.format(method, path, headers, body)
  method  = method  or wrk.method
  path    = path    or wrk.path
  headers = headers or wrk.headers
  body    = body    or wrk.body
  local s, n = { method .. " " .. path .. " HTTP/1.1" }, 1
  local names = spelled[headers]
  local host = false
  for name, value in pairs(headers) do
    local lower = names and name or string.lower(name)
    if lower == "host" then host = true end
    if lower ~= "content-length" then
      n = n + 1
      s[n] = (names and names[name] or name) .. ": " .. value
    end
  end
  if not host and wrk.headers.host then
    n = n + 1
    s[n] = "Host: " .. wrk.headers.host
  end
  if body then
    n = n + 1
    s[n] = "Content-Length: " .. string.len(body)
  end
  s[n + 1] = ""
  s[n + 2] = body or ""
  return table.concat(s, "\r\n")
end
)lua";

// Output of done() captured instead of printed: print, io.write,
// io.stdout:write and io.output():write append to the buffer.
constexpr const char* kCapture = R"lua(
local emit = ...
local out = {}
function out.write(self, ...)
  for i = 1, select("#", ...) do emit(tostring((select(i, ...)))) end
  return self
end
function out.flush(self) return self end
function out.close() return true end
function out.setvbuf() return true end
function out.lines() return function() return nil end end
print = function(...)
  for i = 1, select("#", ...) do
    if i > 1 then emit("\t") end
    emit(tostring((select(i, ...))))
  end
  emit("\n")
end
io.write = function(...) return out.write(out, ...) end
io.stdout = out
io.output = function() return out end
)lua";

// ---------------------------------------------------------------------------
// Errors with a place

bool HasPlace(const std::string& msg, const std::string& name) {
  if (msg.compare(0, name.size(), name) != 0 || msg.size() <= name.size() + 1 || msg[name.size()] != ':') return false;
  return std::isdigit(static_cast<unsigned char>(msg[name.size() + 1])) != 0;
}

// Message handler (stack slot 1 of every state; upvalue 1: the script's
// name): a message without the script's file:line gets the line of the
// innermost frame in the script.
// The name a script goes by in Lua (its chunk name less the "@"): its path,
// or the path's tail when Lua would cut it short.
std::string DisplayName(const std::string& name) {
  return name.size() <= 55 ? name : "..." + name.substr(name.size() - 52);
}

int MessageHandler(lua_State* L) {
  const char* name = lua_tostring(L, lua_upvalueindex(1));
  std::string msg;
  if (const char* s = lua_tostring(L, 1)) msg = s;
  else msg = std::string("(error object is a ") + luaL_typename(L, 1) + " value)";
  if (!HasPlace(msg, name)) {
    // A place in our own prelude ("wrk:NN: ") is no use to the script's author.
    if (msg.compare(0, 4, "wrk:") == 0) {
      const size_t sp = msg.find(": ");
      if (sp != std::string::npos) msg.erase(0, sp + 2);
    }
    lua_Debug ar;
    const std::string source = std::string("@") + name;
    for (int level = 0; lua_getstack(L, level, &ar) != 0; ++level) {
      if (lua_getinfo(L, "Sl", &ar) == 0) continue;
      if (ar.currentline > 0 && source == ar.source) {
        msg = std::string(name) + ":" + std::to_string(ar.currentline) + ": " + msg;
        break;
      }
    }
  }
  lua_pushlstring(L, msg.data(), msg.size());
  return 1;
}

// Calls the function below `nargs` arguments, protected; returns "" or the message.
std::string PCall(lua_State* L, int nargs, int nresults) {
  if (lua_pcall(L, nargs, nresults, 1) == 0) return "";
  std::string msg = lua_tostring(L, -1) != nullptr ? lua_tostring(L, -1) : "unknown error";
  lua_pop(L, 1);
  return msg;
}

// The line where the global function `fn` was defined ("name:line"), for
// errors about what it returned.
std::string DefinedAt(lua_State* L, const char* fn, const std::string& name) {
  lua_getglobal(L, fn);
  lua_Debug ar;
  std::string at = name;
  if (lua_isfunction(L, -1) && lua_getinfo(L, ">S", &ar) != 0) {
    at += ":" + std::to_string(ar.linedefined);
  } else {
    lua_pop(L, 1);
  }
  return at;
}

bool IsFunction(lua_State* L, const char* name) {
  lua_getglobal(L, name);
  const bool f = lua_isfunction(L, -1);
  lua_pop(L, 1);
  return f;
}

// ---------------------------------------------------------------------------
// Values between states (thread:get / thread:set)

// Pushes onto `dst` a copy of the value at `idx` of `src`; "" or why not.
std::string CopyValue(lua_State* src, int idx, lua_State* dst, int depth) {
  if (idx < 0) idx = lua_gettop(src) + idx + 1;
  if (src == dst) {  // wrk.thread:get/set in the thread's own state: the value itself
    lua_pushvalue(dst, idx);
    return "";
  }
  switch (lua_type(src, idx)) {
    case LUA_TNIL: lua_pushnil(dst); return "";
    case LUA_TBOOLEAN: lua_pushboolean(dst, lua_toboolean(src, idx)); return "";
    case LUA_TNUMBER: lua_pushnumber(dst, lua_tonumber(src, idx)); return "";
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(src, idx, &len);
      lua_pushlstring(dst, s, len);
      return "";
    }
    case LUA_TTABLE: {
      if (depth >= ScriptOptions::kMaxDepth) return "a table nested more than 64 deep (a cycle?)";
      lua_newtable(dst);
      lua_pushnil(src);
      while (lua_next(src, idx) != 0) {
        std::string err = CopyValue(src, -2, dst, depth + 1);
        if (err.empty()) {
          err = CopyValue(src, -1, dst, depth + 1);
          if (!err.empty()) lua_pop(dst, 1);
        }
        if (!err.empty()) {
          lua_pop(src, 2);
          lua_pop(dst, 1);
          return err;
        }
        lua_rawset(dst, -3);
        lua_pop(src, 1);
      }
      return "";
    }
    default: return std::string("cannot transfer a ") + luaL_typename(src, idx) + " value between threads";
  }
}

// ---------------------------------------------------------------------------
// Userdata: addresses, threads, statistics

SocketAddress* CheckAddr(lua_State* L, int idx) {
  return static_cast<SocketAddress*>(luaL_checkudata(L, idx, kAddrMeta));
}

void PushAddr(lua_State* L, const SocketAddress& a) {
  auto* p = static_cast<SocketAddress*>(lua_newuserdata(L, sizeof(SocketAddress)));
  std::memcpy(static_cast<void*>(p), &a, sizeof(SocketAddress));
  luaL_getmetatable(L, kAddrMeta);
  lua_setmetatable(L, -2);
}

int AddrToString(lua_State* L) {
  const SocketAddress* a = CheckAddr(L, 1);
  char host[NI_MAXHOST], service[NI_MAXSERV];
  const int rc = getnameinfo(reinterpret_cast<const sockaddr*>(&a->storage), a->length, host, sizeof host, service,
                             sizeof service, NI_NUMERICHOST | NI_NUMERICSERV);
  if (rc != 0) return luaL_error(L, "addr tostring failed: %s", gai_strerror(rc));
  lua_pushfstring(L, "%s:%s", host, service);
  return 1;
}

int AddrEq(lua_State* L) {
  const SocketAddress* a = CheckAddr(L, 1);
  const SocketAddress* b = CheckAddr(L, 2);
  lua_pushboolean(L, a->length == b->length && std::memcmp(&a->storage, &b->storage, a->length) == 0);
  return 1;
}

}  // namespace

// The C functions that need ScriptThread's insides.
struct ScriptApi {
  static ScriptThread* Check(lua_State* L) { return *static_cast<ScriptThread**>(luaL_checkudata(L, 1, kThreadMeta)); }
  static void Push(lua_State* L, ScriptThread* t) {
    *static_cast<ScriptThread**>(lua_newuserdata(L, sizeof(ScriptThread*))) = t;
    luaL_getmetatable(L, kThreadMeta);
    lua_setmetatable(L, -2);
  }
  static int Get(lua_State* L) {
    ScriptThread* t = Check(L);
    const char* name = luaL_checkstring(L, 2);
    lua_getglobal(t->L_, name);
    const std::string err = CopyValue(t->L_, -1, L, 0);
    lua_pop(t->L_, 1);
    if (!err.empty()) return luaL_error(L, "thread:get('%s'): %s", name, err.c_str());
    return 1;
  }
  static int Set(lua_State* L) {
    ScriptThread* t = Check(L);
    const char* name = luaL_checkstring(L, 2);
    lua_settop(L, 3);
    const std::string err = CopyValue(L, 3, t->L_, 0);
    if (!err.empty()) return luaL_error(L, "thread:set('%s'): %s", name, err.c_str());
    lua_setglobal(t->L_, name);
    return 0;
  }
  static int Stop(lua_State* L) {
    Check(L)->stop_ = true;
    return 0;
  }
  static int Index(lua_State* L) {
    ScriptThread* t = Check(L);
    const char* key = lua_tostring(L, 2);
    if (key == nullptr) return 0;
    if (std::strcmp(key, "get") == 0) lua_pushcfunction(L, &Get);
    else if (std::strcmp(key, "set") == 0) lua_pushcfunction(L, &Set);
    else if (std::strcmp(key, "stop") == 0) lua_pushcfunction(L, &Stop);
    else if (std::strcmp(key, "addr") == 0) PushAddr(L, t->address_);
    else if (std::strcmp(key, "index") == 0) lua_pushinteger(L, t->index_);
    else lua_pushnil(L);
    return 1;
  }
  static int NewIndex(lua_State* L) {
    ScriptThread* t = Check(L);
    const char* key = lua_tostring(L, 2);
    if (key != nullptr && std::strcmp(key, "addr") == 0) {
      t->address_ = *CheckAddr(L, 3);
      return 0;
    }
    return luaL_error(L, "cannot set '%s' on thread", key != nullptr ? key : luaL_typename(L, 2));
  }
};

namespace {

// A statistics object for done(): wrk's latency and requests.
struct Stats {
  uint64_t min = 0, max = 0, count = 0;
  double mean = 0, stdev = 0;
  std::vector<std::pair<uint64_t, uint64_t>> values;  // distinct value, count; ascending

  uint64_t Percentile(double p) const {
    if (count == 0) return 0;
    p = std::clamp(p, 0.0, 100.0);
    auto rank = static_cast<uint64_t>(std::llround(p / 100.0 * static_cast<double>(count)));
    rank = std::clamp<uint64_t>(rank, 1, count);
    uint64_t total = 0;
    for (const auto& [v, n] : values) {
      total += n;
      if (total >= rank) return v;
    }
    return max;
  }
};

Stats StatsOf(const Histogram& h) {
  Stats s;
  s.count = h.count();
  s.min = h.min();
  s.max = h.max();
  s.mean = h.Mean();
  s.stdev = h.Stdev();
  if (s.count == 0) return s;
  // Each bucket's value as ValueAtPercentile reports it: the highest value
  // equivalent to the bucket, within [min, max].
  for (int i = 0; i < Histogram::kCountsLen; ++i) {
    const uint64_t n = h.CountAtIndex(i);
    if (n == 0) continue;
    uint64_t v = static_cast<uint64_t>(Histogram::HighestEquivalentValue(Histogram::ValueFromIndex(i)));
    v = std::clamp(v, s.min, s.max);
    if (!s.values.empty() && s.values.back().first == v) s.values.back().second += n;
    else s.values.emplace_back(v, n);
  }
  return s;
}

Stats StatsOf(const std::vector<double>& samples) {
  Stats s;
  std::vector<uint64_t> v;
  v.reserve(samples.size());
  for (double x : samples) v.push_back(static_cast<uint64_t>(std::llround(std::max(0.0, x))));
  std::sort(v.begin(), v.end());
  s.count = v.size();
  if (v.empty()) return s;
  s.min = v.front();
  s.max = v.back();
  long double sum = 0;
  for (uint64_t x : v) sum += x;
  const long double mean = sum / v.size();
  long double sq = 0;
  for (uint64_t x : v) sq += (x - mean) * (x - mean);
  s.mean = static_cast<double>(mean);
  s.stdev = v.size() > 1 ? static_cast<double>(std::sqrt(sq / (v.size() - 1))) : 0;
  for (uint64_t x : v) {
    if (!s.values.empty() && s.values.back().first == x) ++s.values.back().second;
    else s.values.emplace_back(x, 1);
  }
  return s;
}

const Stats* CheckStats(lua_State* L) { return *static_cast<const Stats**>(luaL_checkudata(L, 1, kStatsMeta)); }

int StatsPercentile(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(CheckStats(L)->Percentile(luaL_checknumber(L, 2))));
  return 1;
}

int StatsIndex(lua_State* L) {
  const Stats* s = CheckStats(L);
  const char* key = lua_tostring(L, 2);
  if (key == nullptr) lua_pushnil(L);
  else if (std::strcmp(key, "min") == 0) lua_pushnumber(L, static_cast<lua_Number>(s->min));
  else if (std::strcmp(key, "max") == 0) lua_pushnumber(L, static_cast<lua_Number>(s->max));
  else if (std::strcmp(key, "mean") == 0) lua_pushnumber(L, s->mean);
  else if (std::strcmp(key, "stdev") == 0) lua_pushnumber(L, s->stdev);
  else if (std::strcmp(key, "count") == 0) lua_pushnumber(L, static_cast<lua_Number>(s->count));
  else if (std::strcmp(key, "percentile") == 0) lua_pushcfunction(L, &StatsPercentile);
  else lua_pushnil(L);
  return 1;
}

// stats(i): the i-th distinct value (from 1, ascending) and its count.
int StatsCall(lua_State* L) {
  const Stats* s = CheckStats(L);
  const auto i = static_cast<int64_t>(luaL_checknumber(L, 2));
  if (i < 1 || static_cast<uint64_t>(i) > s->values.size()) {
    lua_pushnumber(L, 0);
    lua_pushnumber(L, 0);
  } else {
    lua_pushnumber(L, static_cast<lua_Number>(s->values[static_cast<size_t>(i - 1)].first));
    lua_pushnumber(L, static_cast<lua_Number>(s->values[static_cast<size_t>(i - 1)].second));
  }
  return 2;
}

int StatsLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(CheckStats(L)->values.size()));
  return 1;
}

void PushStats(lua_State* L, const Stats* s) {
  *static_cast<const Stats**>(lua_newuserdata(L, sizeof(Stats*))) = s;
  luaL_getmetatable(L, kStatsMeta);
  lua_setmetatable(L, -2);
}

// ---------------------------------------------------------------------------
// wrk.lookup, wrk.connect

int WrkLookup(lua_State* L) {
  const char* host = luaL_checkstring(L, 1);
  const char* service = luaL_checkstring(L, 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host, service, &hints, &list);
  if (rc != 0) return luaL_error(L, "unable to resolve %s:%s: %s", host, service, gai_strerror(rc));
  lua_newtable(L);
  int i = 1;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    SocketAddress a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = ai->ai_addrlen;
    PushAddr(L, a);
    lua_rawseti(L, -2, i++);
  }
  freeaddrinfo(list);
  return 1;
}

// Whether a TCP connection to the address can be made (within 2 s).
int WrkConnect(lua_State* L) {
  const SocketAddress* a = CheckAddr(L, 1);
  bool ok = false;
  const int fd = ::socket(a->storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0) {
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a->storage), a->length);
    if (rc == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 2000) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ok = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
      }
    }
    ::close(fd);
  }
  lua_pushboolean(L, ok);
  return 1;
}

int CaptureEmit(lua_State* L) {
  auto* out = static_cast<std::string*>(lua_touserdata(L, lua_upvalueindex(1)));
  size_t len = 0;
  const char* s = lua_tolstring(L, 1, &len);
  if (s != nullptr) out->append(s, len);
  return 0;
}

// A new state with the script loaded; "" or the error in *err.
lua_State* NewState(const ScriptOptions& o, std::string* err) {
  lua_State* L = luaL_newstate();
  if (L == nullptr) {
    *err = o.source.name + ": cannot create a Lua state (out of memory)";
    return nullptr;
  }
  luaL_openlibs(L);
  const std::string name = DisplayName(o.source.name);
  lua_pushstring(L, name.c_str());
  lua_pushcclosure(L, &MessageHandler, 1);  // stack slot 1, for every pcall

  luaL_newmetatable(L, kAddrMeta);
  lua_pushcfunction(L, &AddrToString);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, &AddrEq);
  lua_setfield(L, -2, "__eq");
  lua_pop(L, 1);
  luaL_newmetatable(L, kThreadMeta);
  lua_pushcfunction(L, &ScriptApi::Index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, &ScriptApi::NewIndex);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);
  luaL_newmetatable(L, kStatsMeta);
  lua_pushcfunction(L, &StatsIndex);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, &StatsCall);
  lua_setfield(L, -2, "__call");
  lua_pushcfunction(L, &StatsLen);
  lua_setfield(L, -2, "__len");
  lua_pop(L, 1);

  if (luaL_loadbuffer(L, kPrelude, std::strlen(kPrelude), "=wrk") != 0 || lua_pcall(L, 0, 0, 1) != 0) {
    *err = std::string("wrk prelude: ") + lua_tostring(L, -1);
    lua_close(L);
    return nullptr;
  }
  lua_getglobal(L, "wrk");
  lua_pushstring(L, o.scheme.c_str());
  lua_setfield(L, -2, "scheme");
  lua_pushstring(L, o.host.c_str());
  lua_setfield(L, -2, "host");
  if (o.port.empty()) lua_pushnil(L);
  else lua_pushstring(L, o.port.c_str());
  lua_setfield(L, -2, "port");
  lua_pushstring(L, o.path.c_str());
  lua_setfield(L, -2, "path");
  lua_pushstring(L, o.method.c_str());
  lua_setfield(L, -2, "method");
  if (!o.body.empty()) {
    lua_pushlstring(L, o.body.data(), o.body.size());
    lua_setfield(L, -2, "body");
  }
  lua_pushcfunction(L, &WrkLookup);
  lua_setfield(L, -2, "lookup");
  lua_pushcfunction(L, &WrkConnect);
  lua_setfield(L, -2, "connect");
  lua_getfield(L, -1, "headers");
  for (const auto& [header, value] : o.headers) {
    lua_pushlstring(L, value.data(), value.size());
    lua_setfield(L, -2, header.c_str());  // through __newindex: case-insensitive
  }
  lua_pop(L, 2);

  const std::string chunk = "@" + name;
  if (luaL_loadbuffer(L, o.source.text.data(), o.source.text.size(), chunk.c_str()) != 0) {
    *err = lua_tostring(L, -1);
    lua_close(L);
    return nullptr;
  }
  if (std::string e = PCall(L, 0, 0); !e.empty()) {
    *err = e;
    lua_close(L);
    return nullptr;
  }
  return L;
}

std::string HostHeader(const ScriptOptions& o) {
  std::string host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  if (!o.port.empty()) host += ":" + o.port;
  return host;
}

// Skips the interim responses in `raw` and fills the final one's headers
// and (de-chunked) body. `raw` is a response ResponseParser accepted whole;
// whatever it holds, nothing is read outside it.
void SplitResponse(std::string_view raw, std::vector<std::pair<std::string, std::string>>* headers, std::string* body) {
  headers->clear();
  body->clear();
  size_t pos = 0;
  for (;;) {
    const size_t status_end = raw.find('\n', pos);
    if (status_end == std::string_view::npos) return;
    int code = 0;
    const size_t sp = raw.find(' ', pos);
    if (sp != std::string_view::npos && sp + 4 <= raw.size()) {
      for (size_t i = sp + 1; i < sp + 4; ++i) code = code * 10 + (raw[i] - '0');
    }
    headers->clear();
    pos = status_end + 1;
    bool chunked = false;
    for (;;) {
      const size_t nl = raw.find('\n', pos);
      if (nl == std::string_view::npos) return;
      std::string_view line = raw.substr(pos, nl - pos);
      pos = nl + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
      std::string name(line.substr(0, colon));
      if (strcasecmp(name.c_str(), "transfer-encoding") == 0 && value.find("chunked") != std::string_view::npos) {
        chunked = true;
      }
      headers->emplace_back(std::move(name), std::string(value));
    }
    if (code >= 100 && code < 200 && code != 101) continue;  // interim: the final response follows
    if (!chunked) {
      body->assign(raw.substr(pos));
      return;
    }
    for (;;) {
      const size_t nl = raw.find('\n', pos);
      if (nl == std::string_view::npos) return;
      const uint64_t size = std::strtoull(std::string(raw.substr(pos, nl - pos)).c_str(), nullptr, 16);
      pos = nl + 1;
      if (size == 0 || size > raw.size() - pos) return;
      body->append(raw.substr(pos, size));
      pos += size;
      const size_t end = raw.find('\n', pos);
      if (end == std::string_view::npos) return;
      pos = end + 1;
    }
  }
}

}  // namespace

ScriptSummary SummaryForDone(const IntervalStats& m, const EndReport& end) {
  ScriptSummary s;
  s.duration_us = static_cast<uint64_t>(std::llround(end.measure_seconds * 1e6));
  s.requests = m.counters.requests;
  s.bytes = m.counters.bytes_read;
  s.connect = m.counters.errors.connect;
  s.read = m.counters.errors.read;
  s.write = m.counters.errors.write;
  s.status = m.counters.errors.status;
  s.timeout = m.counters.errors.timeout;
  s.latency = m.latency;
  s.rate_samples = m.rate_samples;
  return s;
}

Result<ScriptSource> ReadScriptFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot read the script: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(path + ": cannot read the script");
  return ScriptSource{path, ss.str()};
}

// ---------------------------------------------------------------------------
// ScriptThread

ScriptThread::~ScriptThread() {
  if (L_ != nullptr) lua_close(L_);
}

bool ScriptThread::Fail(const std::string& message) {
  if (error_.empty()) error_ = message.empty() ? "unknown error" : message;
  return false;
}

bool ScriptThread::Call(int nargs, int nresults, const char*) {
  if (lua_pcall(L_, nargs, nresults, 1) == 0) return true;
  const char* msg = lua_tostring(L_, -1);
  Fail(msg != nullptr ? msg : "unknown error");
  lua_pop(L_, 1);
  return false;
}

bool ScriptThread::Request(std::string* text, uint32_t* count) {
  if (!error_.empty()) return false;
  lua_getglobal(L_, "request");
  if (!Call(0, 1, "request")) return false;
  size_t len = 0;
  const char* s = lua_type(L_, -1) == LUA_TSTRING ? lua_tolstring(L_, -1, &len) : nullptr;
  if (s == nullptr) {
    const std::string type = luaL_typename(L_, -1);
    lua_pop(L_, 1);
    return Fail(DefinedAt(L_, "request", chunk_name_) + ": request() returned a " + type +
                " value, not an HTTP request");
  }
  text->assign(s, len);
  lua_pop(L_, 1);
  auto n = CountRequests(*text);
  if (!n.ok()) return Fail(DefinedAt(L_, "request", chunk_name_) + ": request() returned " + n.status().message());
  *count = *n;
  return true;
}

bool ScriptThread::RequestStreams(std::vector<std::shared_ptr<const H2Request>>* streams) {
  streams->clear();
  uint32_t count = 0;
  if (!Request(&h2_text_, &count)) return false;
  auto specs = SplitRequests(h2_text_);
  if (!specs.ok())
    return Fail(DefinedAt(L_, "request", chunk_name_) + ": request() returned " + specs.status().message());
  for (const RequestSpec& spec : *specs) {
    auto r = H2Request::Build(spec, h2_scheme_, authority_);
    if (!r.ok()) {
      return Fail(DefinedAt(L_, "request", chunk_name_) +
                  ": request() returned a request HTTP/2 cannot send: " + r.status().message());
    }
    streams->push_back(std::shared_ptr<const H2Request>(std::move(*r)));
  }
  return true;
}

bool ScriptThread::ResponseRaw(int status, std::string_view raw) {
  SplitResponse(raw, &headers_, &body_);
  return Response(status, headers_, body_);
}

bool ScriptThread::Response(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                            std::string_view body) {
  if (!error_.empty()) return false;
  lua_getglobal(L_, "response");
  lua_pushinteger(L_, status);
  lua_createtable(L_, 0, static_cast<int>(headers.size()));
  for (const auto& [name, value] : headers) {
    lua_pushlstring(L_, name.data(), name.size());
    lua_pushlstring(L_, value.data(), value.size());
    lua_rawset(L_, -3);
  }
  lua_pushlstring(L_, body.data(), body.size());
  return Call(3, 0, "response");
}

bool ScriptThread::Delay(int64_t* ns) {
  if (!error_.empty()) return false;
  lua_getglobal(L_, "delay");
  if (!Call(0, 1, "delay")) return false;
  const double ms = lua_tonumber(L_, -1);  // as wrk: what is not a number is 0
  lua_pop(L_, 1);
  *ns = std::isfinite(ms) && ms > 0 ? static_cast<int64_t>(std::min(ms, 3.6e6) * 1e6) : 0;
  return true;
}

// ---------------------------------------------------------------------------
// Script

Script::~Script() {
  threads_.clear();
  if (L_ != nullptr) lua_close(L_);
}

Result<std::unique_ptr<Script>> Script::Create(const ScriptOptions& o) {
  if (o.addresses.empty()) return Status::InvalidArgument("script: no target address");
  if (o.threads == 0) return Status::InvalidArgument("script: no thread");
  std::unique_ptr<Script> script(new Script());
  std::string err;
  script->L_ = NewState(o, &err);
  if (script->L_ == nullptr) return Status::InvalidArgument(err);
  lua_State* S = script->L_;
  const std::string host = HostHeader(o);
  // wrk.addrs, which wrk.setup hands out: wrk fills it with the addresses
  // that took a connection (wrk.resolve); here the resolved ones.
  lua_getglobal(S, "wrk");
  lua_createtable(S, static_cast<int>(o.addresses.size()), 0);
  for (size_t a = 0; a < o.addresses.size(); ++a) {
    PushAddr(S, o.addresses[a]);
    lua_rawseti(S, -2, static_cast<int>(a + 1));
  }
  lua_setfield(S, -2, "addrs");
  lua_pop(S, 1);
  for (uint32_t i = 0; i < o.threads; ++i) {
    std::unique_ptr<ScriptThread> t(new ScriptThread());
    t->index_ = i;
    t->chunk_name_ = DisplayName(o.source.name);
    t->h2_scheme_ = o.h2_scheme;
    t->authority_ = host;
    t->address_ = o.addresses.front();
    t->L_ = NewState(o, &err);
    if (t->L_ == nullptr) return Status::InvalidArgument(err);
    lua_State* L = t->L_;
    lua_getglobal(L, "wrk");
    ScriptApi::Push(L, t.get());
    lua_setfield(L, -2, "thread");
    lua_pop(L, 1);

    // wrk.setup(thread) in the setup state (thread.addr, then setup()),
    // then wrk.init(args) in the thread's (Host, init(), then the static
    // request wrk.request() returns), as wrk calls them.
    lua_getglobal(S, "wrk");
    lua_getfield(S, -1, "setup");
    ScriptApi::Push(S, t.get());
    if (std::string e = PCall(S, 1, 0); !e.empty()) return Status::InvalidArgument(e);
    lua_pop(S, 1);
    lua_getglobal(L, "wrk");
    lua_getfield(L, -1, "init");
    lua_createtable(L, static_cast<int>(o.args.size()), 1);
    lua_pushstring(L, o.url.c_str());
    lua_rawseti(L, -2, 0);
    for (size_t a = 0; a < o.args.size(); ++a) {
      lua_pushstring(L, o.args[a].c_str());
      lua_rawseti(L, -2, static_cast<int>(a + 1));
    }
    if (std::string e = PCall(L, 1, 0); !e.empty()) return Status::InvalidArgument(e);
    lua_pop(L, 1);

    t->dynamic_ = IsFunction(L, "request");
    t->response_ = IsFunction(L, "response");
    t->delay_ = IsFunction(L, "delay");
    if (t->dynamic_) {
      if (i == 0) {
        // As wrk: thread 0's request() is called once now and its text
        // checked (one that is no request is bad input, found before any
        // load), and that text is not sent: the load calls request()
        // afresh for every request it sends.
        uint32_t count = 0;
        if (!t->Request(&script->checked_text_, &count)) return Status::InvalidArgument(t->error_);
        if (!o.h2_scheme.empty()) {
          // Each request of it must make an HTTP/2 stream too.
          auto specs = SplitRequests(script->checked_text_);
          for (const RequestSpec& spec : specs.ok() ? *specs : std::vector<RequestSpec>{}) {
            auto h2 = H2Request::Build(spec, o.h2_scheme, host);
            if (!h2.ok()) {
              return Status::InvalidArgument(
                  DefinedAt(L, "request", t->chunk_name_) +
                  ": request() returned a request HTTP/2 cannot send: " + h2.status().message());
            }
          }
        }
      }
    } else {
      lua_getglobal(L, "wrk");
      lua_getfield(L, -1, "request");
      if (std::string e = PCall(L, 0, 1); !e.empty()) return Status::InvalidArgument(e);
      size_t len = 0;
      const char* s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : nullptr;
      std::string text(s != nullptr ? s : "", s != nullptr ? len : 0);
      lua_pop(L, 2);
      auto specs = SplitRequests(text);
      if (!specs.ok())
        return Status::InvalidArgument(o.source.name + ": wrk.request() gave " + specs.status().message());
      BuiltRequest built;
      built.name = specs->front().method + " " + specs->front().target;
      built.head = specs->front().method == "HEAD";
      built.bytes = std::move(text);
      t->requests_.push_back(std::move(built));
      if (!o.h2_scheme.empty()) {
        auto h2 = H2Request::Build(specs->front(), o.h2_scheme, host);
        if (!h2.ok()) return Status::InvalidArgument(o.source.name + ": " + h2.status().message());
        t->h2_requests_.push_back(std::shared_ptr<const H2Request>(std::move(*h2)));
      }
    }
    script->threads_.push_back(std::move(t));
  }
  script->done_ = IsFunction(S, "done");
  return script;
}

std::string Script::FirstRequestText() const {
  const ScriptThread& t = *threads_.front();
  if (t.dynamic_) return checked_text_;
  return t.requests_.empty() ? std::string() : t.requests_.front().bytes;
}

std::string Script::LoadError() const {
  for (const auto& t : threads_) {
    if (t->failed()) return t->error();
  }
  return "";
}

Status Script::Done(const ScriptSummary& in, std::string* out) {
  if (!done_) return Status::Ok();
  lua_State* L = L_;
  if (out != nullptr) {
    if (luaL_loadbuffer(L, kCapture, std::strlen(kCapture), "=capture") != 0) {
      return Status::Internal(lua_tostring(L, -1));
    }
    lua_pushlightuserdata(L, out);
    lua_pushcclosure(L, &CaptureEmit, 1);
    if (std::string e = PCall(L, 1, 0); !e.empty()) return Status::Internal(e);
  }
  const Stats latency = StatsOf(in.latency);
  const Stats requests = StatsOf(in.rate_samples);
  lua_getglobal(L, "done");
  lua_createtable(L, 0, 4);
  auto field = [L](const char* name, uint64_t v) {
    lua_pushnumber(L, static_cast<lua_Number>(v));
    lua_setfield(L, -2, name);
  };
  field("duration", in.duration_us);
  field("requests", in.requests);
  field("bytes", in.bytes);
  lua_createtable(L, 0, 5);
  field("connect", in.connect);
  field("read", in.read);
  field("write", in.write);
  field("status", in.status);
  field("timeout", in.timeout);
  lua_setfield(L, -2, "errors");
  PushStats(L, &latency);
  PushStats(L, &requests);
  std::fflush(stdout);
  const std::string e = PCall(L, 3, 0);
  std::fflush(stdout);
  if (!e.empty()) return Status::InvalidArgument(e);
  return Status::Ok();
}

}  // namespace fairbench::agent
