#include "common/grpc_message.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

namespace fairbench {
namespace {

namespace pb = google::protobuf;

// One line, whatever names the set (or the caller) put in it: control
// characters are shown as '?', line breaks and tabs as spaces.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

Status Invalid(const std::string& message) { return Status::InvalidArgument(OneLine(message)); }

std::string List(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 20; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 20) out += ", ...";
  return out.empty() ? "none" : out;
}

// The first error protobuf reports while building a file of the set.
class FirstError : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name, const pb::Message*, ErrorLocation,
                const std::string& message) override {
    if (!first_.empty()) return;
    first_ = filename + (element_name.empty() ? "" : " (" + element_name + ")") + ": " + message;
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace

struct DescriptorSet::Impl {
  std::string what;
  pb::SimpleDescriptorDatabase db;
  FirstError errors;
  pb::DescriptorPool pool{&db, &errors};
  // Thread-safe: GetPrototype locks, New() of a prototype does not share.
  mutable pb::DynamicMessageFactory factory{&pool};
  std::vector<std::string> files;

  std::string In() const { return "'" + what + "'"; }

  Result<std::unique_ptr<pb::Message>> New(const std::string& type, const MethodInfo& m) const {
    const pb::Descriptor* d = pool.FindMessageTypeByName(type);
    if (d == nullptr) {
      return Invalid("no message type " + type + " (of " + m.name.service + "/" + m.name.method + ") in " + In());
    }
    return std::unique_ptr<pb::Message>(factory.GetPrototype(d)->New());
  }
};

Result<GrpcMethodName> ParseGrpcMethodName(std::string_view text) {
  std::string_view name = text;
  if (!name.empty() && name.front() == '/') name.remove_prefix(1);
  const size_t slash = name.find('/');
  const auto bad_char = [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '?' || c == '#'; };
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string_view::npos || std::any_of(name.begin(), name.end(), bad_char)) {
    return Invalid("'" + std::string(text) + "' is not SERVICE/METHOD (e.g. fairbench.echo.v1.Echo/Unary)");
  }
  return GrpcMethodName{std::string(name.substr(0, slash)), std::string(name.substr(slash + 1))};
}

DescriptorSet::DescriptorSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DescriptorSet::DescriptorSet(DescriptorSet&&) noexcept = default;
DescriptorSet& DescriptorSet::operator=(DescriptorSet&&) noexcept = default;
DescriptorSet::~DescriptorSet() = default;

const std::string& DescriptorSet::what() const { return impl_->what; }

Result<DescriptorSet> LoadDescriptorSet(std::string bytes, std::string what) {
  // What is wrong with the set is the one line returned; protobuf's own
  // log lines (a malformed name, say) would be a second, on stderr.
  const google::protobuf::LogSilencer quiet;
  auto impl = std::make_unique<DescriptorSet::Impl>();
  impl->what = std::move(what);
  pb::FileDescriptorSet set;
  if (!set.ParseFromString(bytes) || set.file_size() == 0) {
    return Invalid(impl->In() +
                   " is not a FileDescriptorSet (make one with protoc --descriptor_set_out=FILE "
                   "--include_imports)");
  }
  for (const pb::FileDescriptorProto& file : set.file()) {
    if (!impl->db.Add(file)) {
      return Invalid(impl->In() + ": " + file.name() + " appears twice or is malformed");
    }
    impl->files.push_back(file.name());
  }
  for (const std::string& file : impl->files) {
    if (impl->pool.FindFileByName(file) == nullptr) {
      return Invalid(impl->In() + ": " + impl->errors.first() +
                     " (a file it needs is missing from the set? make it with --include_imports)");
    }
  }
  return DescriptorSet(std::move(impl));
}

Result<DescriptorSet> ReadDescriptorSetFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  if (in) ss << in.rdbuf();
  if (!in || in.bad()) return Invalid("cannot read '" + path + "'");
  return LoadDescriptorSet(ss.str(), path);
}

std::vector<std::string> DescriptorSet::Methods() const {
  std::vector<std::string> out;
  for (const std::string& file : impl_->files) {
    const pb::FileDescriptor* fd = impl_->pool.FindFileByName(file);
    for (int i = 0; fd != nullptr && i < fd->service_count(); ++i) {
      const pb::ServiceDescriptor* sd = fd->service(i);
      for (int j = 0; j < sd->method_count(); ++j) out.push_back(sd->full_name() + "/" + sd->method(j)->name());
    }
  }
  return out;
}

