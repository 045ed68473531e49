// SPDX-License-Identifier: Apache-2.0
#include "train/trainer_setup.h"

#include "common/system_info.h"

namespace stoker {

InputSpec input_spec(const OutputSpec& output) {
  InputSpec s;
  s.dtype = output.dtype;
  s.layout = output.layout;
  s.mean = output.mean;
  s.std = output.std;
  return s;
}

BackendConfig backend_config(const LoaderConfig& loader, int64_t batch, int threads, uint64_t epoch,
                             uint64_t step) {
  BackendConfig bc;
  bc.batch = batch;
  if (loader.size_schedule.active()) {
    bc.height = bc.width = loader.size_schedule.at(epoch, step);  // square sides
  } else {
    bc.height = loader.transform.out_height();
    bc.width = loader.transform.out_width();
  }
  bc.input = input_spec(loader.output);
  bc.threads = threads > 0 ? threads : online_cpus();
  return bc;
}

std::unique_ptr<Iterator> training_iterator(const Index& index, LoaderConfig loader,
                                            const Backend& backend) {
  loader.memory = backend.host_memory();
  loader.sampler.drop_last = true;
  return std::make_unique<Iterator>(index, loader);
}

std::unique_ptr<Iterator> evaluation_iterator(const Index& index, LoaderConfig loader,
                                              const Backend& backend) {
  loader.memory = backend.host_memory();
  loader.sampler.drop_last = false;
  return std::make_unique<Iterator>(index, loader);
}

}  // namespace stoker
