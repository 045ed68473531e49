// SPDX-License-Identifier: Apache-2.0
#include "train/step_summary.h"

#include <algorithm>

#include "common/error.h"

namespace stoker {

StepSummary summarise_steps(const std::vector<StepRecord>& records, size_t warmup,
                            bool asynchronous, bool activity) {
  STOKER_CHECK(!records.empty());
  StepSummary s;
  s.skipped = std::min(warmup, records.size() - 1);
  StepAccount& t = s.account_total;
  for (size_t k = s.skipped; k < records.size(); ++k) {
    const StepRecord& r = records[k];
    s.wait.push_back(r.wait);
    s.stage.push_back(r.stage);
    s.forward.push_back(r.forward);
    s.backward.push_back(r.backward);
    s.update.push_back(r.update);
    s.total.push_back(r.total);
    s.host_wall += r.total;
    s.wait_s += r.wait;
    s.stage_s += r.stage;
    s.forward_s += r.forward;
    s.backward_s += r.backward;
    s.update_s += r.update;
    const StepAccount a = account_step(r, asynchronous, activity);
    s.account.push_back(a);
    s.unbalanced += !a.balanced();
    t.wall += a.wall, t.wait += a.wait, t.stage += a.stage, t.compute += a.compute;
    t.gaps += a.gaps, t.timed_compute += a.timed_compute;
    t.wall_from = a.wall_from;
    t.measured = a.measured;
  }
  s.wall = t.wall;
  return s;
}

}  // namespace stoker
