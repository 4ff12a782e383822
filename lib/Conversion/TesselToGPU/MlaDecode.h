//===- MlaDecode.h - What the MLA decode kernels share ----------*- C++ -*-===//
//
// The absorbed MLA decode problem of MlaDecode.cpp (the template: sm80, and
// the CDNA shapes the transposed loop does not take) and
// MlaDecodeTransposed.cpp (CDNA's loop on transposed scores).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_CONVERSION_TESSELTOGPU_MLADECODE_H
#define TESSEL_LIB_CONVERSION_TESSELTOGPU_MLADECODE_H

#include "AttentionBuilder.h"

namespace mlir::tessel::mla {

/// What one MLA decode kernel computes (everything static but the buffers).
struct MlaProblem {
  Value q, cache, blockTable, lens, out, lse;
  int64_t heads, headDim, latentDim, blockSize;
  /// The softmax scale argument times log2(e) (scores are base 2).
  Value scaleLog2;
  /// out/lse have a leading split dimension [P, ...].
  bool split;
};

/// What both MLA decode builders share: the problem and the block's ids.
class MlaBuilderBase : public AttentionBuilder {
protected:
  MlaBuilderBase(OpBuilder &b, Location loc, const TargetInfo &target,
                 const MmaAtom &atom, const MlaProblem &pb)
      : AttentionBuilder(b, loc, target, atom), pb(pb) {}
  /// Sets this block's head group (of atom.m heads), request and split:
  /// head groups are the fastest grid dimension, so that a request's
  /// groups, which read the same cache rows, run side by side on one L2.
  void setBlockIds();

  MlaProblem pb;
  Value group, request, split;
};

/// The 16x16 atom of CDNA's MLA decode on transposed scores where `pb`'s
/// shapes allow it (16-bit elements, rows of whole 32-dim runs, cache
/// blocks of whole 16-token groups, the waves' value slices within shared
/// memory), else std::nullopt: the template's loop then runs.
std::optional<MmaAtom> transposedMlaAtom(const TargetInfo &target, Type elem,
                                         const MlaProblem &pb);
/// Builds the kernel body on `atom` (transposedMlaAtom's); returns the
/// threads of a block and sets `sharedBytes`.
FailureOr<int64_t> buildTransposedMlaDecode(OpBuilder &b, Location loc,
                                            const TargetInfo &target,
                                            const MmaAtom &atom,
                                            const MlaProblem &pb,
                                            int64_t &sharedBytes);

} // namespace mlir::tessel::mla

#endif // TESSEL_LIB_CONVERSION_TESSELTOGPU_MLADECODE_H
