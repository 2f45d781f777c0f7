// SPDX-License-Identifier: Apache-2.0
// tracefs, where tracepoint events have their ids and categories: the host's
// mount where there is one, else a private one of a short-lived thread.
#pragma once

#include <functional>
#include <string>

#include "base/error.h"

namespace bpfprof::perf {

// Calls fn with the path of a tracefs mount: the host's where one is
// mounted, else one of a short-lived thread's private mount namespace (fn
// runs on that thread; nothing changes in the host's mount table). The
// error says why tracefs could not be had.
Status with_tracefs(const std::function<void(const std::string& dir)>& fn);

}  // namespace bpfprof::perf
