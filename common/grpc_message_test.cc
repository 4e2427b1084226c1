// grpc_message: descriptor sets written here in protobuf's text format (a
// FileDescriptorSet as protoc would write it), messages checked against
// wire bytes written by hand from the encoding's definition.
#include "common/grpc_message.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace fairbench {
namespace {

// demo.proto (imports common.proto): Svc with one method of each kind.
constexpr const char* kSet = R"pb(
  file {
    name: "common.proto"
    package: "demo.common"
    message_type {
      name: "Tag"
      field { name: "label" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "label" }
    }
    syntax: "proto3"
  }
  file {
    name: "demo.proto"
    package: "demo.v1"
    dependency: "common.proto"
    message_type {
      name: "Req"
      field { name: "payload" number: 1 type: TYPE_BYTES label: LABEL_OPTIONAL json_name: "payload" }
      field { name: "count" number: 2 type: TYPE_INT32 label: LABEL_OPTIONAL json_name: "count" }
      field {
        name: "tag"
        number: 3
        type: TYPE_MESSAGE
        label: LABEL_OPTIONAL
        type_name: ".demo.common.Tag"
        json_name: "tag"
      }
    }
    message_type {
      name: "Reply"
      field { name: "reply_text" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "replyText" }
      field { name: "index" number: 2 type: TYPE_UINT32 label: LABEL_OPTIONAL json_name: "index" }
    }
    service {
      name: "Svc"
      method { name: "Unary" input_type: ".demo.v1.Req" output_type: ".demo.v1.Reply" }
      method { name: "Down" input_type: ".demo.v1.Req" output_type: ".demo.v1.Reply" server_streaming: true }
      method { name: "Up" input_type: ".demo.v1.Req" output_type: ".demo.v1.Reply" client_streaming: true }
      method {
        name: "Both"
        input_type: ".demo.v1.Req"
        output_type: ".demo.v1.Reply"
        client_streaming: true
        server_streaming: true
      }
    }
    syntax: "proto3"
  }
)pb";

std::string SetBytes(const std::string& text) {
  google::protobuf::FileDescriptorSet set;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &set));
  return set.SerializeAsString();
}

DescriptorSet Load() {
  auto set = LoadDescriptorSet(SetBytes(kSet), "configmap/protos/demo.desc");
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  return std::move(*set);
}

void ExpectOneLineWith(const Status& st, const std::string& needle) {
  ASSERT_FALSE(st.ok()) << "expected an error with: " << needle;
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  EXPECT_EQ(std::count(st.message().begin(), st.message().end(), '\n'), 0) << st.message();
}

// The set's methods, and a method's kind and types (catches
// server_streaming read from the wrong flag, or the input and output types
// swapped).
TEST(GrpcMessageTest, MethodKindAndTypes) {
  const DescriptorSet set = Load();
  auto unary = set.Method("demo.v1.Svc/Unary");
  ASSERT_TRUE(unary.ok()) << unary.status().ToString();
  EXPECT_EQ(unary->kind, GrpcCallKind::kUnary);
  EXPECT_EQ(unary->input_type, "demo.v1.Req");
  EXPECT_EQ(unary->output_type, "demo.v1.Reply");
  EXPECT_EQ(unary->name.path(), "/demo.v1.Svc/Unary");
  EXPECT_EQ(set.Methods(),
            (std::vector<std::string>{"demo.v1.Svc/Unary", "demo.v1.Svc/Down", "demo.v1.Svc/Up", "demo.v1.Svc/Both"}));
  auto down = set.Method("/demo.v1.Svc/Down");
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  EXPECT_EQ(down->kind, GrpcCallKind::kServerStreaming);
}

// Each refusal is one line naming the set and the method (catches a
// client-streaming method accepted as unary, or an error without the
// file's name).
TEST(GrpcMessageTest, MethodErrorsNameTheSetAndTheMethod) {
  const DescriptorSet set = Load();
  ExpectOneLineWith(set.Method("demo.v1.Svc/Up").status(),
                    "demo.v1.Svc/Up in 'configmap/protos/demo.desc' is client-streaming");
  ExpectOneLineWith(set.Method("demo.v1.Svc/Both").status(), "is bidirectional streaming");
  ExpectOneLineWith(set.Method("demo.v1.Nope/Unary").status(),
                    "no service 'demo.v1.Nope' in 'configmap/protos/demo.desc' (services: demo.v1.Svc)");
  ExpectOneLineWith(
      set.Method("demo.v1.Svc/Nope").status(),
      "service demo.v1.Svc has no method 'Nope' (methods: Unary, Down, Up, Both) in 'configmap/protos/demo.desc'");
  ExpectOneLineWith(set.Method("Svc").status(), "'Svc' is not SERVICE/METHOD");
  ExpectOneLineWith(set.Method("a/b/c").status(), "is not SERVICE/METHOD");
  ExpectOneLineWith(set.Method("a b/c").status(), "is not SERVICE/METHOD");
}

