#include "controller/kube/api_error.h"

#include <gtest/gtest.h>

namespace fairbench::kube {
namespace {

TEST(ApiError, AlreadyExistsAndConflictDifferByReason) {
  auto exists = ApiError::FromResponse(
      409,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"widgets.example.com \"w1\" already exists","reason":"AlreadyExists","code":409})",
      {});
  auto conflict = ApiError::FromResponse(
      409,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"the object has been modified","reason":"Conflict","code":409})",
      {});
  EXPECT_EQ(exists.reason, Reason::kAlreadyExists);
  EXPECT_EQ(conflict.reason, Reason::kConflict);
  EXPECT_EQ(exists.ToStatus().code(), Status::Code::kAlreadyExists);
  EXPECT_FALSE(conflict.Retriable());
}

TEST(ApiError, InvalidCarriesCauses) {
  auto e = ApiError::FromResponse(
      422,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Widget.example.com \"w1\" is invalid","reason":"Invalid","code":422,
          "details":{"name":"w1","group":"example.com","kind":"Widget","causes":[{"reason":"FieldValueInvalid","message":"bad","field":"spec.replicas"}]}})",
      {});
  EXPECT_EQ(e.reason, Reason::kInvalid);
  ASSERT_EQ(e.causes.size(), 1u);
  EXPECT_EQ(e.causes[0].field, "spec.replicas");
  EXPECT_EQ(e.ToStatus().code(), Status::Code::kInvalidArgument);
}

TEST(ApiError, GoneExpiredAndRetryAfter) {
  EXPECT_EQ(ApiError::FromStatus({{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}).reason, Reason::kGone);
  EXPECT_EQ(ApiError::FromStatus({{"kind", "Status"}, {"code", 410}, {"reason", "Gone"}}).reason, Reason::kGone);
  auto throttled =
      ApiError::FromResponse(429, R"({"kind":"Status","reason":"TooManyRequests","code":429})", {{"retry-after", "3"}});
  EXPECT_EQ(throttled.reason, Reason::kTooManyRequests);
  ASSERT_TRUE(throttled.retry_after.has_value());
  EXPECT_EQ(throttled.retry_after->count(), 3);
  EXPECT_TRUE(throttled.Retriable());
}

TEST(ApiError, ClassifiesByCodeWhenTheBodyIsNotAStatus) {
  EXPECT_EQ(ApiError::FromResponse(503, "upstream down", {}).reason, Reason::kServiceUnavailable);
  EXPECT_EQ(ApiError::FromResponse(502, "bad gateway", {}).reason, Reason::kInternalError);
  EXPECT_EQ(ApiError::FromResponse(504, "", {}).reason, Reason::kServerTimeout);
  EXPECT_EQ(ApiError::FromResponse(401, "", {}).reason, Reason::kUnauthorized);
  EXPECT_EQ(ApiError::FromResponse(403, R"({"kind":"Status","reason":"Forbidden","code":403})", {}).reason,
            Reason::kForbidden);
  EXPECT_TRUE(ApiError::FromResponse(500, "", {}).Retriable());
  EXPECT_FALSE(ApiError::FromResponse(404, "", {}).Retriable());
}

TEST(ApiError, TransportFailures) {
  auto timeout = ApiError::FromTransport(Status::DeadlineExceeded("slow"));
  EXPECT_EQ(timeout.reason, Reason::kTimeout);
  EXPECT_TRUE(timeout.Retriable());
  auto tls = ApiError::FromTransport(Status::FailedPrecondition("TLS failed"));
  EXPECT_EQ(tls.reason, Reason::kTls);
  EXPECT_FALSE(tls.Retriable());
  EXPECT_EQ(ApiError::FromTransport(Status::Unavailable("refused")).reason, Reason::kTransport);
  EXPECT_EQ(timeout.ToStatus().code(), Status::Code::kDeadlineExceeded);
}

// Found by fuzz/watch_stream_fuzzer: an ERROR event whose Status has a
// field of the wrong type ("code": "410", "message": {}) threw out of
// FromStatus, and a huge retryAfterSeconds overflowed when waited on.
TEST(ApiError, AStatusOfTheWrongShapeIsReadNotThrown) {
  const auto odd = nlohmann::json::parse(R"({"kind": "Status", "code": 1e300, "reason": 5, "message": {},
      "details": {"causes": [{"field": 1}, 2], "retryAfterSeconds": 9223372036854775807}})");
  const ApiError e = ApiError::FromStatus(odd);
  EXPECT_EQ(e.http_code, 0);
  EXPECT_EQ(e.message, "");
  ASSERT_EQ(e.causes.size(), 1u);
  EXPECT_EQ(e.causes[0].field, "");
  EXPECT_FALSE(e.retry_after.has_value());
  EXPECT_EQ(ApiError::FromStatus(nlohmann::json::parse(R"({"details": "x"})")).causes.size(), 0u);
}

}  // namespace
}  // namespace fairbench::kube
