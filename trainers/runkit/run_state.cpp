#include "trainers/runkit/run_state.h"

namespace sb::runkit {

void put_run_state(CheckpointWriter& w, const RunState& s) {
  w.put("epoch", s.epoch);
  w.put("batch", s.batch);
  w.put("step", s.step);
  w.put("lr", s.lr);
  w.put("best_valid", s.best_valid);
  w.put("bad_epochs", s.bad_epochs);
  w.put("epoch_loss", s.epoch_loss);
  w.put("epoch_tokens", s.epoch_tokens);
  w.put("stopped", s.stopped);
  w.put_tensors("carried", s.carried);
}

RunState read_run_state(CheckpointReader& r) {
  RunState s;
  s.epoch = r.get_int("epoch");
  s.batch = r.get_int("batch");
  s.step = r.get_int("step");
  s.lr = r.get_double("lr");
  s.best_valid = r.get_double("best_valid");
  s.bad_epochs = r.get_int("bad_epochs");
  s.epoch_loss = r.get_double("epoch_loss");
  s.epoch_tokens = r.get_int("epoch_tokens");
  s.stopped = r.get_bool("stopped");
  s.config = r.config();
  s.carried = r.get_tensors("carried");
  return s;
}

}  // namespace sb::runkit
