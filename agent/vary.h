// Vary: requests that differ by a number, and the check of their answers,
// so that a server that caches or hard-codes its answers is caught.
//
// Each connection draws its numbers from its own VarySequence (SplitMix64
// from the job's seed and the connection's number: the same seed gives the
// same numbers, two connections or two agents' seeds different ones). A
// request's "{n}" (in its target, header values and body) becomes the
// number in decimal; VaryRequest builds the whole request for one number
// into a string the caller keeps, so that once the string has grown to the
// longest request nothing is allocated per request. VaryExpect is what a
// sampled answer must be for the same number: the body, or JSON equal to
// the expectation's JSON text with the number put in. SplitAnswer takes a
// response's raw bytes apart into its body (chunked decoded) and its Date.
//
// Value types; thread-compatible (a worker owns its own).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/request.h"
#include "common/status.h"

namespace fairbench::agent {

inline constexpr std::string_view kVaryToken = "{n}";

// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", 2014), its state started from a seed and a stream number.
class VarySequence {
 public:
  VarySequence() = default;
  VarySequence(uint64_t seed, uint64_t stream);
  // A sequence from a raw state (for tests against the reference).
  static VarySequence WithState(uint64_t state) {
    VarySequence s;
    s.state_ = state;
    return s;
  }
  uint64_t Next();

 private:
  uint64_t state_ = 0;
};

// `n` in decimal into `out` (≥ 20 bytes); returns its length.
size_t FormatVaryNumber(uint64_t n, char* out);

// A text with "{n}" in it, cut at each "{n}".
class VaryTemplate {
 public:
  VaryTemplate() = default;
  explicit VaryTemplate(std::string_view text);
  bool varies() const { return pieces_.size() > 1; }
  // Its length with every "{n}" replaced by `digits` characters.
  size_t Size(size_t digits) const;
  void AppendTo(std::string& out, std::string_view n) const;
  std::string Expand(std::string_view n) const;

 private:
  std::vector<std::string> pieces_;  // the text between the "{n}"s
};

// A request with "{n}", laid out as BuildRequest lays one out (request.h).
class VaryRequest {
 public:
  VaryRequest() = default;
  VaryRequest(const RequestSpec& spec, const std::string& host_header, bool keep_alive);
  // The request for `n`, in place of what `out` held.
  void Build(uint64_t n, std::string& out) const;

 private:
  VaryTemplate head_;  // request line, Host, the user's headers
  VaryTemplate body_;
  bool length_ = true;  // Content-Length is ours to write
  std::string tail_;    // "Connection: close\r\n" when asked, and the blank line
};

// What a sampled answer's body must be.
class VaryExpect {
 public:
  enum class Kind : uint8_t { kBody, kJson };
  VaryExpect() = default;
  VaryExpect(Kind kind, std::string_view text) : kind_(kind), text_(text) {}
  // Whether `body` is the answer to the request of `n`. `scratch` is
  // reused between calls.
  bool Matches(std::string_view body, std::string_view n, std::string& scratch) const;
  // "expected 'X', got 'Y'" for people, cut short.
  std::string Describe(std::string_view body, std::string_view n) const;

 private:
  Kind kind_ = Kind::kBody;
  VaryTemplate text_;
};

// What the engine needs to vary a job's request and check its answers.
struct VaryPlan {
  uint64_t seed = 0;
  uint32_t verify_every = 100;
  VaryRequest request;
  VaryExpect expect;
};

// A complete HTTP/1.x response's raw bytes (as ResponseParser took them)
// taken apart: its body into `body` (chunked decoded; for a HEAD or a
// 204/304 nothing), and its Date header's value into `date` (empty when
// it has none; a view into `raw`). False when the bytes are no response.
bool SplitAnswer(std::string_view raw, std::string& body, std::string_view* date);

}  // namespace fairbench::agent
