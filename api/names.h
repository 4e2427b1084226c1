// The syntax of names the API accepts: Kubernetes object and label names,
// HTTP methods and header names, environment variable names.
//
// Each Check* returns an empty string when the name is valid, otherwise the
// reason, phrased to follow "FIELD: " in an error ("must be at most 63
// characters"). The rules are Kubernetes' (k8s.io/apimachinery validation)
// and RFC 9110's, so that a run valid here is valid on a cluster too.
#pragma once

#include <string>
#include <string_view>

namespace fairbench::api {

// RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
std::string CheckDnsLabel(std::string_view name);
// RFC 1123 subdomain: labels joined by '.', at most 253 characters.
std::string CheckDnsSubdomain(std::string_view name);
// Label and annotation keys: [prefix/]name, prefix a DNS subdomain, name at
// most 63 of [A-Za-z0-9_.-] starting and ending alphanumeric.
std::string CheckQualifiedName(std::string_view key);
// Label values: empty, or like the name part of a key.
std::string CheckLabelValue(std::string_view value);
// RFC 9110 token: methods ("GET") and header field names.
bool IsHttpToken(std::string_view s);
// Environment variable names: non-empty, no '=', no NUL.
std::string CheckEnvName(std::string_view name);

}  // namespace fairbench::api