Result<MethodInfo> DescriptorSet::Method(std::string_view text) const {
  auto name = ParseGrpcMethodName(text);
  if (!name.ok()) return name.status();
  const pb::ServiceDescriptor* sd = impl_->pool.FindServiceByName(name->service);
  if (sd == nullptr) {
    std::vector<std::string> services;
    for (const std::string& file : impl_->files) {
      const pb::FileDescriptor* fd = impl_->pool.FindFileByName(file);
      for (int i = 0; fd != nullptr && i < fd->service_count(); ++i) services.push_back(fd->service(i)->full_name());
    }
    return Invalid("no service '" + name->service + "' in " + impl_->In() + " (services: " + List(services) + ")");
  }
  const pb::MethodDescriptor* md = sd->FindMethodByName(name->method);
  if (md == nullptr) {
    std::vector<std::string> methods;
    for (int i = 0; i < sd->method_count(); ++i) methods.push_back(sd->method(i)->name());
    return Invalid("service " + name->service + " has no method '" + name->method + "' (methods: " + List(methods) +
                   ") in " + impl_->In());
  }
  if (md->client_streaming()) {
    return Invalid(name->service + "/" + name->method + " in " + impl_->In() + " is " +
                   (md->server_streaming() ? "bidirectional streaming" : "client-streaming") +
                   "; only unary and server-streaming calls are supported");
  }
  MethodInfo info;
  info.name = std::move(*name);
  info.kind = md->server_streaming() ? GrpcCallKind::kServerStreaming : GrpcCallKind::kUnary;
  info.input_type = md->input_type()->full_name();
  info.output_type = md->output_type()->full_name();
  return info;
}

Result<std::string> DescriptorSet::EncodeJson(const MethodInfo& m, std::string_view json) const {
  auto msg = impl_->New(m.input_type, m);
  if (!msg.ok()) return msg.status();
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto st = pb::util::JsonStringToMessage(pb::StringPiece(json.data(), json.size()), msg->get(), options);
  if (!st.ok()) {
    return Invalid("not a " + m.input_type + " (the input of " + m.name.service + "/" + m.name.method + " in " +
                   impl_->In() + "): " + std::string(st.message()));
  }
  std::string out;
  if (!(*msg)->SerializeToString(&out)) {
    return Invalid("cannot encode it as " + m.input_type + " (in " + impl_->In() + ")");
  }
  return out;
}

Status DescriptorSet::CheckReplyJson(const MethodInfo& m, std::string_view json) const {
  auto msg = impl_->New(m.output_type, m);
  if (!msg.ok()) return msg.status();
  const auto st = pb::util::JsonStringToMessage(pb::StringPiece(json.data(), json.size()), msg->get());
  if (!st.ok()) {
    return Status::InvalidArgument("not a " + m.output_type + " (the output of " + m.name.service + "/" +
                                   m.name.method + " in " + impl_->In() + "): " + OneLine(std::string(st.message())));
  }
  return Status::Ok();
}

Result<std::string> DescriptorSet::DecodeToJson(const MethodInfo& m, std::string_view bytes,
                                                const JsonOutputOptions& o) const {
  auto msg = impl_->New(m.output_type, m);
  if (!msg.ok()) return msg.status();
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !(*msg)->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Invalid("the reply is not a binary " + m.output_type + " (the output of " + m.name.service + "/" +
                   m.name.method + " in " + impl_->In() + ")");
  }
  pb::util::JsonPrintOptions options;
  options.always_print_primitive_fields = o.print_default_values;
  options.preserve_proto_field_names = o.proto_field_names;
  std::string out;
  const auto st = pb::util::MessageToJsonString(**msg, &out, options);
  if (!st.ok()) {
    return Invalid("the reply (a " + m.output_type + ") has no JSON form: " + std::string(st.message()));
  }
  return out;
}

Status DescriptorSet::CheckParses(const MethodInfo& m, std::string_view bytes, std::string_view source) const {
  auto msg = impl_->New(m.input_type, m);
  if (!msg.ok()) return msg.status();
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !(*msg)->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Invalid("'" + std::string(source) + "' is not a binary " + m.input_type + " (the input of " +
                   m.name.service + "/" + m.name.method + " in " + impl_->In() + ")");
  }
  return Status::Ok();
}

}  // namespace fairbench
