//===- dispatch/kernel_set.h - The kernels of one attention config -*- C++ -*-===//
//
// The dispatcher finds its kernels by op and shape parameters, not by name:
// any bundle that has kernels of the right shapes serves, whatever a spec
// called them. Each role below is one kernel of the compositions in
// dispatch/run.cpp; a role the routing mode needs and the bundle lacks is a
// refusal at creation, with the kernels of that op the bundle does have.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_DISPATCH_KERNEL_SET_H
#define TESSEL_RUNTIME_DISPATCH_KERNEL_SET_H

#include "tessel/runtime.h"

namespace tessel::dispatch {

struct KernelSet {
  /// Decode, unsplit, straight into out (optional: the split kernel with
  /// one split and a merge does the same). MLA: absorbed mla_decode.
  tessel_kernel decode = nullptr;
  /// Decode split-KV partials (f32, with LSE) and their N-way merge.
  tessel_kernel decodeSplit = nullptr;
  tessel_kernel decodeMerge = nullptr;
  /// Causal varlen attention of new prompts, straight into out.
  tessel_kernel prefill = nullptr;
  /// The extend composition: the new tokens' causal attention as an f32
  /// partial with LSE; one context chunk over the paged cache (split form,
  /// one split, with cu_seqlens); the two-way merges that fold chunks into
  /// an f32 accumulator and the last one into out.
  tessel_kernel extendNew = nullptr;
  tessel_kernel extendContext = nullptr;
  tessel_kernel mergeAccumulate = nullptr;
  tessel_kernel mergeOut = nullptr;
  /// The N-way merge of the new tokens' partial and all context windows
  /// at once, into out (optional: without it, chunks always run one after
  /// the other).
  tessel_kernel extendMerge = nullptr;
  /// reshape_and_cache into the (non-latent) caches; optional.
  tessel_kernel cacheWrite = nullptr;
  /// The unified routing: the whole batch in one causal paged_attention
  /// over each request's sequence (context and new tokens, all in the
  /// cache), straight into out; and its split form (f32 partials of P
  /// windows with LSE, merged by extendMerge; optional: without it the
  /// batch is never split).
  tessel_kernel unified = nullptr;
  tessel_kernel unifiedSplit = nullptr;
};

/// Fills `set` with what `routing` needs under `config` (already validated,
/// v_head_dim resolved), or returns TESSEL_UNSUPPORTED naming the missing
/// role and listing the bundle's kernels of that op.
tessel_status findKernels(tessel_bundle bundle,
                          const tessel_attention_config &config,
                          tessel_routing routing, KernelSet &set);

} // namespace tessel::dispatch

#endif // TESSEL_RUNTIME_DISPATCH_KERNEL_SET_H
