//===- PagedDecode.h - What the paged decode kernels share ------*- C++ -*-===//
//
// The decode problem of PagedDecode.cpp (the template: every target) and
// PagedDecodeTransposed.cpp (CDNA's loop on transposed scores).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_CONVERSION_TESSELTOGPU_PAGEDDECODE_H
#define TESSEL_LIB_CONVERSION_TESSELTOGPU_PAGEDDECODE_H

#include "AttentionBuilder.h"

namespace mlir::tessel::decode {

/// What one decode kernel computes (everything static but the buffers).
struct DecodeProblem {
  Value q, kCache, vCache, blockTable, lens, out, lse;
  KVLayout layout;
  int64_t groupSize, kvHeads, headDim, valueDim, blockSize;
  /// The softmax scale argument times log2(e) (scores are base 2).
  Value scaleLog2;
  /// out/lse have a leading split dimension [P, ...].
  bool split;
};

/// The 32x32 atom of CDNA's decode on transposed scores where `pb`'s shapes
/// allow it (GQA groups up to 32, cache blocks of whole 16-token groups,
/// head dims whose rows split over a wave's two lane halves), else
/// std::nullopt: the template's loop then runs.
std::optional<MmaAtom> transposedDecodeAtom(const TargetInfo &target, Type elem,
                                            const DecodeProblem &pb);

/// Builds the kernel body on `atom` (transposedDecodeAtom's); returns the
/// threads of a block and sets `sharedBytes`.
FailureOr<int64_t> buildTransposedDecode(OpBuilder &b, Location loc,
                                         const TargetInfo &target,
                                         const MmaAtom &atom,
                                         const DecodeProblem &pb,
                                         int64_t &sharedBytes);

} // namespace mlir::tessel::decode

#endif // TESSEL_LIB_CONVERSION_TESSELTOGPU_PAGEDDECODE_H
