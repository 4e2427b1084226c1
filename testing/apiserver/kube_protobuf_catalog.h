// The catalog behind kube_protobuf.h: the messages it can read, as text in
// the notation kube_protobuf_catalog.cc explains, and the top-level kinds
// (apiVersion, kind) that name one of them. Plain constants.
#pragma once

#include <string>
#include <vector>

namespace fairbench::apiserver {

const char* ProtobufCatalogText();

struct ProtobufKind {
  std::string api_version;  // "v1", "rbac.authorization.k8s.io/v1"
  std::string kind;
  std::string message;      // "core/Secret"
};
const std::vector<ProtobufKind>& ProtobufKinds();

}  // namespace fairbench::apiserver
