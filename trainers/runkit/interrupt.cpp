#include "trainers/runkit/interrupt.h"

#include <csignal>

namespace sb::runkit {

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
extern "C" void on_stop_signal(int) { stop_requested().store(true); }
}  // namespace

void install_interrupt_handler() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

}  // namespace sb::runkit
