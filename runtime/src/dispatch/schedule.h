//===- dispatch/schedule.h - The dispatcher's planning arithmetic -*- C++ -*-===//
//
// Pure host code, no device and no allocation: which phase a request is in,
// the [decode : extend : prefill] order, the context-chunk schedule of the
// extends and the split-KV factor of the decodes. Kept apart from the
// kernels so that every boundary can be unit-tested on plain numbers.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_DISPATCH_SCHEDULE_H
#define TESSEL_RUNTIME_DISPATCH_SCHEDULE_H

#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>

namespace tessel::dispatch {

/// decode: query length <= threshold; extend: more tokens and a cached
/// context; prefill: more tokens and no context.
tessel_phase classify(int32_t queryLen, int32_t contextLen,
                      int32_t decodeThreshold);

/// Fills order[0, n) with the stable [decode : extend : prefill] order.
void orderByPhase(const int32_t *queryLens, const int32_t *contextLens,
                  size_t n, int32_t decodeThreshold, int32_t *order);

/// The next chunk of a context schedule: each request in `contextLens[0, n)`
/// attends to its cached tokens [start, start + width) in this chunk. The
/// width is the largest multiple of `blockSize` for which the chunk's tokens,
/// summed over the requests, stay within `budget` (so a long context gets the
/// budget that short ones leave unused), and at least one block. 0 when no
/// context reaches past `start` (the schedule is over).
int64_t nextChunkWidth(const int32_t *contextLens, size_t n, int64_t start,
                       int64_t budget, int64_t blockSize);

/// Tokens of the chunk [start, start + width) summed over the requests.
int64_t chunkTokens(const int32_t *contextLens, size_t n, int64_t start,
                    int64_t width);

/// What the split-KV choice depends on.
struct SplitInputs {
  size_t requests;         ///< decodes in the batch
  int64_t blocksPerSplit1; ///< blocks of work per request and split (e.g.
                           ///< KV heads, or head groups for MLA)
  int64_t maxContext;      ///< longest decode context, tokens
  int64_t maxBlocks;       ///< width of the block table
  int64_t blockSize;
  int32_t computeUnits;
  int32_t maxSplits;
  /// Blocks of work per compute unit the splits aim at.
  int32_t blocksPerUnit = 2;
  /// Aim at the most whole waves of blocksPerUnit blocks a unit (rounding
  /// down) rather than at least one (rounding up): for a kernel that runs
  /// one block a unit, a wave and a bit costs two.
  bool wholeWaves = false;
};

/// The split count P of the split-form decode kernel, whose partial p covers
/// the window [p W, (p + 1) W), W = ceil(maxBlocks / P) * blockSize. It aims
/// at blocksPerUnit blocks of work per compute unit, with at least kMinSplitTokens of
/// context per useful window, and takes the smallest P that gives the most
/// useful windows (a wide block table can make extra splits empty). 1 means
/// no split.
int32_t chooseKvSplits(const SplitInputs &in);

/// Context tokens below which a split does not pay for its merge.
constexpr int64_t kMinSplitTokens = 512;

/// The window of split p (see chooseKvSplits), in tokens.
int64_t splitWindow(int64_t maxBlocks, int32_t splits, int64_t blockSize);

} // namespace tessel::dispatch

#endif // TESSEL_RUNTIME_DISPATCH_SCHEDULE_H
