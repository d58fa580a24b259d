// The tuned choices dtmpi-tune writes (Nishtala thesis, chapter 8: "a second
// structure stores the best algorithm and parameters, indexed by the input
// tuple"): per operation, message size, communicator size, ranks per node,
// memory kind, in-place and blocking vs many in flight, the algorithm that
// measured fastest there -- the system MPI's own included -- with the times.
// A JSON file in the cache directory next to the performance model
// (coll-<host>.json, or DTMPI_COLL_TABLE); read by DTMPI_COLL=tuned, which
// looks up the closest entry (thesis 8.2.2: "find the closest match to an
// existing input tuple").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coll/coll.hpp"
#include "coll/model.hpp"

namespace dtmpi::coll {

struct TuningKey {
  CollOpKind op = CollOpKind::kBarrier;
  int64_t bytes = 0;        // per rank
  int ranks = 1;            // communicator size
  int ranks_per_node = 1;
  bool device = false;      // GPU buffers (staged by the interposer) vs host
  bool in_place = false;
  bool in_flight = false;   // many non-blocking ones in flight vs blocking
};

struct TuningEntry {
  TuningKey key;
  Algorithm algorithm = Algorithm::kSystem;
  double us = 0;         // the chosen one's time
  double system_us = 0;  // the system MPI's, measured beside it
};

struct TuningTable {
  std::string library_version, host, mpi;
  LogGP loggp;
  std::vector<TuningEntry> entries;
};

const char* op_name(CollOpKind op);
std::optional<CollOpKind> op_from_name(const std::string& s);
const char* algorithm_name(Algorithm a);  // as DTMPI_COLL names it ("system" for kSystem)
std::optional<Algorithm> algorithm_from_name(const std::string& s);

std::string to_json(const TuningTable& t);
// False (with `why`) for text that is not such a table.
bool from_json(const std::string& text, TuningTable& out, std::string* why);

// The entry closest to `k`: the same operation (none: nullopt), then the same
// memory kind, in-place and blocking flags where the table has such entries,
// then the nearest communicator size and message size class (bytes_class; in
// powers of two, a size class weighing a quarter of a factor 2 in ranks).
// Depends on the message size through its class only.
int bytes_class(int64_t bytes);
std::optional<Algorithm> lookup(const TuningTable& t, const TuningKey& k);
// The entry lookup answers from (null: none for the operation).
const TuningEntry* closest(const TuningTable& t, const TuningKey& k);

// The default file: <DTMPI_CACHE_DIR>/coll-<host>.json (DTMPI_COLL_TABLE
// overrides).
std::string default_table_path();

}  // namespace dtmpi::coll
