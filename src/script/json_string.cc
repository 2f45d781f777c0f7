// SPDX-License-Identifier: Apache-2.0
#include "script/json_string.h"

#include <nlohmann/json.hpp>

namespace bpfprof::script {

std::string JsonString::escape(std::string_view s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace bpfprof::script
