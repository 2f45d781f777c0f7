// SPDX-License-Identifier: Apache-2.0
// Shares of a total in percent, as every output prints them.
#pragma once

#include <cmath>
#include <cstdint>

namespace bpfprof {

// 100 * part / whole; 0 when whole is 0.
inline double percent_of(uint64_t part, uint64_t whole) {
  if (whole == 0) return 0;
  return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// The same rounded to two decimals (JSON numbers); 0 when whole is 0.
inline double percent_of_rounded(uint64_t part, uint64_t whole) {
  if (whole == 0) return 0;
  return std::round(10000.0 * static_cast<double>(part) / static_cast<double>(whole)) / 100.0;
}

}  // namespace bpfprof
