#pragma once
// Every output of a run is written to "<path>.tmp.<pid>", fsync'ed, and only then renamed into
// place, so a kill at any moment leaves the previous file or the new one, never a truncated one,
// and a write that fails (a full disk, EIO, a failed close or fsync) leaves the previous file and
// throws naming the final path (docs/design.md, "Atomic writes").

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace sb::runkit {

/// Atomically replaces `path` by what `write(tmp_path)` writes: after `write` returns, the
/// temporary file is fsync'ed (a delayed-allocation ENOSPC surfaces here), then renamed. On any
/// exception the temporary file is removed and the exception passed on; a failed fsync throws
/// sb::WriteError "<path>: not written: fsync failed (<errno text>); is the disk full?".
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

/// Writes the parts, one after the other, to the file `tmp` with write(2), checking every write
/// and the close; a failure throws sb::WriteError naming `shown` (the final path), not tmp.
void write_bytes(const std::string& tmp, const std::string& shown,
                 std::initializer_list<std::string_view> parts);

/// Atomically replaces `path` by `text`.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace sb::runkit
