#include "agent/idle_wait.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstring>

namespace fairbench::agent {
namespace {

bool Loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

bool SameHost(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace

bool IsThisMachine(const SocketAddress& addr) {
  const auto* target = reinterpret_cast<const sockaddr*>(&addr.storage);
  if (Loopback(target)) return true;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (const ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr != nullptr && SameHost(i->ifa_addr, target)) found = true;
  }
  freeifaddrs(list);
  return found;
}

IdleWait ResolveIdleWait(IdleWaitMode setting, const SocketAddress& target) {
  switch (setting) {
    case IdleWaitMode::kBlock: return IdleWait::kBlock;
    case IdleWaitMode::kNap: return IdleWait::kNap;
    case IdleWaitMode::kPoll: return IdleWait::kPoll;
    case IdleWaitMode::kAuto: break;
  }
  return IsThisMachine(target) ? IdleWait::kNap : IdleWait::kBlock;
}

}  // namespace fairbench::agent
