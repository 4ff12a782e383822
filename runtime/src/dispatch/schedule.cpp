//===- dispatch/schedule.cpp - The dispatcher's planning arithmetic -------===//

#include "schedule.h"

#include <algorithm>

using namespace tessel;

tessel_phase dispatch::classify(int32_t queryLen, int32_t contextLen,
                                int32_t decodeThreshold) {
  if (queryLen <= decodeThreshold)
    return TESSEL_PHASE_DECODE;
  return contextLen > 0 ? TESSEL_PHASE_EXTEND : TESSEL_PHASE_PREFILL;
}

void dispatch::orderByPhase(const int32_t *queryLens,
                            const int32_t *contextLens, size_t n,
                            int32_t decodeThreshold, int32_t *order) {
  // Three passes keep each phase in the caller's order without scratch.
  size_t next = 0;
  for (tessel_phase phase :
       {TESSEL_PHASE_DECODE, TESSEL_PHASE_EXTEND, TESSEL_PHASE_PREFILL})
    for (size_t i = 0; i < n; ++i)
      if (classify(queryLens[i], contextLens[i], decodeThreshold) == phase)
        order[next++] = static_cast<int32_t>(i);
}

int64_t dispatch::chunkTokens(const int32_t *contextLens, size_t n,
                              int64_t start, int64_t width) {
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i)
    total += std::clamp<int64_t>(contextLens[i] - start, 0, width);
  return total;
}

int64_t dispatch::nextChunkWidth(const int32_t *contextLens, size_t n,
                                 int64_t start, int64_t budget,
                                 int64_t blockSize) {
  int64_t longest = 0;
  for (size_t i = 0; i < n; ++i)
    longest = std::max<int64_t>(longest, contextLens[i] - start);
  if (longest <= 0)
    return 0;
  // Widths in blocks: the chunk's tokens grow with the width, so the
  // largest width within the budget is a binary search.
  int64_t lo = 1, hi = (longest + blockSize - 1) / blockSize;
  if (chunkTokens(contextLens, n, start, hi * blockSize) <= budget)
    return hi * blockSize;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (chunkTokens(contextLens, n, start, mid * blockSize) <= budget)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo * blockSize;
}

int64_t dispatch::splitWindow(int64_t maxBlocks, int32_t splits,
                              int64_t blockSize) {
  return (maxBlocks + splits - 1) / splits * blockSize;
}

int32_t dispatch::chooseKvSplits(const SplitInputs &in) {
  if (in.requests == 0 || in.maxContext <= 0 || in.maxBlocks <= 0)
    return 1;
  int64_t work = static_cast<int64_t>(in.requests) * in.blocksPerSplit1;
  int64_t slots = int64_t{in.blocksPerUnit} * in.computeUnits;
  int64_t desired = in.wholeWaves ? slots / work : (slots + work - 1) / work;
  desired = std::min(desired,
                     (in.maxContext + kMinSplitTokens - 1) / kMinSplitTokens);
  desired = std::min<int64_t>(desired, in.maxSplits);
  if (desired <= 1)
    return 1;
  int32_t best = 1;
  int64_t bestUseful = 1;
  for (int32_t p = 2; p <= in.maxSplits && bestUseful < desired; ++p) {
    int64_t window = splitWindow(in.maxBlocks, p, in.blockSize);
    int64_t useful = (in.maxContext + window - 1) / window;
    if (useful > bestUseful) {
      bestUseful = useful;
      best = p;
    }
  }
  return best;
}
