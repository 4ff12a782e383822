//===- dispatch/plan.h - Planning and running one batch ---------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_DISPATCH_PLAN_H
#define TESSEL_RUNTIME_DISPATCH_PLAN_H

#include "dispatcher.h"

namespace tessel::dispatch {

/// tessel_attention_plan_build: validates the batch and fills `plan`.
tessel_status buildPlan(tessel_attention_plan_t &plan,
                        const int32_t *queryLens, const int32_t *contextLens,
                        size_t numRequests, int32_t maxBlocks);

/// reshape_and_cache of new tokens into the dispatcher's (non-latent) caches.
tessel_status writeCache(const tessel_attention_t &attention,
                         const tessel_tensor &k, const tessel_tensor &v,
                         const tessel_tensor &kCache,
                         const tessel_tensor &vCache,
                         const tessel_tensor &slotMapping, void *stream);

/// tessel_attention_run.
tessel_status runPlan(const tessel_attention_plan_t &plan,
                      const tessel_attention_buffers &buffers,
                      void *workspace, size_t workspaceBytes, void *stream);

} // namespace tessel::dispatch

#endif // TESSEL_RUNTIME_DISPATCH_PLAN_H
