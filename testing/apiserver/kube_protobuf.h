// Request bodies in Kubernetes protobuf (application/vnd.kubernetes.protobuf),
// read into the JSON objects the test API server stores, as kube-apiserver's
// create and update handlers read them: the 4 bytes "k8s\0", then a
// runtime.Unknown {typeMeta {apiVersion, kind}, raw} whose raw is the
// object's own message. client-go's typed clients send this (helm's release
// Secrets, `kubectl create namespace|secret|configmap|serviceaccount|role|
// rolebinding|clusterrole|clusterrolebinding|service|token`,
// `kubectl auth can-i`), and helm's typed deletes send DeleteOptions so.
//
// The messages are described in kube_protobuf_catalog.cc, field numbers as
// k8s.io/api and apimachinery's generated.proto give them, and each
// message's JSON is what Go's encoding/json writes for the decoded struct
// (so the server sees what a JSON client sending the same object sends):
// omitempty fields left out when zero, pointers only when set, structs
// always (a zero Time as null), bytes as base64, invalid UTF-8 as U+FFFD.
// Unknown field numbers are skipped as the generated code skips them.
//
// Errors are the real server's (handlers.transformDecodeError around the
// gogo-generated Unmarshal): 400 "Secret in version \"v1\" cannot be
// handled as a Secret: proto: wrong wireType = 0 for field Data", 400 "the
// object provided is unrecognized (must be of type Secret): unexpected EOF
// (6b387300…)" when the envelope itself is bad, a kind of another type as
// the scheme's conversion error, a custom resource as the unstructured
// typer's missing-kind error (kube-apiserver lists protobuf for custom
// resources too, so it does not answer 415 there). The one answer the real
// server does not give: a built-in kind this catalog does not describe
// (Pod, Node, Deployment, CustomResourceDefinition) answers 415, naming the
// kind, rather than be stored half-read.
//
// Stateless; the catalog is built once, thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "testing/apiserver/api_status.h"

namespace fairbench::apiserver {

inline constexpr char kProtobufMediaType[] = "application/vnd.kubernetes.protobuf";

// What a route takes: the resource's group, version and kind; custom
// resources have no protobuf form.
struct ExpectedKind {
  std::string group;
  std::string version;
  std::string kind;
  bool custom = false;
};

// The body of a create or update in its JSON form (apiVersion and kind
// from the envelope), or the Status that ends the request.
Outcome<nlohmann::json> DecodeProtobufObject(std::string_view body, const ExpectedKind& expected);

// A DELETE's body: meta/v1 DeleteOptions. Errors are 400 with the decoder's
// words (handlers.DeleteResource).
Outcome<nlohmann::json> DecodeProtobufDeleteOptions(std::string_view body);

// One message of the catalog ("core/Secret", "meta/ObjectMeta") from its
// wire bytes, without the envelope; the error is gogo's text.
Result<nlohmann::json> DecodeProtobufMessage(std::string_view type, std::string_view bytes);

// Whether the catalog describes apiVersion/kind ("v1"/"Secret").
bool ProtobufKindDescribed(const std::string& api_version, const std::string& kind);

}  // namespace fairbench::apiserver
