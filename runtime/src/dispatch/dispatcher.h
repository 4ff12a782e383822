//===- dispatch/dispatcher.h - What the dispatcher handles hold -*- C++ -*-===//
//
// A dispatcher (tessel_attention) is a validated configuration and its
// kernels, immutable after creation. A plan is one batch's decisions: the
// phase ranges, which composition each range runs, the split-KV factor, the
// context-chunk schedule, the workspace layout, and the small int32 image
// (rebased cu_seqlens, per-chunk context lengths) that a run copies to the
// head of the workspace.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_DISPATCH_DISPATCHER_H
#define TESSEL_RUNTIME_DISPATCH_DISPATCHER_H

#include "kernel_set.h"

#include <cstddef>
#include <cstdint>
#include <vector>

struct tessel_attention_t {
  tessel_bundle bundle = nullptr;
  /// Validated, with defaults applied and routing resolved (never AUTO).
  tessel_attention_config config;
  tessel::dispatch::KernelSet kernels;
};

namespace tessel::dispatch {

/// Consecutive requests and their query tokens, in plan order.
struct Range {
  size_t firstRequest = 0, requests = 0;
  int64_t firstToken = 0, tokens = 0;
  bool empty() const { return requests == 0; }
};

/// A context chunk: every request of the extend range attends to its cached
/// tokens [start, start + width) (clipped to its context).
struct Chunk {
  int64_t start, width;
};

/// Byte offsets into the workspace; each region is 16-byte aligned.
struct WorkspaceLayout {
  size_t metadata = 0;
  // Decode split partials [P, D, Hq, Dv] f32 and their LSE [P, Hq, D].
  size_t decodePartials = 0, decodeLse = 0;
  // Extend: accumulators A and B and a chunk C, [T, Hq, Dv] f32 each, and
  // their LSE [Hq, T]. Parallel chunks: the P + 1 partials [P + 1, T, Hq,
  // Dv] (the new tokens' first) at extendOut[0], their LSE at extendLse[0].
  size_t extendOut[3] = {}, extendLse[3] = {};
  // Unified, split: the P partials [P, T, Hq, Dv] f32 and their LSE.
  size_t unifiedPartials = 0, unifiedLse = 0;
  size_t total = 0;
};

} // namespace tessel::dispatch

struct tessel_attention_plan_t {
  const tessel_attention_t *attention = nullptr;
  size_t capacity = 0;

  size_t requests = 0;
  size_t phaseRequests[3] = {};
  int64_t phaseTokens[3] = {};
  int64_t maxBlocks = 0;
  /// What runs where: the decode kernel, the extend composition and the
  /// prefill kernel, each over a range of requests (which phases go to which
  /// range depends on the routing mode).
  tessel::dispatch::Range decodeRange, extendRange, prefillRange;
  /// The unified routing: the whole batch in one causal paged kernel over
  /// each request's sequence (its cu_seqlens at extendCuOffset); in
  /// kvSplits windows when above 1.
  tessel::dispatch::Range unifiedRange;
  /// The first query token that q/k/v/out hold: MLA decodes have their own
  /// buffers, so there the non-decode tokens start at 0.
  int64_t tokenBase = 0;
  int32_t kvSplits = 1;
  std::vector<tessel::dispatch::Chunk> chunks;
  /// The chunks are the windows of one split-form launch, merged at once
  /// with the new tokens' partial (see plan.cpp).
  bool parallelChunks = false;
  /// The int32 image copied to the workspace: the extend (or unified)
  /// range's cu_seqlens, the prefill range's, then each chunk's context
  /// lengths of the extend range.
  std::vector<int32_t> metadata;
  size_t extendCuOffset = 0, prefillCuOffset = 0, chunkLensOffset = 0;
  /// Entries from one chunk's context lengths to the next (16-byte
  /// aligned).
  size_t chunkLensStride = 0;
  tessel::dispatch::WorkspaceLayout workspace;
};

#endif // TESSEL_RUNTIME_DISPATCH_DISPATCHER_H
