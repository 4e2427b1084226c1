#include "testing/apiserver/authorization.h"
#include "controller/kube/json_read.h"

#include <string_view>
#include <utility>
#include <vector>

namespace fairbench::apiserver {

using nlohmann::json;

namespace {

namespace jr = ::fairbench::kube::json_read;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// responsewriters.forbiddenMessage.
std::string ForbiddenMessage(const RequestInfo& r, const std::string& user) {
  if (!r.resource_request) return "User " + Quoted(user) + " cannot " + r.verb + " path " + Quoted(r.path);
  const std::string resource = r.subresource.empty() ? r.resource : r.resource + "/" + r.subresource;
  const std::string head = "User " + Quoted(user) + " cannot " + r.verb + " resource " + Quoted(resource) +
                           " in API group " + Quoted(r.api_group);
  if (!r.ns.empty()) return head + " in the namespace " + Quoted(r.ns);
  return head + " at the cluster scope";
}

// Just enough of the protobuf wire format to read a message's fields.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : b_(bytes) {}
  // The next field: number, wire type, and for length-delimited ones the
  // bytes. False at the end or on malformed input (then ok() is false).
  bool Next(uint64_t* field, int* wire, std::string_view* bytes) {
    if (at_ >= b_.size()) return false;
    uint64_t key = 0;
    if (!Varint(&key)) return Fail();
    *field = key >> 3;
    *wire = static_cast<int>(key & 7);
    uint64_t n = 0;
    switch (*wire) {
      case 0:
        return Varint(&n) || Fail();
      case 1:
        return Skip(8);
      case 2:
        if (!Varint(&n) || n > b_.size() - at_) return Fail();
        *bytes = b_.substr(at_, n);
        at_ += n;
        return true;
      case 5:
        return Skip(4);
      default:
        return Fail();
    }
  }
  bool ok() const { return ok_; }

