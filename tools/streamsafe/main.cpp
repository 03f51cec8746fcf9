// streamsafe: the command-line entry point. Dispatches to one subcommand per file.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "streamsafe/config.hpp"
#include "streamsafe/error.hpp"

namespace {

struct subcommand {
  std::string_view name;
  int (*run)(const std::vector<std::string>&);
  std::string_view summary;
};

constexpr subcommand subcommands[] = {
    {"demo", streamsafe::cli::run_demo, "the two multi-stream bugs, caught and fixed (GPU when present, else sim)"},
    {"check", streamsafe::cli::run_check, "run the hazard engine over a recorded op log"},
    {"replay", streamsafe::cli::run_replay, "replay an allocation trace through the caching allocator"},
    {"report", streamsafe::cli::run_report, "analyse stream usage in a trace (ours or PyTorch's profiler)"},
    {"pipeline", streamsafe::cli::run_pipeline, "a training step on the stage pipeline: bound, overlap, hazards"},
};

void print_version() {
  std::cout << "streamsafe " << STREAMSAFE_VERSION << "\nbackends:" << (STREAMSAFE_HAVE_CUDA ? " cuda" : "")
            << " sim\n";
}

void print_help() {
  std::cout << "usage: streamsafe <command> [options]   (streamsafe <command> --help for details)\n\ncommands:\n";
  for (const auto& cmd : subcommands) {
    std::cout << "  " << cmd.name << std::string(10 - cmd.name.size(), ' ') << cmd.summary << '\n';
  }
  std::cout << "\n  --version   print the version and the compiled-in backends\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty() || words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
    print_help();
    return words.empty() ? 2 : 0;
  }
  if (words[0] == "--version") {
    print_version();
    return 0;
  }
  for (const auto& cmd : subcommands) {
    if (words[0] != cmd.name) continue;
    try {
      return cmd.run(std::vector<std::string>(words.begin() + 1, words.end()));
    } catch (const streamsafe::usage_error& e) {
      std::cerr << e.what() << '\n';
      return 2;
    } catch (const streamsafe::parse_error& e) {
      std::cerr << e.what() << '\n';
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "streamsafe " << cmd.name << ": " << e.what() << '\n';
      return 3;
    }
  }
  std::cerr << "streamsafe: unknown command '" << words[0] << "' (streamsafe --help lists them)\n";
  return 2;
}
