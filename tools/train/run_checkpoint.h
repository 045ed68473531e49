// SPDX-License-Identifier: Apache-2.0
// Where a `stoker train` run keeps its checkpoint when --save does not say: a new file under
// runs/ in the current directory, named for the model and the start time, so that no run's
// work is lost by default (as PyTorch Lightning keeps lightning_logs/). It writes nothing.
#pragma once

#include <string>

namespace stoker {

// "runs/<arch>-<YYYYmmdd-HHMMSS>.safetensors" (local time), with "-2", "-3", ... appended to
// the stem when such a file exists already. The directory is not created here.
std::string default_checkpoint_path(const std::string& arch);

}  // namespace stoker
