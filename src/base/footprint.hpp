// What dtmpi's own structures hold in this process, reported by the module
// that owns each one (issue 28: dtmpi must not add memory that grows with the
// number of ranks beyond a few bytes per peer). Each part says how many of its
// bytes are per world rank, so the total can be scaled to a job of any size:
// bytes(N) = fixed + per_rank * N. Sizes are the structures' own (element
// sizes times capacities, hash nodes and buckets), not malloc's overhead.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dtmpi::footprint {

struct Part {
  const char* name;      // what it is, e.g. "peer facts"
  const char* grows_with;  // "world ranks", "types", "requests", "threads", "use" (bounded caches), "fixed"
  int64_t fixed = 0;     // bytes that do not depend on the job's size
  int64_t per_rank = 0;  // bytes per world rank
  int64_t bytes_at(int64_t ranks) const { return fixed + per_rank * ranks; }
};

// A module's report: appends its parts. Registered once (at static
// initialization: `[[maybe_unused]] const bool r = add_source(fn);`), called
// by parts() from any thread, so it takes the module's own locks.
using Source = void (*)(std::vector<Part>&);
bool add_source(Source source);

// The job's size, set at MPI_Init by the module that learns it (transport/peers).
void set_world_ranks(int ranks);
int world_ranks();

std::vector<Part> parts();
// Every part's bytes in a job of `ranks` ranks (<= 0: this job's size).
int64_t total_bytes(const std::vector<Part>& parts, int64_t ranks = 0);
// One line: the total now and at `scaled_ranks`, bytes per rank, then each
// part that holds anything ("peer facts 88 B (11 B/rank)", ...).
std::string describe(int64_t scaled_ranks = 3072);

}  // namespace dtmpi::footprint
