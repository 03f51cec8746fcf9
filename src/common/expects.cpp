#include "common/expects.hpp"

#include <filesystem>

namespace streamsafe::detail {

void throw_usage_error(const char* file, int line, const std::string& reason) {
  throw usage_error(reason + " [" + std::filesystem::path(file).filename().string() + ":" +
                    std::to_string(line) + "]");
}

}  // namespace streamsafe::detail