 private:
  bool Varint(uint64_t* out) {
    *out = 0;
    for (int shift = 0; shift < 64 && at_ < b_.size(); shift += 7) {
      const auto c = static_cast<unsigned char>(b_[at_++]);
      *out |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  }
  bool Skip(size_t n) {
    if (n > b_.size() - at_) return Fail();
    at_ += n;
    return true;
  }
  bool Fail() {
    ok_ = false;
    at_ = b_.size();
    return false;
  }
  std::string_view b_;
  size_t at_ = 0;
  bool ok_ = true;
};

// The string fields of a message, by number, into JSON keys.
std::optional<json> StringFields(std::string_view bytes, const std::vector<std::pair<uint64_t, const char*>>& names) {
  json out = json::object();
  ProtoReader r(bytes);
  uint64_t field = 0;
  int wire = 0;
  std::string_view value;
  while (r.Next(&field, &wire, &value)) {
    if (wire != 2) continue;
    for (const auto& [number, name] : names) {
      if (number == field && !value.empty()) out[name] = std::string(value);
    }
  }
  if (!r.ok()) return std::nullopt;
  return out;
}

// The first length-delimited field `number` of a message; false if absent.
bool Submessage(std::string_view bytes, uint64_t number, std::string_view* out, bool* ok) {
  ProtoReader r(bytes);
  uint64_t field = 0;
  int wire = 0;
  std::string_view value;
  bool found = false;
  while (r.Next(&field, &wire, &value)) {
    if (wire == 2 && field == number && !found) {
      *out = value;
      found = true;
    }
  }
  *ok = r.ok();
  return found;
}

}  // namespace

std::optional<json> SelfSubjectAccessReviewFromProtobuf(const std::string& body) {
  static const char kMagic[] = {'k', '8', 's', '\0'};
  if (body.size() < 4 || body.compare(0, 4, std::string(kMagic, 4)) != 0) return std::nullopt;
  const std::string_view unknown = std::string_view(body).substr(4);
  bool ok = true;
  // runtime.Unknown: 1 typeMeta, 2 raw (the object's own message).
  std::string_view raw, spec, attributes;
  if (!Submessage(unknown, 2, &raw, &ok) || !ok) return std::nullopt;
  // SelfSubjectAccessReview: 1 metadata, 2 spec, 3 status.
  json review = {{"apiVersion", "authorization.k8s.io/v1"},
                 {"kind", "SelfSubjectAccessReview"},
                 {"metadata", json::object()},
                 {"spec", json::object()}};
  if (!Submessage(raw, 2, &spec, &ok)) return ok ? std::optional<json>(review) : std::nullopt;
  // SelfSubjectAccessReviewSpec: 1 resourceAttributes, 2 nonResourceAttributes.
  if (Submessage(spec, 1, &attributes, &ok)) {
    auto a = StringFields(attributes, {{1, "namespace"}, {2, "verb"}, {3, "group"}, {4, "version"},
                                       {5, "resource"}, {6, "subresource"}, {7, "name"}});
    if (!a) return std::nullopt;
    review["spec"]["resourceAttributes"] = *a;
  }
  if (Submessage(spec, 2, &attributes, &ok)) {
    auto a = StringFields(attributes, {{1, "path"}, {2, "verb"}});
    if (!a) return std::nullopt;
    review["spec"]["nonResourceAttributes"] = *a;
  }
  if (!ok) return std::nullopt;
  return review;
}

std::optional<AuthorizationMode> ParseAuthorizationMode(const std::string& text) {
  if (text == "AlwaysAllow") return AuthorizationMode::kAlwaysAllow;
  if (text == "RBAC") return AuthorizationMode::kRbac;
  return std::nullopt;
}

Decision Authorize(AuthorizationMode mode, const ObjectStore& store, const UserInfo& user,
                   const RequestInfo& request) {
  if (user.InGroup("system:masters")) return {true, ""};
  switch (mode) {
    case AuthorizationMode::kAlwaysAllow:
      return {true, ""};
    case AuthorizationMode::kRbac:
      return RbacAuthorizer(store).Authorize(user, request);
  }
  return {};
}

StatusReply ForbiddenReply(const RequestInfo& request, const std::string& user, const std::string& reason) {
  std::string err = ForbiddenMessage(request, user);
  if (!reason.empty()) err += ": " + reason;
  // apierrors.NewForbidden over the group and resource (no subresource).
  const std::string group = request.resource_request ? request.api_group : std::string();
  const std::string resource = request.resource_request ? request.resource : std::string();
  const std::string name = request.resource_request ? request.name : std::string();
  std::string message;
  if (group.empty() && resource.empty()) {
    message = "forbidden: " + err;
  } else {
    const std::string qualified = group.empty() ? resource : resource + "." + group;
    message = qualified + (name.empty() ? "" : " " + Quoted(name)) + " is forbidden: " + err;
  }
  json details = json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  if (!resource.empty()) details["kind"] = resource;
  return MakeStatus(403, "Forbidden", message, std::move(details));
}

Outcome<json> ReviewSelfSubjectAccess(AuthorizationMode mode, const ObjectStore& store, const UserInfo& user,
                                      json review) {
  const ObjectName kind{"authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", ""};
  json spec = review.contains("spec") && review["spec"].is_object() ? review["spec"] : json::object();
  const bool has_resource = spec.contains("resourceAttributes") && spec["resourceAttributes"].is_object();
  const bool has_non_resource = spec.contains("nonResourceAttributes") && spec["nonResourceAttributes"].is_object();
  if (has_resource && has_non_resource) {
    return Invalid(kind, {FieldInvalid("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                                       "cannot be specified in combination with resourceAttributes")});
  }
  if (!has_resource && !has_non_resource) {
    return Invalid(kind, {FieldInvalid("spec.resourceAttributes", nullptr,
                                       "exactly one of nonResourceAttributes or resourceAttributes must be specified")});
  }
  RequestInfo info;
  if (has_resource) {
    const json& a = spec["resourceAttributes"];
    info.resource_request = true;
    info.verb = jr::String(a, "verb");
    info.api_group = jr::String(a, "group");
    info.api_version = jr::String(a, "version");
    info.resource = jr::String(a, "resource");
    info.subresource = jr::String(a, "subresource");
    info.name = jr::String(a, "name");
    info.ns = jr::String(a, "namespace");
  } else {
    const json& a = spec["nonResourceAttributes"];
    info.path = jr::String(a, "path");
    info.verb = jr::String(a, "verb");
  }
  const Decision d = Authorize(mode, store, user, info);
  review["apiVersion"] = "authorization.k8s.io/v1";
  review["kind"] = "SelfSubjectAccessReview";
  if (!review.contains("metadata") || !review["metadata"].is_object()) review["metadata"] = json::object();
  review["spec"] = spec;
  json status = {{"allowed", d.allowed}};
  if (!d.reason.empty()) status["reason"] = d.reason;
  review["status"] = status;
  return review;
}

}  // namespace fairbench::apiserver
