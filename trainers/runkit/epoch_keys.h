#pragma once
// The rows every epoch trainer's config shares (train_nplm, train_charlm), with the same meaning
// and the same trajectory flags: clip, epochs, max_batches, seed, threads, log_interval. A policy
// of the trainers, not of the engine (trainers/runkit/config_table.h).

#include <vector>

#include "trainers/runkit/config_table.h"

namespace sb::runkit {

/// The shared rows over the config struct C, which has the members of the same names. epochs and
/// log_interval do not shape the trajectory (a resumed run may change them).
template <class C>
std::vector<ConfigKey<C>> epoch_loop_keys() {
  return {
      key("clip", &C::clip, "gradient norm clipping (0 = none)", at_least(0)),
      key("epochs", &C::epochs, "training epochs", at_least(1)).not_trajectory(),
      key("max_batches", &C::max_batches, "stop each epoch after N batches (0 = whole epoch)",
          at_least(0)),
      key("seed", &C::seed, "random seed", at_least(0)),
      key("threads", &C::threads, "threads (0 = number of cores)", at_least(0)),
      key("log_interval", &C::log_interval, "progress line every N batches", at_least(1))
          .not_trajectory(),
  };
}

}  // namespace sb::runkit
