// Command lines of dtmpi's MPI tools (dtmpi-info, dtmpi-measure, dtmpi-bench):
// every option is declared once with its help line, `--help` prints the usage
// and exits 0, anything undeclared is an error that says what to run instead.
// Parsing happens before MPI_Init, so that neither `--help` nor a typo starts
// MPI or a measurement: under `mpiexec -n 2` every rank parses the same argv
// and exits the same way, and only the launcher's rank 0 prints.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace dtmpi::tools {

struct Option {
  const char* name;   // "--quick"
  const char* value;  // the value's name in the help ("DIR"), nullptr for a flag
  const char* help;
};

// This process's rank as its launcher announced it (Open MPI, MPICH's Hydra,
// PMIx, Slurm), before MPI_Init; 0 when started alone.
inline int launcher_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char* s = std::getenv(v); s && *s) return std::atoi(s);
  return 0;
}

// One option a line, `indent` spaces in (its help wrapped at 100 columns,
// continued under itself).
inline void print_options(FILE* f, const std::vector<Option>& options, size_t indent = 2) {
  constexpr size_t kLeft = 24, kWidth = 100 - kLeft - 1;
  for (const auto& o : options) {
    const std::string left = std::string(indent, ' ') + o.name + (o.value ? std::string(" ") + o.value : "");
    std::fprintf(f, "%-*s", static_cast<int>(kLeft), left.c_str());
    if (left.size() >= kLeft) std::fprintf(f, "\n%-*s", static_cast<int>(kLeft), "");
    std::string help = o.help;
    for (bool first = true; !help.empty(); first = false) {
      size_t cut = help.size() <= kWidth ? help.size() : help.rfind(' ', kWidth);
      if (cut == std::string::npos || cut == 0) cut = std::min(help.size(), kWidth);
      std::fprintf(f, "%s%s\n", first ? " " : std::string(kLeft + 1, ' ').c_str(), help.substr(0, cut).c_str());
      help.erase(0, cut);
      while (!help.empty() && help[0] == ' ') help.erase(0, 1);
    }
    if (!o.help[0]) std::fprintf(f, "\n");
  }
}

struct Args {
  std::map<std::string, std::string> values;  // option -> its value ("" for a flag)
  bool has(const char* name) const { return values.count(name) != 0; }
  const char* get(const char* name, const char* dflt) const {
    auto it = values.find(name);
    return it == values.end() ? dflt : it->second.c_str();
  }
};

inline bool is_help(const char* a) { return std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0; }

// Parses argv[first..argc) against `options` (`--help`/`-h` always accepted).
// Returns -1 when the tool should run, else its exit code: 0 after the usage
// (printed by `usage` on rank 0), 2 after a mistake (reported on rank 0 with
// the command that shows the usage).
// Values follow their option as the next argument (`--out DIR`), the form
// every benchmark's own parser reads.
template <class Usage>
int parse(const char* program, int argc, char** argv, int first, const std::vector<Option>& options,
          Usage usage, Args& out) {
  const bool speak = launcher_rank() == 0;
  auto fail = [&](const std::string& what) {
    if (speak) std::fprintf(stderr, "%s: %s\nRun '%s --help' for the usage.\n", program, what.c_str(), program);
    return 2;
  };
  for (int i = first; i < argc; ++i) {
    const char* a = argv[i];
    if (is_help(a)) {
      if (speak) usage(stdout);
      return 0;
    }
    const std::string name = a;
    std::string value;
    const Option* o = nullptr;
    for (const auto& c : options)
      if (name == c.name) o = &c;
    if (!o) return fail(name.rfind("-", 0) == 0 ? "unknown option '" + name + "'" : "unexpected argument '" + name + "'");
    if (o->value) {
      if (i + 1 >= argc) return fail(std::string("option ") + o->name + " needs a value (" + o->value + ")");
      value = argv[++i];
    }
    out.values[o->name] = value;
  }
  return -1;
}

}  // namespace dtmpi::tools
