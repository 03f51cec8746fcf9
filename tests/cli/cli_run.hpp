// Runs the streamsafe CLI as a user does (the binary at STREAMSAFE_CLI) and reads its JSON.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <sys/wait.h>

namespace streamsafe::cli_test {

struct run_result {
  int exit_code;
  std::string output;
};

/// A path in the temporary directory that no other test process uses: ctest runs tests in
/// parallel, and two checkouts' suites may share the directory.
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "streamsafe-" + std::to_string(getpid()) + "-" + name;
}

/// A temp_path() directory, removed with what the CLI wrote there when the test ends.
class scratch_dir {
 public:
  explicit scratch_dir(const std::string& name) : path_(temp_path(name)) { std::filesystem::remove_all(path_); }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Runs `streamsafe ARGUMENTS`, stdout and stderr together.
inline run_result run(const std::string& arguments) {
  const std::string command = std::string(STREAMSAFE_CLI) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

/// The number after `"key":` in `json`; -1 when the key is missing.
inline double number(const std::string& json, const std::string& key) {
  std::smatch match;
  if (!std::regex_search(json, match, std::regex("\"" + key + "\":(-?[0-9]+(\\.[0-9]+)?)"))) return -1;
  return std::stod(match[1]);
}

/// number() of a whole-number field.
inline long figure(const std::string& json, const std::string& key) { return static_cast<long>(number(json, key)); }

}  // namespace streamsafe::cli_test
