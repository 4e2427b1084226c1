// ResolveGrpcCalls against the descriptor set of the reference gRPC target
// (examples/grpc-echo.desc), with request bytes written out by hand from
// protobuf's wire format — not by the code under test.
#include "api/grpc_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "api/loader.h"

namespace fairbench::api {
namespace {

std::string EchoDescriptors() {
  std::ifstream in(std::string(FAIRBENCH_EXAMPLES_DIR) + "/grpc-echo.desc", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

BenchmarkRun RunWith(GrpcCallSpec call, Expect expect = {}) {
  BenchmarkRun run;
  Scenario s;
  s.name = "echo";
  call.descriptor_set = "echo.desc";
  call.descriptor_set_content = EchoDescriptors();
  s.grpc = std::move(call);
  s.expect = std::move(expect);
  run.spec.scenarios.push_back(std::move(s));
  return run;
}

std::string Only(const Diagnostics& d) {
  if (d.items().size() != 1) return "(" + std::to_string(d.items().size()) + " diagnostics)";
  return d.items()[0].path + ": " + d.items()[0].message;
}

// Catches: the JSON encoded as another type or not at all (the agents would
// send the empty message), and the kind not known (an OK unary answer with
// no message would go uncounted as a protocol error).
TEST(GrpcCallsTest, JsonIsEncodedAsTheInputTypeAndTheKindIsKnown) {
  GrpcCallSpec call;
  call.method = "fairbench.echo.v1.Echo/ServerStream";
  call.message = nlohmann::json{{"payload", "aGVsbG8="}, {"messages", 10}};
  BenchmarkRun run = RunWith(call);
  EXPECT_TRUE(ResolveGrpcCalls(run).empty());
  const GrpcCallSpec& got = *run.spec.scenarios[0].grpc;
  // payload = 1 (bytes): 0a 05 "hello"; messages = 4 (varint): 20 0a.
  EXPECT_EQ(got.request_message, std::string("\x0a\x05hello\x20\x0a", 9));
  EXPECT_EQ(got.kind, GrpcCallKind::kServerStreaming);
  call.method = "fairbench.echo.v1.Echo/Unary";
  call.message.reset();
  run = RunWith(call);
  EXPECT_TRUE(ResolveGrpcCalls(run).empty());
  EXPECT_EQ(run.spec.scenarios[0].grpc->request_message, "");  // the empty message
  EXPECT_EQ(run.spec.scenarios[0].grpc->kind, GrpcCallKind::kUnary);
}

// Catches: errors that do not name the field, or a mistake let through to
// the load (every call would fail on the server instead).
TEST(GrpcCallsTest, MistakesNameTheFieldAndWhatIsThere) {
  GrpcCallSpec call;
  call.method = "fairbench.echo.v1.Echo/Shout";
  BenchmarkRun run = RunWith(call);
  EXPECT_EQ(Only(ResolveGrpcCalls(run)),
            "spec.scenarios[0].grpc.method: service fairbench.echo.v1.Echo has no method 'Shout' (methods: Unary, "
            "ServerStream, Stats) in 'echo.desc'");
  call.method = "fairbench.echo.v2.Echo/Unary";
  run = RunWith(call);
  EXPECT_EQ(Only(ResolveGrpcCalls(run)),
            "spec.scenarios[0].grpc.method: no service 'fairbench.echo.v2.Echo' in 'echo.desc' (services: "
            "fairbench.echo.v1.Echo)");
  call.method = "fairbench.echo.v1.Echo/Unary";
  call.message = nlohmann::json{{"payload", "aGk="}, {"volume", 11}};
  run = RunWith(call);
  EXPECT_NE(Only(ResolveGrpcCalls(run))
                .find("spec.scenarios[0].grpc.message: not a fairbench.echo.v1.EchoRequest (the "
                      "input of fairbench.echo.v1.Echo/Unary in 'echo.desc'): "),
            std::string::npos)
      << Only(ResolveGrpcCalls(run));
  call.message.reset();
  call.message_file = "req.bin";
  call.message_file_content = "\x0a\x7f";  // a length past the end
  run = RunWith(call);
  EXPECT_EQ(Only(ResolveGrpcCalls(run)),
            "spec.scenarios[0].grpc.messageFile: 'req.bin' is not a binary fairbench.echo.v1.EchoRequest (the input of "
            "fairbench.echo.v1.Echo/Unary in 'echo.desc')");
  call.message_file_content = "\x0a\x02hi";
  Expect expect;
  expect.json = nlohmann::json{{"text", "hi"}};
  run = RunWith(call, expect);
  EXPECT_NE(Only(ResolveGrpcCalls(run))
                .find("spec.scenarios[0].expect.json: not a fairbench.echo.v1.EchoReply (the "
                      "output of fairbench.echo.v1.Echo/Unary in 'echo.desc'): "),
            std::string::npos);
  EXPECT_EQ(run.spec.scenarios[0].grpc->request_message, "\x0a\x02hi");  // the file as it is
  run = RunWith(call);
  run.spec.scenarios[0].grpc->descriptor_set_content = "not protobuf";
  EXPECT_NE(Only(ResolveGrpcCalls(run)).find("grpc.descriptorSet: 'echo.desc' is not a FileDescriptorSet"),
            std::string::npos)
      << Only(ResolveGrpcCalls(run));
}

// Catches: a reply decoded through the wrong type, or JSON names other than
// protobuf's JSON mapping (expect.json written as the proto's docs say
// would never match).
TEST(GrpcCallsTest, ResponsesDecodeToProtobufsJson) {
  GrpcCallSpec call;
  call.method = "fairbench.echo.v1.Echo/Unary";
  BenchmarkRun run = RunWith(call);
  ASSERT_TRUE(ResolveGrpcCalls(run).empty());
  // EchoReply{payload: "hi", index: 3}: 0a 02 "hi" 10 03.
  auto json = ResponseJson(*run.spec.scenarios[0].grpc, std::string("\x0a\x02hi\x10\x03", 6));
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(nlohmann::json::parse(*json), (nlohmann::json{{"payload", "aGk="}, {"index", 3}}));
  EXPECT_FALSE(ResponseJson(*run.spec.scenarios[0].grpc, "\x0a\x7f").ok());
}

// Catches: the loader not reading the descriptor set, or not resolving the
// calls (the agents would send the empty message). A call that cannot be
// made is refused at load: testdata/invalid/grpc-unknown-method.yaml.
TEST(GrpcCallsTest, TheLoaderReadsTheFilesOfTheExample) {
  auto run = LoadRunFile(std::string(FAIRBENCH_EXAMPLES_DIR) + "/grpc-api-variants.yaml");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const GrpcCallSpec& stream = *run->spec.scenarios[1].grpc;
  EXPECT_EQ(stream.kind, GrpcCallKind::kServerStreaming);
  EXPECT_EQ(stream.request_message, std::string("\x0a\x05hello\x20\x0a", 9));
}

}  // namespace
}  // namespace fairbench::api
