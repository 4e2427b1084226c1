// Field paths as errors print them: "spec.targets[1].name",
// "spec.placement.target.nodeSelector[\"fairbench.dev/role\"]".
//
// A map key that is a plain word ([A-Za-z0-9_-]) joins with a dot
// (".env.GOMAXPROCS"); any other key is quoted in brackets.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fairbench::api {

std::string JoinField(std::string_view path, std::string_view field);
std::string JoinIndex(std::string_view path, size_t index);
std::string JoinKey(std::string_view path, std::string_view key);
// The enclosing path: "a.b[2]" → "a.b", "a.b" → "a", "a" → "".
std::string ParentPath(std::string_view path);
// True when `path` is `ancestor` or lies inside it.
bool IsWithin(std::string_view path, std::string_view ancestor);

}  // namespace fairbench::api
