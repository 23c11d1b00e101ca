// `sparsejit cache prune`: removing the default cache folders of other builds and versions.
//
// Every build of the library has its own default folder, <parent>/<version>-<build id>
// (cache_folder.hpp), and the build id changes with every edit of the sources, so a developer's
// old folders pile up. None is read by this build. A folder is removed only when everything
// holds: its name has that form and is not this build's; it is not the folder this process is
// configured to use (SPARSEJIT_CACHE_DIR), by device and inode; it, and the parent, are real
// folders (no symlinks) owned by this user and writable by no one else; it holds nothing but
// cache entries (*.sje) and the lock file; and no writer holds its lock. Otherwise it is left
// whole, with the reason. Everything is done through descriptors (openat, unlinkat), so a
// path swapped after the checks is never followed. Only a program writing at that moment is
// seen (the lock): a program of that build that runs and is not writing finds its folder gone
// later, and its disk cache turns off (a warning, shown at SPARSEJIT_LOG=warn) while it
// carries on and compiles again. A dry run neither locks nor removes.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace sj::cache {

struct PruneOutcome {
  std::string path;      // the folder
  bool removed = false;  // gone (never set by a dry run)
  size_t entries = 0;    // cache entries it held
  std::string kept_why;  // why it stays ("" when removed, or when a dry run would remove it)
  bool error = false;    // it stays because something failed (not by a rule)
};

// The other builds' folders in default_cache_parent(), in name order, each removed unless
// dry_run. Sets *problem (and returns nothing) when the parent itself is unusable or unsafe;
// a missing parent is no problem.
std::vector<PruneOutcome> prune_other_builds(bool dry_run, std::string* problem);

}  // namespace sj::cache
