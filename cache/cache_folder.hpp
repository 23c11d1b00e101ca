// Where the persistent cache lives and whether that folder is safe to use.
//
// Folder: the configured one (sj_config.cache_dir), else $SPARSEJIT_CACHE_DIR, else
// $XDG_CACHE_HOME/sparsejit/<version>-<build id>, else $HOME/.cache/sparsejit/<version>-<build id>
// (a relative XDG_CACHE_HOME or HOME counts as unset).
// It is created private (0700, missing parents too). An existing folder that others could
// write to — group/other write bits, another owner, or a symlink — is refused: code loaded
// from it could have been planted. A folder that cannot be created or written (read-only
// file system, a path through a regular file, no permission) is "unusable", not unsafe: the
// runtime carries on without a disk cache.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sj::cache {

// "<version>-<build id>": the last component of the default folders.
std::string build_folder_name();

// The folder to use: `configured` when non-empty, else the environment / home default.
// Empty when nothing gives one (no HOME): the disk cache is then off.
std::string resolve_cache_dir(std::string_view configured = {});

// Where the default per-build folders live: $XDG_CACHE_HOME/sparsejit, else
// $HOME/.cache/sparsejit; a relative value counts as unset; empty without either.
std::string default_cache_parent();

// The names in the folder open as dir_fd ("." and ".." left out), read through a descriptor of
// its own so that dir_fd's offset is not shared. *listed (when given) says whether the whole
// folder was read (else errno says why).
std::vector<std::string> folder_entry_names(int dir_fd, bool* listed = nullptr);

struct CacheFolder {
  int fd = -1;            // O_DIRECTORY descriptor of the checked folder (owned), -1 if unusable
  std::string path;
  std::string problem;    // why it is unusable (fd == -1)
};

// Opens `path` for use as the cache folder, creating it (and missing parents) 0700 when
// `create` is set. Throws sj::Error(SJ_ERR_CACHE, ...) when the folder exists but is unsafe
// (writable by group/others, owned by someone else, a symlink, not a directory); returns
// fd == -1 with a problem when it is merely unusable (cannot be created, missing and !create).
// The checks are made on the opened descriptor (fstat), so a swap after the check is caught.
CacheFolder open_cache_folder(const std::string& path, bool create);

}  // namespace sj::cache
