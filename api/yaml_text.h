// YAML text ⇄ Node, with yaml-cpp behind the seam.
//
// Parsing resolves plain scalars with the YAML 1.2 core schema (what
// Kubernetes tooling and most editors assume): `4` is an integer, `true` a
// boolean, `~` null, anything quoted a string. Positions are kept on every
// node (1-based). Emitting quotes a string exactly when reading it back
// plain would change its type, so Emit(Parse(x)) keeps every type.
//
// yaml-cpp exceptions never escape: syntax errors come back as
// InvalidArgument "SOURCE:LINE:COL: invalid YAML: REASON", one line.
#pragma once

#include <string>
#include <string_view>

#include "api/node.h"
#include "common/status.h"

namespace fairbench::api {

// Parses exactly one document (an empty text gives a null Node; two or more
// documents are an error). `source` names the text in messages ("run.yaml").
Result<Node> ParseYaml(std::string_view text, std::string_view source);

// Block style for maps and lists of maps, flow style for lists of scalars.
std::string EmitYaml(const Node& node);

// What a plain (unquoted) scalar means under the core schema.
Node::Kind ResolvePlainScalar(std::string_view text);

}  // namespace fairbench::api
