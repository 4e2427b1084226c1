// The static token file of kube-apiserver's --token-auth-file: one user per
// line, CSV "token,user,uid[,\"group1,group2\"]". The test API server takes
// the same file, so that a test can give each client an identity of its own
// (fairbench-controller a service account's, kubectl an administrator's) and
// read in the audit log who made which request. Stateless.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace fairbench::apiserver {

struct TokenUser {
  std::string token;
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
};

// The users of the file's text, in order. A line with fewer than three
// fields, or an empty token or user, is an error naming the line.
Result<std::vector<TokenUser>> ParseTokenAuthFile(const std::string& text);
Result<std::vector<TokenUser>> ReadTokenAuthFile(const std::string& path);

}  // namespace fairbench::apiserver