// JSON to the wire bytes protobuf's encoding defines, written by hand:
// field 1 bytes "hi" (base64 aGk=) = 0a 02 68 69, field 2 varint 300 =
// 10 ac 02, field 3 message {1: "x"} = 1a 03 0a 01 78 (catches a JSON
// field dropped, the wrong type used, or a nested message from the import
// not resolved).
TEST(GrpcMessageTest, EncodeJsonGivesTheWireBytes) {
  const DescriptorSet set = Load();
  auto m = set.Method("demo.v1.Svc/Unary");
  ASSERT_TRUE(m.ok());
  auto bytes = set.EncodeJson(*m, R"({"payload":"aGk=","count":300,"tag":{"label":"x"}})");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, std::string("\x0a\x02hi\x10\xac\x02\x1a\x03\x0a\x01x", 12));
  auto empty = set.EncodeJson(*m, "{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");
}

// JSON that is not the input type: one line naming the type, the method
// and the set (catches unknown fields ignored, or a wrong value type
// silently zeroed).
TEST(GrpcMessageTest, EncodeJsonErrors) {
  const DescriptorSet set = Load();
  auto m = set.Method("demo.v1.Svc/Unary");
  ASSERT_TRUE(m.ok());
  for (const char* json : {R"({"paylod":"aGk="})", R"({"count":"many"})", R"({"count":)", "[1,2]"}) {
    ExpectOneLineWith(set.EncodeJson(*m, json).status(),
                      "not a demo.v1.Req (the input of demo.v1.Svc/Unary in 'configmap/protos/demo.desc'): ");
  }
}

// Reply bytes written by hand decode to JSON as the output type
// (replyText "ok" = 0a 02 6f 6b, index 7 = 10 07) with protobuf's JSON
// names, or the .proto's, and defaults on request (catches the input type
// used for replies, or the options ignored).
TEST(GrpcMessageTest, DecodeToJsonReadsTheOutputType) {
  const DescriptorSet set = Load();
  auto m = set.Method("demo.v1.Svc/Down");
  ASSERT_TRUE(m.ok());
  auto json = set.DecodeToJson(*m, std::string("\x0a\x02ok\x10\x07", 6));
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(*json, R"({"replyText":"ok","index":7})");
  auto named =
      set.DecodeToJson(*m, std::string("\x0a\x02ok", 4), {.print_default_values = true, .proto_field_names = true});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(*named, R"({"reply_text":"ok","index":0})");
  ExpectOneLineWith(
      set.DecodeToJson(*m, "\xff\xff\xff").status(),
      "the reply is not a binary demo.v1.Reply (the output of demo.v1.Svc/Down in 'configmap/protos/demo.desc')");
}

// A binary message checked against the input type (catches the check
// skipped: a truncated message accepted).
TEST(GrpcMessageTest, CheckParses) {
  const DescriptorSet set = Load();
  auto m = set.Method("demo.v1.Svc/Unary");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(set.CheckParses(*m, std::string("\x0a\x02hi", 4), "req.bin").ok());
  ExpectOneLineWith(
      set.CheckParses(*m, std::string("\x0a\x05hi", 4), "req.bin"),
      "'req.bin' is not a binary demo.v1.Req (the input of demo.v1.Svc/Unary in 'configmap/protos/demo.desc')");
}

// A set that is not one, and one made without --include_imports, are
// refused at load with the name it was given, in one line (catches a set
// whose imports are missing found only at the first call, or a line break
// from a name in the set passed on).
TEST(GrpcMessageTest, LoadErrors) {
  ExpectOneLineWith(LoadDescriptorSet("hello\xff\xff", "x.desc").status(), "'x.desc' is not a FileDescriptorSet");
  ExpectOneLineWith(LoadDescriptorSet("", "x.desc").status(), "'x.desc' is not a FileDescriptorSet");
  google::protobuf::FileDescriptorSet full;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kSet, &full));
  google::protobuf::FileDescriptorSet without_imports;
  *without_imports.add_file() = full.file(1);
  ExpectOneLineWith(LoadDescriptorSet(without_imports.SerializeAsString(), "demo-only.desc").status(),
                    "'demo-only.desc': demo.proto");
  ExpectOneLineWith(LoadDescriptorSet(without_imports.SerializeAsString(), "demo-only.desc").status(),
                    "--include_imports");
  google::protobuf::FileDescriptorSet twice = full;
  *twice.add_file() = full.file(0);
  ExpectOneLineWith(LoadDescriptorSet(twice.SerializeAsString(), "twice.desc").status(),
                    "'twice.desc': common.proto appears twice");
  ExpectOneLineWith(ReadDescriptorSetFile("/nonexistent/x.desc").status(), "cannot read '/nonexistent/x.desc'");
  // Names from the set are its author's: a line break in one stays one line
  // (found by fuzz_grpc_message).
  google::protobuf::FileDescriptorSet odd;
  odd.add_file()->set_name("two\nlines.proto");
  *odd.add_file() = odd.file(0);
  ExpectOneLineWith(LoadDescriptorSet(odd.SerializeAsString(), "odd.desc").status(), "two lines.proto appears twice");
}

}  // namespace
}  // namespace fairbench
