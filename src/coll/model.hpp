// LogGP models of the collective algorithms (Nishtala thesis, sections 5.3
// and 6.1-6.2; research digest seed-001, section 3). Their job is to rank
// candidates so that dtmpi-tune times only the best few, not to predict
// times (thesis 8.3.4: about 25% of an exhaustive search, the model's pick
// within 10% of the best). Reductions' arithmetic is not modelled, as in the
// thesis.
#pragma once
#include <cstdint>
#include <vector>

#include "coll/coll.hpp"

namespace dtmpi::coll {

// L: latency of the first byte; o: a message's overhead at either end; g:
// the gap between two messages one process injects; G: time per byte. All in
// microseconds (G per byte).
struct LogGP {
  double L = 0, o = 0, g = 0, G = 0;
};

// The thesis's closed forms, for N nodes of t threads, B bytes per thread and
// radix k (digest section 3; reproduced by tests/coll/test_coll_model.cpp from
// its section 3.9 table).
double kary_broadcast(const LogGP& p, int N, int64_t B, int k);
double kary_scatter(const LogGP& p, int N, int t, int64_t B, int k);
double dissemination_exchange(const LogGP& p, int N, int t, int64_t B, int k);
double gather_to_all_dissemination(const LogGP& p, int N, int t, int64_t B);
double gather_to_all_flat(const LogGP& p, int N, int t, int64_t B);
// ceil(log_k(n)) for n >= 1, k >= 2
int levels(int n, int k);

// The predicted time of dtmpi's algorithm `a` for `op` on `n` ranks of one
// node and `bytes` bytes per rank; a negative value where `a` does not
// implement `op` (Algorithm::kSystem included: the system MPI's time is only
// measured).
double predict(const LogGP& p, CollOpKind op, Algorithm a, int n, int64_t bytes);
// dtmpi's algorithms for `op` (the system MPI's not among them).
std::vector<Algorithm> algorithms_for(CollOpKind op);
// `op`'s algorithms ranked by predict(), best first.
std::vector<Algorithm> ranked(const LogGP& p, CollOpKind op, int n, int64_t bytes);

}  // namespace dtmpi::coll
