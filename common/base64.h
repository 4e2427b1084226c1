// Base64 (RFC 4648, standard alphabet, padded): histograms travel in JSON
// and in reports as text.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace fairbench {

std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view text);

}  // namespace fairbench
