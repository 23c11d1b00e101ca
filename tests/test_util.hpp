// Helpers shared by the test suites: where the real data lives, seeded random inputs, what a
// call that should fail reported.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/error.hpp"
#include "src/work_partition.hpp"

namespace sj::test {

// Small inputs are split into many chunks (the default keeps them serial), for one scope.
struct SplitSmallInputs {
  int64_t saved = parallel_tuning().min_chunk_work.load();
  int64_t saved_parallel = parallel_tuning().min_parallel_work.load();
  SplitSmallInputs() {
    parallel_tuning().min_chunk_work = 1;
    parallel_tuning().min_parallel_work = 1;
  }
  ~SplitSmallInputs() {
    parallel_tuning().min_chunk_work = saved;
    parallel_tuning().min_parallel_work = saved_parallel;
  }
};

// The status and message of the sj::Error that f() threw; nullopt when it returned.
struct Failure {
  sj_status status;
  std::string message;
};
inline std::optional<Failure> failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sj::Error& e) {
    return Failure{e.status(), e.what()};
  }
  return std::nullopt;
}

// ../shared/data beside the checkout, or $SPARSEJIT_DATA_DIR; nullopt when absent.
inline std::optional<std::filesystem::path> shared_data_dir() {
  if (const char* env = std::getenv("SPARSEJIT_DATA_DIR")) {
    if (std::filesystem::is_directory(env)) return std::filesystem::path(env);
  }
  std::filesystem::path p = std::filesystem::path(SPARSEJIT_SOURCE_DIR) / ".." / "shared" / "data";
  if (std::filesystem::is_directory(p / "matrices")) return p;
  return std::nullopt;
}

// Every .mtx under shared/data/matrices, sorted by name; empty when the folder is absent.
inline std::vector<std::filesystem::path> shared_matrices() {
  std::vector<std::filesystem::path> out;
  if (auto d = shared_data_dir()) {
    for (auto& e : std::filesystem::directory_iterator(*d / "matrices"))
      if (e.path().extension() == ".mtx") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<std::filesystem::path> shared_tensors() {
  std::vector<std::filesystem::path> out;
  if (auto d = shared_data_dir()) {
    if (std::filesystem::is_directory(*d / "tensors"))
      for (auto& e : std::filesystem::directory_iterator(*d / "tensors"))
        if (e.path().extension() == ".tns") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Files shipped in the repository (data/).
inline std::filesystem::path repo_data(const std::string& name) {
  return std::filesystem::path(SPARSEJIT_SOURCE_DIR) / "data" / name;
}

// Mappings of this process that are writable and executable at once (/proc/self/maps lines);
// generated code must be written through one mapping and run through another, never both.
inline std::vector<std::string> writable_executable_mappings() {
  std::vector<std::string> found;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::string perms = line.substr(line.find(' ') + 1, 4);
    if (perms.size() == 4 && perms[1] == 'w' && perms[2] == 'x') found.push_back(line);
  }
  return found;
}

}  // namespace sj::test
