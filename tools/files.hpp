// Files of dtmpi's tools: making the directories they write into.
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace dtmpi::tools {

// mkdir -p: every missing component of `dir`, so that a fresh account (no
// ~/.cache) or a DTMPI_CACHE_DIR that does not exist yet just works; then
// whether `dir` is a writable directory (`error` says why not).
inline bool make_directories(const std::string& dir, std::string& error) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create " + part + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = dir + " is not a directory";
    return false;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    error = "cannot write into " + dir + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace dtmpi::tools
