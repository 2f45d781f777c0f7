// SPDX-License-Identifier: Apache-2.0
// record(): the phases of one recording in order (phases.h).
#include "record/recorder.h"

#include <memory>

#include "record/phases.h"

namespace bpfprof::record {

Result<RecordStats> record(const RecordOptions& o, const RecordSink& sink) {
  BPFPROF_ASSIGN_OR_RETURN(std::unique_ptr<Recorder> recording, Recorder::open(o, sink));
  if (Status s = recording->preamble(); !s.ok()) return recording->abandon(std::move(s).error());
  recording->run();
  return recording->finish();
}

}  // namespace bpfprof::record
