#pragma once
// One trainer per run directory. A second trainer on a run directory in use (a second terminal,
// a Slurm job beside a local run) would interleave its checkpoints, metrics lines and dump with
// the first's; it is refused at start, in one line naming the holder.
//
// The lock is flock(2) on "<parent>/.<run name>.lock", beside the run directory rather than in
// it, so that a trainer refused for bad input later creates nothing under the run's name. The
// kernel releases it when the holder exits in any way (SIGKILL and a crash included): a lock is
// never stale, the next trainer takes it over at once. The file names the current holder (pid,
// host, program, since when). With no parent directory yet there is nothing to protect and no
// lock is taken. The pipeline's own lock (pipeline/dir_lock.py) is a different file, so a driver
// never blocks the trainer it starts.

#include <string>

namespace sb::runkit {

class RunDirLock {
 public:
  /// Takes the lock of `run_dir` for `program`; throws sb::WriteError "<run_dir> is in use
  /// by pid N on HOST (PROGRAM, since ...): ..." when another process holds it.
  RunDirLock(const std::string& run_dir, const std::string& program);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  /// The lock file's path for `run_dir`.
  static std::string path_of(const std::string& run_dir);

 private:
  int fd_ = -1;
};

}  // namespace sb::runkit
