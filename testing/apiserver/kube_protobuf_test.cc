// The protobuf decoder (kube_protobuf.h) against an independent encoder:
// Google's protobuf library serialising testdata/kube_wire_test.proto (the
// field numbers of k8s.io/api's generated.proto, written out separately for
// this test), and bytes kubectl v1.32 sent. Expected JSON is what Go's
// encoding/json writes for the same object (what kubectl prints with
// --dry-run=client -o json). Then the errors in the real server's words,
// and the ApiServer's create, update and delete taking protobuf bodies.
// Each test says which change it would catch.
#include "testing/apiserver/kube_protobuf.h"

#include <gtest/gtest.h>

#include "kube_wire_test.pb.h"
#include "testing/apiserver/api_server.h"

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

std::string Envelope(const std::string& api_version, const std::string& kind, const std::string& raw) {
  kubewire::Unknown u;
  if (!api_version.empty()) u.mutable_typemeta()->set_apiversion(api_version);
  if (!kind.empty()) u.mutable_typemeta()->set_kind(kind);
  u.set_raw(raw);
  return std::string("k8s\0", 4) + u.SerializeAsString();
}

json Decoded(const std::string& body, const ExpectedKind& expected) {
  auto out = DecodeProtobufObject(body, expected);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.reply().body.dump());
  return out.ok() ? out.value() : json();
}

const ExpectedKind kSecret{"", "v1", "Secret", false};

// Catches: a catalog line naming a message that is not there, or a kind
// mapped to an undefined message (the catalog aborts on first use).
TEST(KubeProtobuf, EveryDescribedKindDecodesAnEmptyMessage) {
  for (const char* type : {"core/Namespace", "core/Secret", "core/ConfigMap", "core/ServiceAccount", "core/Service",
                           "core/Event", "rbac/Role", "rbac/ClusterRole", "rbac/RoleBinding", "rbac/ClusterRoleBinding",
                           "coordination/Lease", "authentication/TokenRequest",
                           "authorization/SelfSubjectAccessReview", "events/Event", "meta/DeleteOptions"}) {
    EXPECT_TRUE(DecodeProtobufMessage(type, "").ok()) << type;
  }
  EXPECT_TRUE(ProtobufKindDescribed("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"));
  EXPECT_FALSE(ProtobufKindDescribed("v1", "Pod"));
}

// Catches: data/stringData/type numbers swapped, bytes not base64 in
// JSON, map entries lost, a Go pointer's false dropped (immutable,
// controller), metav1.Time keeping the nanoseconds protobuf carries (it
// drops them), apiVersion/kind not taken from the envelope.
TEST(KubeProtobuf, SecretAsGooglesLibraryEncodesIt) {
  kubewire::Secret s;
  auto* md = s.mutable_metadata();
  md->set_name("release");
  md->set_namespace_("fb");
  (*md->mutable_labels())["owner"] = "helm";
  (*md->mutable_annotations())["note"] = "x";
  md->mutable_creationtimestamp()->set_seconds(1700000000);
  md->mutable_creationtimestamp()->set_nanos(999999999);
  auto* owner = md->add_ownerreferences();
  owner->set_apiversion("v1");
  owner->set_kind("ConfigMap");
  owner->set_name("o");
  owner->set_uid("u-1");
  owner->set_controller(false);
  md->add_finalizers("a/b");
  (*s.mutable_data())["bin"] = std::string("\x00\x01\xff", 3);
  (*s.mutable_data())["empty"] = "";
  (*s.mutable_stringdata())["plain"] = "text";
  s.set_type("Opaque");
  s.set_immutable(false);
  EXPECT_EQ(Decoded(Envelope("v1", "Secret", s.SerializeAsString()), kSecret), json::parse(R"({
    "apiVersion": "v1", "kind": "Secret",
    "metadata": {"name": "release", "namespace": "fb", "labels": {"owner": "helm"}, "annotations": {"note": "x"},
                 "creationTimestamp": "2023-11-14T22:13:20Z",
                 "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1",
                                      "controller": false}],
                 "finalizers": ["a/b"]},
    "data": {"bin": "AAH/", "empty": ""},
    "stringData": {"plain": "text"},
    "type": "Opaque",
    "immutable": false})"));
}

