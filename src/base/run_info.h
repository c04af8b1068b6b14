// Facts about this run that reports, the tune cache and profiling record: where per-user caches
// live, which source revision the binary came from, and the time.
#pragma once

#include <string>

namespace mlakit {

// $MLAKIT_CACHE_DIR, else $XDG_CACHE_HOME/mlakit, else $HOME/.cache/mlakit (empty variables count
// as unset; /tmp when HOME is unset too). Not created here.
std::string user_cache_dir();

// The short git revision of the tree this binary was built from ("+dirty" when tracked files are
// modified), "unknown" when git or the repository is not there. Runs git once per process, from
// the executable's folder, then from the working directory.
std::string git_revision();

// Now, UTC, ISO 8601: "2026-11-21T10:04:05Z".
std::string utc_timestamp();
// Now, local time, for file names: "20261121-110405".
std::string file_timestamp();

// The folder of the running executable (from /proc/self/exe); "" when unknown.
std::string executable_dir();

}  // namespace mlakit
