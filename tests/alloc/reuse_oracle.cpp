#include "reuse_oracle.hpp"

#include <sstream>

#include "backends.hpp"

namespace streamsafe::testing {

namespace {

std::size_t words_in(std::size_t bytes) { return bytes / sizeof(std::uint32_t); }

}  // namespace

reuse_oracle::~reuse_oracle() {
  try {
    device_.synchronize();  // a late read may still write its copy
  } catch (...) {
    // A failed device: its work is gone, and so are the copies' writers.
  }
  for (std::uint32_t* copy : copies_) device_.deallocate_pinned(copy);
}

void reuse_oracle::late_write(StreamRef late, void* block, std::size_t bytes, std::uint32_t value) {
  late.launch(slow_fill_kernel(static_cast<std::uint32_t*>(block), words_in(bytes), value));
}

void reuse_oracle::late_read(StreamRef late, const void* block, std::size_t bytes, std::uint32_t expected) {
  auto* copy = static_cast<std::uint32_t*>(device_.allocate_pinned(bytes));
  copies_.push_back(copy);
  late.launch(slow_copy_kernel(static_cast<const std::uint32_t*>(block), copy, words_in(bytes)));
  reads_.push_back({late, copy, words_in(bytes), expected, "late read of " + late.name()});
}

void reuse_oracle::claim(StreamRef stream, void* block, std::size_t bytes, std::uint32_t value) {
  write(stream, block, bytes, value);
  claims_.push_back({stream, static_cast<const std::uint32_t*>(block), words_in(bytes), value,
                     "block claimed by " + stream.name()});
}

void reuse_oracle::write(StreamRef stream, void* block, std::size_t bytes, std::uint32_t value) {
  stream.launch(fill_kernel(static_cast<std::uint32_t*>(block), words_in(bytes), value));
}

std::string reuse_oracle::describe(const expectation& e, std::size_t at, std::uint32_t seen) {
  std::ostringstream out;
  out << e.what << " at " << static_cast<const void*>(e.words) << ": word " << at << " of " << e.count << " is 0x"
      << std::hex << seen << ", expected 0x" << e.value;
  return out.str();
}

::testing::AssertionResult reuse_oracle::settle() {
  device_.synchronize();
  std::vector<std::string> wrong;
  const auto check = [&](const expectation& e, const std::vector<std::uint32_t>& seen) {
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] != e.value) {
        wrong.push_back(describe(e, i, seen[i]));
        return;
      }
    }
  };
  for (const expectation& e : claims_) check(e, read_back(e.stream, e.words, e.count));
  for (const expectation& e : reads_) check(e, std::vector<std::uint32_t>(e.words, e.words + e.count));
  claims_.clear();
  reads_.clear();
  if (wrong.empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (const std::string& line : wrong) failure << line << "\n";
  return failure;
}

}  // namespace streamsafe::testing