// Catches: omitempty applied to a Go pointer (automountServiceAccountToken
// false), a struct left out when absent (spec, status, roleRef: Go writes
// them), a field without omitempty dropped when empty (roleRef's, the
// Subject's kind), a zero int64 kept (generation 0 is omitted).
TEST(KubeProtobuf, PresenceAsGoWritesIt) {
  kubewire::Namespace ns;
  ns.mutable_metadata()->set_name("x");
  ns.mutable_metadata()->set_generation(0);
  EXPECT_EQ(Decoded(Envelope("v1", "Namespace", ns.SerializeAsString()), {"", "v1", "Namespace"}), json::parse(R"({
    "apiVersion": "v1", "kind": "Namespace",
    "metadata": {"name": "x", "creationTimestamp": null}, "spec": {}, "status": {}})"));

  kubewire::ServiceAccount sa;
  sa.mutable_metadata()->set_name("sa");
  sa.add_imagepullsecrets()->set_name("regcred");
  sa.set_automountserviceaccounttoken(false);
  EXPECT_EQ(Decoded(Envelope("v1", "ServiceAccount", sa.SerializeAsString()), {"", "v1", "ServiceAccount"}),
            json::parse(R"({"apiVersion": "v1", "kind": "ServiceAccount",
              "metadata": {"name": "sa", "creationTimestamp": null},
              "imagePullSecrets": [{"name": "regcred"}], "automountServiceAccountToken": false})"));

  kubewire::RoleBinding rb;
  rb.mutable_metadata()->set_name("rb");
  rb.add_subjects()->set_name("bob");
  const ExpectedKind binding{"rbac.authorization.k8s.io", "v1", "RoleBinding"};
  EXPECT_EQ(Decoded(Envelope("rbac.authorization.k8s.io/v1", "RoleBinding", rb.SerializeAsString()), binding),
            json::parse(R"({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
              "metadata": {"name": "rb", "creationTimestamp": null},
              "subjects": [{"kind": "", "name": "bob"}],
              "roleRef": {"apiGroup": "", "kind": "", "name": ""}})"));
}

// Catches: IntOrString's type ignored (a named port read as 0), a zero
// port left out (ServicePort.port has no omitempty), MicroTime's
// microseconds rounded or dropped, a pointer's zero (leaseTransitions 0,
// holderIdentity "") left out.
TEST(KubeProtobuf, IntOrStringAndMicroTime) {
  kubewire::Service svc;
  svc.mutable_metadata()->set_name("s");
  auto* named = svc.mutable_spec()->add_ports();
  named->set_name("http");
  named->set_port(80);
  named->mutable_targetport()->set_type(1);
  named->mutable_targetport()->set_strval("web");
  auto* numbered = svc.mutable_spec()->add_ports();
  numbered->set_port(0);
  numbered->mutable_targetport()->set_intval(8080);
  (*svc.mutable_spec()->mutable_selector())["app"] = "x";
  svc.mutable_spec()->set_type("ClusterIP");
  json out = Decoded(Envelope("v1", "Service", svc.SerializeAsString()), {"", "v1", "Service"});
  EXPECT_EQ(out["spec"], json::parse(R"({"ports": [{"name": "http", "port": 80, "targetPort": "web"},
                                                   {"port": 0, "targetPort": 8080}],
                                         "selector": {"app": "x"}, "type": "ClusterIP"})"));
  EXPECT_EQ(out["status"], json::parse(R"({"loadBalancer": {}})"));

  kubewire::Lease lease;
  lease.mutable_metadata()->set_name("l");
  lease.mutable_spec()->set_holderidentity("");
  lease.mutable_spec()->set_leasetransitions(0);
  lease.mutable_spec()->mutable_renewtime()->set_seconds(1700000000);
  lease.mutable_spec()->mutable_renewtime()->set_nanos(123456789);
  out = Decoded(Envelope("coordination.k8s.io/v1", "Lease", lease.SerializeAsString()),
                {"coordination.k8s.io", "v1", "Lease"});
  EXPECT_EQ(out["spec"], json::parse(R"({"holderIdentity": "", "leaseTransitions": 0,
                                         "renewTime": "2023-11-14T22:13:20.123456Z"})"));
}

