#pragma once
// Every output of a run is written to "<path>.tmp.<pid>" and renamed into place, so a kill at any
// moment leaves the previous file or the new one, never a truncated one (docs/design.md,
// "Atomic writes").

#include <functional>
#include <string>

namespace sb::runkit {

/// Atomically replaces `path` by what `write(tmp_path)` writes; on an exception the temporary
/// file is removed and the exception passed on.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

/// Atomically replaces `path` by `text`.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace sb::runkit
