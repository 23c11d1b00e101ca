#include "tools/cache_command.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cache/cache_folder.hpp"
#include "cache/persistent_store.hpp"
#include "cache/prune_builds.hpp"
#include "src/error.hpp"

namespace {

constexpr const char* kCacheUsage =
    "usage: sparsejit cache list|verify|clear [--dir D]\n"
    "       sparsejit cache prune\n"
    "  list    entries of the persistent cache: key, size, age\n"
    "  verify  check every entry (header, checksum, key, build); exit 1 if any is bad\n"
    "  clear   remove every entry (the folder stays)\n"
    "  prune   remove the default folders of other builds and versions (never read by this\n"
    "          build; a rebuild after an edit is another build). A folder stays whole, with\n"
    "          the reason, when it holds anything but cache entries, is not private, is the\n"
    "          folder in use here (SPARSEJIT_CACHE_DIR) or is being written to; exit 1 when\n"
    "          one stays because something failed\n"
    "  --dir D the cache folder (default: SPARSEJIT_CACHE_DIR, else the per-build folder\n"
    "          under $XDG_CACHE_HOME or ~/.cache/sparsejit)\n";

std::string age_text(int64_t s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%lldm", static_cast<long long>(s / 60));
  else if (s < 172800) std::snprintf(buf, sizeof buf, "%lldh", static_cast<long long>(s / 3600));
  else std::snprintf(buf, sizeof buf, "%lldd", static_cast<long long>(s / 86400));
  return buf;
}

// `sparsejit cache prune` (cache/prune_builds.hpp).
int prune_other_builds() {
  std::string problem;
  const auto outcomes = sj::cache::prune_other_builds(false, &problem);
  if (!problem.empty()) {
    std::fprintf(stderr, "sparsejit cache prune: %s\n", problem.c_str());
    return 1;
  }
  size_t removed = 0, failed = 0;
  for (const auto& o : outcomes) {
    failed += o.error;
    if (o.removed) {
      ++removed;
      std::printf("removed %s (%zu entr%s)\n", o.path.c_str(), o.entries, o.entries == 1 ? "y" : "ies");
    } else {
      std::printf("kept %s: %s\n", o.path.c_str(), o.kept_why.c_str());
    }
  }
  std::printf("%s: %zu folder%s of other builds removed, %zu kept; this build's (%s) untouched\n",
              sj::cache::default_cache_parent().c_str(), removed, removed == 1 ? "" : "s", outcomes.size() - removed,
              sj::cache::build_folder_name().c_str());
  return failed ? 1 : 0;
}

// After list and verify of the default folder: how many folders prune would remove.
void hint_other_builds() {
  std::string problem;
  size_t n = 0;
  for (const auto& o : sj::cache::prune_other_builds(true, &problem)) n += o.kept_why.empty();
  if (n)
    std::printf("(%zu folder%s of other builds in %s, never read by this build: `sparsejit cache prune` removes them)\n",
                n, n == 1 ? "" : "s", sj::cache::default_cache_parent().c_str());
}

}  // namespace

int run_cache_command(int argc, char** argv) {
  std::string sub, dir;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kCacheUsage, stdout);
      return 0;
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a.rfind("--dir=", 0) == 0) {
      dir = a.substr(6);
    } else if (sub.empty() && a[0] != '-') {
      sub = a;
    } else {
      std::fprintf(stderr, "sparsejit cache: unexpected argument '%s'\n%s", a.c_str(), kCacheUsage);
      return 2;
    }
  }
  if (sub != "list" && sub != "verify" && sub != "clear" && sub != "prune") {
    std::fprintf(stderr, "sparsejit cache: %s\n%s",
                 sub.empty() ? "which command? (list, verify, clear or prune)" : ("unknown command '" + sub + "'").c_str(),
                 kCacheUsage);
    return 2;
  }
  if (sub == "prune") {
    if (!dir.empty()) {
      std::fprintf(stderr, "sparsejit cache: prune takes no --dir (it removes the default folders of other builds)\n");
      return 2;
    }
    return prune_other_builds();
  }
  const char* env_dir = std::getenv("SPARSEJIT_CACHE_DIR");
  const bool default_folder = dir.empty() && (env_dir == nullptr || *env_dir == 0);
  dir = sj::cache::resolve_cache_dir(dir);
  try {
    sj::cache::PersistentStore::Options o;
    o.create = false;  // looking must not create the folder
    sj::cache::PersistentStore store(dir, o);
    if (!store.enabled() && !store.disabled_reason().empty() && store.list(false).empty()) {
      std::printf("%s: no cache here (%s)\n", dir.c_str(), store.disabled_reason().c_str());
      if (default_folder && sub != "clear") hint_other_builds();  // (as after a rebuild)
      return 0;
    }
    if (sub == "clear") {
      size_t n = store.clear();
      std::printf("%s: removed %zu file%s\n", dir.c_str(), n, n == 1 ? "" : "s");
      return 0;
    }
    bool verify = sub == "verify";
    auto entries = store.list(verify);
    size_t bad = 0, stale = 0;
    uint64_t bytes = 0;
    for (const auto& e : entries) {
      bytes += e.file_size;
      if (e.stale) ++stale;
      else if (!e.ok) ++bad;
      if (verify && e.ok) continue;
      const char* mark = e.ok ? "" : e.stale ? "  [stale] " : "  [BAD] ";
      std::printf("%-28s %9llu B %6s  %s%s%s%s\n", e.file.c_str(), static_cast<unsigned long long>(e.file_size),
                  age_text(e.age_s).c_str(), e.key.empty() ? "(unreadable)" : e.key.c_str(), mark,
                  e.ok ? "" : e.problem.c_str(), "");
    }
    std::printf("%s: %zu entr%s, %llu bytes", dir.c_str(), entries.size(), entries.size() == 1 ? "y" : "ies",
                static_cast<unsigned long long>(bytes));
    if (verify || bad || stale) std::printf(", %zu bad, %zu from other builds", bad, stale);
    std::printf("%s\n", verify && !bad ? " — all good" : "");
    if (stale && verify) std::printf("(entries from other builds are never used; `sparsejit cache clear` removes them)\n");
    if (default_folder) hint_other_builds();
    return verify && bad ? 1 : 0;
  } catch (const sj::Error& e) {
    std::fprintf(stderr, "sparsejit cache: %s\n", e.what());
    return 1;
  }
}