// Catches: FieldsV1's raw JSON written as a string or base64, a pointer
// Time (deletionTimestamp, managedFields[].time) left out, seconds before
// 1970 formatted wrongly.
TEST(KubeProtobuf, ManagedFieldsAndTimes) {
  kubewire::ConfigMap cm;
  auto* md = cm.mutable_metadata();
  md->set_name("c");
  md->mutable_deletiontimestamp()->set_seconds(-86400);
  md->set_deletiongraceperiodseconds(0);
  auto* mf = md->add_managedfields();
  mf->set_manager("kubectl-create");
  mf->set_operation("Update");
  mf->set_apiversion("v1");
  mf->mutable_time()->set_seconds(951782400);  // 2000-02-29
  mf->set_fieldstype("FieldsV1");
  mf->mutable_fieldsv1()->set_raw(R"({"f:data":{".":{},"f:a":{}}})");
  (*cm.mutable_data())["a"] = "b";
  json out = Decoded(Envelope("v1", "ConfigMap", cm.SerializeAsString()), {"", "v1", "ConfigMap"});
  EXPECT_EQ(out["metadata"], json::parse(R"({"name": "c", "creationTimestamp": null,
    "deletionTimestamp": "1969-12-31T00:00:00Z", "deletionGracePeriodSeconds": 0,
    "managedFields": [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                       "time": "2000-02-29T00:00:00Z", "fieldsType": "FieldsV1",
                       "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}]})"));
}

// Catches: a field this version does not know refused or misread (a newer
// client's fields of each wire type, a group), and a message field sent
// twice replacing the first instead of merging with it (protobuf's rule).
TEST(KubeProtobuf, UnknownFieldsSkippedRepeatedMessagesMerged) {
  kubewire::FutureObjectMeta future;
  future.set_name("n");
  future.set_future("later");
  future.set_futurefixed64(1);
  future.set_futurefixed32(2);
  future.set_futurevarint(-1);
  future.mutable_legacy()->set_a(3);
  auto md = DecodeProtobufMessage("meta/ObjectMeta", future.SerializeAsString());
  ASSERT_TRUE(md.ok()) << md.status().message();
  EXPECT_EQ(*md, json::parse(R"({"name": "n", "creationTimestamp": null})"));

  kubewire::Secret first, second;
  (*first.mutable_metadata()->mutable_labels())["a"] = "1";
  first.mutable_metadata()->set_name("old");
  (*second.mutable_metadata()->mutable_labels())["b"] = "2";
  second.mutable_metadata()->set_name("new");
  auto merged = DecodeProtobufMessage("core/Secret", first.SerializeAsString() + second.SerializeAsString());
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ((*merged)["metadata"], json::parse(R"({"name": "new", "labels": {"a": "1", "b": "2"},
                                                   "creationTimestamp": null})"));
}

// Catches: bytes that are not UTF-8 passed into JSON (nlohmann then throws
// when the reply is written) instead of U+FFFD, as Go's encoder writes.
TEST(KubeProtobuf, InvalidUtf8BecomesTheReplacementCharacter) {
  kubewire::ConfigMap cm;
  cm.mutable_metadata()->set_name("c");
  (*cm.mutable_data())["k"] = "a\xff" "b\xed\xa0\x80" "c\xc3\xa9";
  json out = Decoded(Envelope("v1", "ConfigMap", cm.SerializeAsString()), {"", "v1", "ConfigMap"});
  EXPECT_EQ(out["data"]["k"], "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "c\xc3\xa9");
  EXPECT_NO_THROW(out.dump());
}

std::string Message(const Outcome<json>& out) {
  return out.ok() ? "(decoded)" : const_cast<Outcome<json>&>(out).reply().body["message"].get<std::string>();
}

int Code(const Outcome<json>& out) { return out.ok() ? 200 : const_cast<Outcome<json>&>(out).reply().code; }

// Catches: any drift from handlers.transformDecodeError around the
// protobuf serializer and gogo's Unmarshal — the "unrecognized" form with
// the body's hex when the envelope is bad, the kind/version form when the
// object is, each gogo error text, 400 and never 500.
TEST(KubeProtobuf, MalformedBodiesInTheRealServersWords) {
  auto bad = [](const std::string& body) { return DecodeProtobufObject(body, kSecret); };
  EXPECT_EQ(Message(bad("")), "the object provided is unrecognized (must be of type Secret): empty data (<empty>)");
  EXPECT_EQ(Message(bad(R"({"kind":"Secret"})")),
            "the object provided is unrecognized (must be of type Secret): provided data does not appear to be a "
            "protobuf message, expected prefix [107 56 115 0] ({\"kind\":\"Secret\"})");
  EXPECT_EQ(Message(bad(std::string("k8s\0", 4))),
            "the object provided is unrecognized (must be of type Secret): empty body (6b387300)");
  EXPECT_EQ(Message(bad(std::string("k8s\0\x0a\x05\x0a\x02v1", 10))),
            "the object provided is unrecognized (must be of type Secret): unexpected EOF (6b3873000a050a027631)");
  EXPECT_EQ(Code(bad(std::string("k8s\0\x0a\x05", 6))), 400);

  auto raw = [](const std::string& bytes) { return DecodeProtobufObject(Envelope("v1", "Secret", bytes), kSecret); };
  const std::string cannot = "Secret in version \"v1\" cannot be handled as a Secret: ";
  kubewire::SecretWithNumericData numeric;
  numeric.set_data(1);
  EXPECT_EQ(Message(raw(numeric.SerializeAsString())), cannot + "proto: wrong wireType = 0 for field Data");
  EXPECT_EQ(Message(raw(std::string("\x0a\x02\x38", 3))), cannot + "unexpected EOF");
  EXPECT_EQ(Message(raw(std::string("\x0a\x01\x38", 3))), cannot + "unexpected EOF");  // generation's varint cut
  EXPECT_EQ(Message(raw(std::string("\x00", 1))), cannot + "proto: Secret: illegal tag 0 (wire type 0)");
  EXPECT_EQ(Message(raw("\x0c")), cannot + "proto: Secret: wiretype end group for non-group");
  EXPECT_EQ(Message(raw("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")),
            cannot + "proto: negative length found during unmarshaling");
  EXPECT_EQ(Message(raw("\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01")), cannot + "proto: integer overflow");
  EXPECT_EQ(Message(raw("\x3f")), cannot + "proto: illegal wireType 7");  // field 7 is unknown: skipped, if it could be
  EXPECT_EQ(Message(raw("\x0a\x02\x42\x02")), cannot + "unexpected EOF");  // creationTimestamp longer than metadata
}

// Catches: a body of another kind stored under the route's resource, a
// kind the scheme lacks accepted, another group's version accepted, the
// envelope's empty typeMeta not defaulted from the route, protobuf
// answered 415 on a custom resource (the real server lists protobuf there
// too and fails in the decoder), and a kind this server cannot read stored
// half-read instead of refused.
TEST(KubeProtobuf, KindsAndVersionsAsTheRealServerChecksThem) {
  kubewire::ConfigMap cm;
  cm.mutable_metadata()->set_name("c");
  EXPECT_EQ(Message(DecodeProtobufObject(Envelope("v1", "ConfigMap", cm.SerializeAsString()), kSecret)),
            "ConfigMap in version \"v1\" cannot be handled as a Secret: converting (v1.ConfigMap) to (core.Secret): "
            "unknown conversion");
  EXPECT_EQ(Message(DecodeProtobufObject(Envelope("v1", "Widget", ""), kSecret)),
            "Widget in version \"v1\" cannot be handled as a Secret: no kind \"Widget\" is registered for version "
            "\"v1\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:29\"");
  auto other_group = DecodeProtobufObject(Envelope("events.k8s.io/v1", "Event", ""), {"", "v1", "Event"});
  EXPECT_EQ(Code(other_group), 400);
  EXPECT_EQ(Message(other_group),
            "the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)");

  kubewire::Secret s;
  s.mutable_metadata()->set_name("defaulted");
  json defaulted = Decoded(Envelope("", "", s.SerializeAsString()), kSecret);
  EXPECT_EQ(defaulted["kind"], "Secret");
  EXPECT_EQ(defaulted["apiVersion"], "v1");
  EXPECT_EQ(defaulted["metadata"]["name"], "defaulted");

  auto custom = DecodeProtobufObject(Envelope("fairbench.dev/v1alpha1", "BenchmarkRun", ""),
                                     {"fairbench.dev", "v1alpha1", "BenchmarkRun", true});
  EXPECT_EQ(Code(custom), 400);
  EXPECT_EQ(Message(custom),
            "BenchmarkRun in version \"v1alpha1\" cannot be handled as a BenchmarkRun: Object 'Kind' is missing in "
            "'object has no kind field '");

  auto pod = DecodeProtobufObject(Envelope("v1", "Pod", ""), {"", "v1", "Pod"});
  EXPECT_EQ(Code(pod), 415);
  EXPECT_EQ(Message(pod),
            "the test API server does not decode application/vnd.kubernetes.protobuf bodies of Pod (v1): send "
            "application/json or application/yaml");
}

// The bytes kubectl v1.32 sends for `kubectl auth can-i get pods/log -n ns1`
// (a pod named "log"), as `-v=9` prints them. Catches: a field number of
// ResourceAttributes wrong (verb/resource/name swapped), the envelope not
// unwrapped, or a truncated body accepted.
TEST(KubeProtobuf, KubectlsSelfSubjectAccessReview) {
  const unsigned char bytes[] = {
      0x6b, 0x38, 0x73, 0x00, 0x0a, 0x32, 0x0a, 0x17, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x7a, 0x61, 0x74,
      0x69, 0x6f, 0x6e, 0x2e, 0x6b, 0x38, 0x73, 0x2e, 0x69, 0x6f, 0x2f, 0x76, 0x31, 0x12, 0x17, 0x53, 0x65, 0x6c,
      0x66, 0x53, 0x75, 0x62, 0x6a, 0x65, 0x63, 0x74, 0x41, 0x63, 0x63, 0x65, 0x73, 0x73, 0x52, 0x65, 0x76, 0x69,
      0x65, 0x77, 0x12, 0x3b, 0x0a, 0x10, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00,
      0x38, 0x00, 0x42, 0x00, 0x12, 0x1d, 0x0a, 0x1b, 0x0a, 0x03, 0x6e, 0x73, 0x31, 0x12, 0x03, 0x67, 0x65, 0x74,
      0x1a, 0x00, 0x22, 0x00, 0x2a, 0x04, 0x70, 0x6f, 0x64, 0x73, 0x32, 0x00, 0x3a, 0x03, 0x6c, 0x6f, 0x67, 0x1a,
      0x08, 0x08, 0x00, 0x12, 0x00, 0x1a, 0x00, 0x20, 0x00, 0x1a, 0x00, 0x22, 0x00};
  const std::string body(reinterpret_cast<const char*>(bytes), sizeof bytes);
  const ExpectedKind review{"authorization.k8s.io", "v1", "SelfSubjectAccessReview"};
  json out = Decoded(body, review);
  EXPECT_EQ(out["spec"],
            json::parse(R"({"resourceAttributes":{"namespace":"ns1","verb":"get","resource":"pods","name":"log"}})"));
  EXPECT_EQ(out["status"], json::parse(R"({"allowed": false})"));
  EXPECT_EQ(Code(DecodeProtobufObject(body.substr(0, 60), review)), 400);
}

// Catches: DeleteOptions' preconditions or propagationPolicy misread (the
// wrong uid wins), the "v1" kind helm sends refused, a body of another
// kind taken as DeleteOptions.
TEST(KubeProtobuf, DeleteOptions) {
  kubewire::DeleteOptions d;
  d.set_graceperiodseconds(0);
  d.mutable_preconditions()->set_uid("u-1");
  d.set_propagationpolicy("Foreground");
  d.add_dryrun("All");
  auto out = DecodeProtobufDeleteOptions(Envelope("v1", "DeleteOptions", d.SerializeAsString()));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value(), json::parse(R"({"gracePeriodSeconds": 0, "preconditions": {"uid": "u-1"},
                                        "propagationPolicy": "Foreground", "dryRun": ["All"]})"));
  EXPECT_EQ(Message(DecodeProtobufDeleteOptions(Envelope("v1", "Secret", ""))),
            "decoded object cannot be converted to DeleteOptions");
  EXPECT_EQ(Message(DecodeProtobufDeleteOptions("{}")),
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]");
}

ApiRequest Request(const std::string& method, const std::string& path, const std::string& body,
                   const std::string& content_type = kProtobufMediaType) {
  ApiRequest r;
  r.method = method;
  r.path = path;
  r.body = body;
  r.content_type = content_type;
  r.accept = "application/vnd.kubernetes.protobuf,application/json";
  r.user = "admin";
  return r;
}

// kube-apiserver's whole answer to a protobuf body it cannot read, as
// metav1.Status from errors.NewBadRequest writes it (no details; the
// handler's words in message) — on create (transformDecodeError), on update
// and on a DELETE's DeleteOptions (400 since kubernetes#133358). Nothing is
// stored. Catches: a malformed body answered 500, 415 or 422, a reason or
// status field dropped or renamed, details added, the object stored
// half-read, a bad DeleteOptions ignored (the object deleted anyway).
TEST(KubeProtobuf, AMalformedBodyIsTheRealServersBadRequest) {
  ApiServer api;
  const std::string secrets = "/api/v1/namespaces/default/secrets";
  auto bad_request = [](const std::string& message) {
    return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
                {"message", message}, {"reason", "BadRequest"}, {"code", 400}};
  };
  // A Secret whose metadata is cut short: its length says 2 bytes, 1 follows.
  const std::string cut = Envelope("v1", "Secret", std::string("\x0a\x02\x0a", 3));
  ApiResponse created = api.Handle(Request("POST", secrets, cut));
  EXPECT_EQ(created.code, 400);
  EXPECT_EQ(created.content_type, "application/json");
  EXPECT_EQ(json::parse(created.body, nullptr, false),
            bad_request("Secret in version \"v1\" cannot be handled as a Secret: unexpected EOF"))
      << created.body;
  // Not a protobuf message at all: the envelope's error, with the body's bytes.
  ApiResponse raw = api.Handle(Request("POST", secrets, "{}"));
  EXPECT_EQ(json::parse(raw.body, nullptr, false),
            bad_request("the object provided is unrecognized (must be of type Secret): provided data does not "
                        "appear to be a protobuf message, expected prefix [107 56 115 0] ({})"))
      << raw.body;
  EXPECT_EQ(json::parse(api.Handle(Request("GET", secrets, "", "")).body)["items"], json::array());

  kubewire::Secret s;
  s.mutable_metadata()->set_name("kept");
  (*s.mutable_data())["k"] = "v";
  ASSERT_EQ(api.Handle(Request("POST", secrets, Envelope("v1", "Secret", s.SerializeAsString()))).code, 201);
  ApiResponse updated = api.Handle(Request("PUT", secrets + "/kept", cut));
  EXPECT_EQ(json::parse(updated.body, nullptr, false),
            bad_request("Secret in version \"v1\" cannot be handled as a Secret: unexpected EOF"))
      << updated.body;
  ApiResponse deleted = api.Handle(Request("DELETE", secrets + "/kept", std::string("k8s\0\x0a\x05", 6)));
  EXPECT_EQ(deleted.code, 400) << deleted.body;
  EXPECT_EQ(json::parse(deleted.body, nullptr, false)["reason"], "BadRequest") << deleted.body;
  // Neither the update nor the delete happened.
  ApiResponse kept = api.Handle(Request("GET", secrets + "/kept", "", ""));
  ASSERT_EQ(kept.code, 200) << kept.body;
  EXPECT_EQ(json::parse(kept.body)["data"], json::parse(R"({"k": "dg=="})"));
  api.Shutdown();
}

