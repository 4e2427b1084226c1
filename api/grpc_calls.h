// ResolveGrpcCalls: what each gRPC scenario sends, worked out once before
// any target is deployed — the request message as sent (its JSON encoded
// as the method's input type through the descriptor set, its messageFile
// as it is, or the empty message) and the call's kind (unary or server
// streaming, known with a descriptor set). With a descriptor set the
// method must be in it, a messageFile must parse as its input type, and
// expect.json must be a message of its output type.
//
// The contents of messageFile and of the descriptor set must be in place
// (the loader reads files, the operator reads ConfigMaps). Problems come
// back as diagnostics on the field ("spec.scenarios[1].grpc.message: not a
// fairbench.echo.v1.EchoRequest: …"), for the CLI's report and the
// operator's InvalidSpec condition.
//
// Pure (over the run); thread-safe.
#pragma once

#include "api/benchmark_run.h"
#include "api/diagnostics.h"
#include "common/status.h"

namespace fairbench::api {

Diagnostics ResolveGrpcCalls(BenchmarkRun& run);

// A response message of a resolved call as JSON (protobuf's JSON mapping),
// decoded through its descriptor set; for checking expect.json.
Result<std::string> ResponseJson(const GrpcCallSpec& call, const std::string& message);

}  // namespace fairbench::api
