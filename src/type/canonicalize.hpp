// Order-preserving canonicalization of TypeIR (TEMPI's rules, corrected; see
// docs/datatype-engine.md). Different constructions of the same typemap give
// the same tree; the packed byte stream never changes.
#pragma once
#include "type/ir.hpp"

namespace dtmpi::type {

// Returns the canonical form of `ir`. Rules, applied bottom-up to a fixed point:
//  - elision: empty nodes and count-0 streams vanish; a count-1 stream or
//    one-item Seq is replaced by its child, which inherits its offset;
//  - dense folding: Stream over Dense with len == stride becomes one Dense;
//    adjacent Dense items of a Seq that touch are merged;
//  - stream flattening: Stream(c1,s1) over Stream(c2,s2) with s1 == c2*s2
//    becomes Stream(c1*c2, s2);
//  - regularization (beyond TEMPI): consecutive Seq items of the same shape at
//    a constant distance become a Stream, so indexed/hindexed/struct types with
//    regular blocks end up strided.
// No rule ever swaps two levels: that would reorder the packed stream.
TypeIR canonicalize(TypeIR ir);

}  // namespace dtmpi::type