// The route helm's release storage takes: create, update and delete of a
// Secret with protobuf bodies. Catches: the decoder not wired into create
// or update (415), DeleteOptions' protobuf body refused or its
// preconditions ignored, a protobuf-preferring Accept answered 406 when it
// also takes JSON, and other media types not refused with the real list.
TEST(KubeProtobuf, ApiServerCreatesUpdatesAndDeletesFromProtobuf) {
  ApiServer api;
  const std::string secrets = "/api/v1/namespaces/default/secrets";
  kubewire::Secret s;
  s.mutable_metadata()->set_name("sh.helm.release.v1.x.v1");
  (*s.mutable_metadata()->mutable_labels())["status"] = "deployed";
  (*s.mutable_data())["release"] = "v1-data";
  s.set_type("helm.sh/release.v1");
  ApiResponse created = api.Handle(Request("POST", secrets, Envelope("v1", "Secret", s.SerializeAsString())));
  ASSERT_EQ(created.code, 201) << created.body;
  EXPECT_EQ(created.content_type, "application/json");
  json stored = json::parse(created.body);
  EXPECT_EQ(stored["data"]["release"], "djEtZGF0YQ==");
  EXPECT_EQ(stored["type"], "helm.sh/release.v1");

  (*s.mutable_metadata()->mutable_labels())["status"] = "superseded";
  s.mutable_metadata()->set_resourceversion(stored["metadata"]["resourceVersion"].get<std::string>());
  s.mutable_metadata()->set_uid(stored["metadata"]["uid"].get<std::string>());
  ApiResponse updated = api.Handle(
      Request("PUT", secrets + "/sh.helm.release.v1.x.v1", Envelope("v1", "Secret", s.SerializeAsString())));
  ASSERT_EQ(updated.code, 200) << updated.body;
  EXPECT_EQ(json::parse(updated.body)["metadata"]["labels"]["status"], "superseded");

  kubewire::DeleteOptions wrong;
  wrong.mutable_preconditions()->set_uid("not-its-uid");
  ApiResponse refused = api.Handle(
      Request("DELETE", secrets + "/sh.helm.release.v1.x.v1", Envelope("v1", "DeleteOptions", wrong.SerializeAsString())));
  EXPECT_EQ(refused.code, 409) << refused.body;
  ApiResponse deleted =
      api.Handle(Request("DELETE", secrets + "/sh.helm.release.v1.x.v1", Envelope("v1", "DeleteOptions", "")));
  EXPECT_EQ(deleted.code, 200) << deleted.body;

  ApiResponse plain = api.Handle(Request("POST", secrets, "x", "text/plain"));
  EXPECT_EQ(plain.code, 415);
  EXPECT_EQ(json::parse(plain.body)["message"],
            "the body of the request was in an unknown format - accepted media types include: application/json, "
            "application/yaml, application/vnd.kubernetes.protobuf");
  ApiRequest only_protobuf = Request("GET", secrets, "");
  only_protobuf.accept = kProtobufMediaType;
  EXPECT_EQ(api.Handle(only_protobuf).code, 406);
  api.Shutdown();
}

}  // namespace
}  // namespace fairbench::apiserver
