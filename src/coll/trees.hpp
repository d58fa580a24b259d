// Trees over the ranks of a communicator relative to the root (rank 0 is the
// root), as the thesis builds them (section 5.1.2, Figs 5.3 and 5.8; claim
// C1 of the research digest): every subtree a contiguous range of ranks, so a
// Scatter or Gather moves one contiguous block per child, and children listed
// highest rank first (the farthest subtree, the one with the longest way to
// go, is served first).
#pragma once
#include <vector>

namespace dtmpi::coll {

// K-ary tree (k >= 1; k = 1 is a chain): a node's subtree [v, v + size) is
// split after v into k contiguous ranges as equal as possible (the first ones
// one larger); their first ranks are its children.
std::vector<int> kary_children(int v, int n, int k);
int kary_parent(int v, int n, int k);  // -1 for the root
// Child i of v in ascending order (-1 past the last); no allocation.
int kary_child(int v, int n, int k, int i);
// K-nomial tree (k >= 2; k = 2 is the binomial tree): the parent of v clears
// its lowest non-zero base-k digit; the children add d * k^j (d = 1..k-1) for
// every position j below that digit (every position for the root).
std::vector<int> knomial_children(int v, int n, int k);
int knomial_parent(int v, int k);  // -1 for the root
// Child i of v in ascending order (i = 0, 1, ...; -1 past the last): the
// order in which a non-commutative reduction folds the children's ranges,
// which follow v's own rank contiguously. No allocation (called while polling).
int knomial_child(int v, int n, int k, int i);
// The subtree of v: [v, v + subtree_size) (contiguous in both trees).
int kary_subtree_size(int v, int n, int k);
int knomial_subtree_size(int v, int n, int k);

// The tree an algorithm builds over relative ranks (root 0): K-nomial of
// radix k (2: the binomial tree) or K-ary of k children. Both keep every
// subtree a contiguous range [v, v + subtree) with the children's ranges
// following v in ascending order, so the same folds (MPI's order for a
// non-commutative op), forwards and block ranges serve either.
struct Tree {
  enum class Shape { kKnomial, kKary };
  Shape shape = Shape::kKnomial;
  int k = 2;
  int parent(int v, int n) const;        // -1 for the root
  int child(int v, int n, int i) const;  // ascending; -1 past the last; no allocation
  int subtree(int v, int n) const;
};
// The levels below the root (the model's latency term).
int tree_depth(int n, const Tree& t);

// Bruck's all-to-all exchange of radix k (k >= 2) on n ranks: index i of a
// rank's rotated blocks travels i ranks, one move per non-zero base-k digit
// of i. Round (d, v) -- digit places k^d < n ascending, then values
// v = 1..k-1 with v k^d < n -- moves every index whose digit d is v by
// v k^d ranks. The k-1 rounds of one place move disjoint indices from
// different ranks, so they need nothing of one another: one level (a phase)
// per place, ceil(log_k(n)) of them. A scratch slot holds the rounds' pieces
// one after another, each round's in ascending index order.
struct BruckRound {
  int level;   // d
  int place;   // k^d
  int digit;   // v
  int shift;   // v k^d: ranks a piece moves
  int first;   // pieces of the earlier rounds (this round's follow them)
  int pieces;  // indices in [0, n) whose digit d is v
};
std::vector<BruckRound> bruck_rounds(int n, int k);
// Index i's place among its round's pieces: the indices below i whose digit
// of `place` is `digit`.
int bruck_position(int i, const BruckRound& r, int k);
// The first round after round `after` (-1: from the first) in which index i
// moves; -1 where it moves no more. No allocation (called while polling).
int bruck_next_round(const std::vector<BruckRound>& rounds, int i, int after, int k);

}  // namespace dtmpi::coll
