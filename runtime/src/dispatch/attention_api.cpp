//===- dispatch/attention_api.cpp - The dispatcher's C entry points -------===//
//
// Configuration checks and defaults, the routing mode (TESSEL_ATTENTION),
// and the C wrappers of schedule.h / plan.h. Every entry point that returns
// a status runs under guard(), like the rest of the C API.
//
//===----------------------------------------------------------------------===//

#include "dispatcher.h"
#include "plan.h"
#include "schedule.h"

#include "../core/handles.h"
#include "../core/status.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

using namespace tessel;
using namespace tessel::dispatch;
using tessel::runtime::annotate;
using tessel::runtime::guard;
using tessel::runtime::makeStatusf;

namespace {

constexpr tessel_routing kRoutings[] = {
    TESSEL_ROUTING_AUTO, TESSEL_ROUTING_TRIPLE, TESSEL_ROUTING_UNIFIED,
    TESSEL_ROUTING_TWO_PATH};

/// AUTO resolved: TESSEL_ATTENTION if set (and not "auto"), else triple,
/// which for MLA is the MLA path (absorbed decode, non-absorbed rest).
tessel_status resolveRouting(tessel_routing requested, tessel_routing &out) {
  out = requested == TESSEL_ROUTING_AUTO ? TESSEL_ROUTING_TRIPLE : requested;
  if (requested != TESSEL_ROUTING_AUTO)
    return nullptr;
  const char *env = std::getenv("TESSEL_ATTENTION");
  if (!env || !*env)
    return nullptr;
  for (tessel_routing routing : kRoutings)
    if (std::strcmp(env, tessel_routing_name(routing)) == 0) {
      if (routing != TESSEL_ROUTING_AUTO)
        out = routing;
      return nullptr;
    }
  return makeStatusf(TESSEL_INVALID_ARGUMENT,
                     "TESSEL_ATTENTION='%s' is not a routing mode (auto, "
                     "triple, unified, two_path)",
                     env);
}

/// Checks `c` and fills in its defaults; the message names the field.
tessel_status validate(tessel_attention_config &c) {
  auto bad = [](const char *fmt, auto... args) {
    return makeStatusf(TESSEL_INVALID_ARGUMENT, fmt, args...);
  };
  if (c.struct_size != sizeof(tessel_attention_config))
    return bad("config.struct_size is %u, expected %zu: initialise the "
               "config with tessel_attention_config_init",
               c.struct_size, sizeof(tessel_attention_config));
  if (c.kind != TESSEL_ATTENTION_MHA && c.kind != TESSEL_ATTENTION_MLA)
    return bad("config.kind %d is neither TESSEL_ATTENTION_MHA nor "
               "TESSEL_ATTENTION_MLA",
               static_cast<int>(c.kind));
  if (c.dtype != TESSEL_DTYPE_BF16 && c.dtype != TESSEL_DTYPE_F16 &&
      c.dtype != TESSEL_DTYPE_F32)
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "config.dtype %s is not supported: the dispatcher "
                       "runs bf16, f16 or f32 attention",
                       tessel_dtype_name(c.dtype));
  if (c.num_q_heads <= 0 || c.num_kv_heads <= 0 ||
      c.num_q_heads % c.num_kv_heads != 0)
    return bad("config.num_q_heads (%d) must be a positive multiple of "
               "config.num_kv_heads (%d)",
               c.num_q_heads, c.num_kv_heads);
  if (c.v_head_dim == 0)
    c.v_head_dim = c.head_dim;
  if (c.head_dim <= 0 || c.v_head_dim < 0)
    return bad("config.head_dim (%d) and v_head_dim (%d) must be positive",
               c.head_dim, c.v_head_dim);
  if (c.block_size <= 0 || c.block_size % 16 != 0)
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "config.block_size %d is not supported: cache blocks "
                       "hold a positive multiple of 16 tokens",
                       c.block_size);
  if (c.kv_layout != 0 && c.kv_layout != 1)
    return bad("config.kv_layout %d is neither 0 (NHD) nor 1 (CDNA "
               "pre-shuffled)",
               c.kv_layout);
  if (c.decode_threshold < 1)
    return bad("config.decode_threshold %d must be at least 1",
               c.decode_threshold);
  if (c.context_chunk_tokens < c.block_size)
    return bad("config.context_chunk_tokens %lld is less than one cache "
               "block (%d tokens)",
               static_cast<long long>(c.context_chunk_tokens), c.block_size);
  if (c.max_kv_splits < 1 || c.max_kv_splits > 256)
    return bad("config.max_kv_splits %d is outside [1, 256]",
               c.max_kv_splits);
  if (c.compute_units < 0)
    return bad("config.compute_units %d is negative", c.compute_units);
  if (c.softmax_scale == 0.0f)
    c.softmax_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (!(c.softmax_scale > 0.0f) || !std::isfinite(c.softmax_scale))
    return bad("config.softmax_scale %g must be finite and positive (0: "
               "1/sqrt(head_dim))",
               static_cast<double>(c.softmax_scale));
  if (c.kind == TESSEL_ATTENTION_MLA) {
    if (c.latent_dim <= 0 || c.rope_dim < 0)
      return bad("MLA needs config.latent_dim > 0 and rope_dim >= 0 (got %d "
                 "and %d)",
                 c.latent_dim, c.rope_dim);
    if (c.latent_block_size <= 0 || c.latent_block_size % 16 != 0)
      return makeStatusf(TESSEL_UNSUPPORTED,
                         "config.latent_block_size %d is not supported: "
                         "cache blocks hold a positive multiple of 16 tokens",
                         c.latent_block_size);
    if (c.decode_threshold != 1)
      return makeStatusf(TESSEL_UNSUPPORTED,
                         "MLA decodes run absorbed, one query token per "
                         "request: config.decode_threshold must be 1, got %d",
                         c.decode_threshold);
  }
  bool known = false;
  for (tessel_routing routing : kRoutings)
    known |= c.routing == routing;
  if (!known)
    return bad("config.routing %d is not a tessel_routing",
               static_cast<int>(c.routing));
  if (tessel_status status = resolveRouting(c.routing, c.routing))
    return status;
  if (c.kind == TESSEL_ATTENTION_MLA && c.routing == TESSEL_ROUTING_UNIFIED)
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "the unified routing is for MHA/GQA only: MLA decodes "
                       "run absorbed on the latent cache, which the unified "
                       "kernel does not read (use triple or two_path)");
  return nullptr;
}

} // namespace

void tessel_attention_config_init(tessel_attention_config *config) {
  if (!config)
    return;
  std::memset(config, 0, sizeof *config);
  config->struct_size = sizeof *config;
  config->kind = TESSEL_ATTENTION_MHA;
  config->dtype = TESSEL_DTYPE_BF16;
  config->routing = TESSEL_ROUTING_AUTO;
  config->decode_threshold = 1;
  config->context_chunk_tokens = 32768;
  config->max_kv_splits = 32;
}

const char *tessel_routing_name(tessel_routing routing) {
  switch (routing) {
  case TESSEL_ROUTING_AUTO:
    return "auto";
  case TESSEL_ROUTING_TRIPLE:
    return "triple";
  case TESSEL_ROUTING_UNIFIED:
    return "unified";
  case TESSEL_ROUTING_TWO_PATH:
    return "two_path";
  }
  return "";
}

tessel_status tessel_attention_create(tessel_bundle bundle,
                                      const tessel_attention_config *config,
                                      tessel_attention *out_attention) {
  return guard("creating an attention dispatcher", [&]() -> tessel_status {
    if (!bundle || !config || !out_attention)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_attention_create: bundle, config and "
                         "out_attention must not be NULL");
    *out_attention = nullptr;
    auto attention = std::make_unique<tessel_attention_t>();
    attention->bundle = bundle;
    attention->config = *config;
    tessel_attention_config &c = attention->config;
    if (tessel_status status = validate(c))
      return annotate(status, "tessel_attention_create");
    if (c.compute_units == 0)
      c.compute_units =
          static_cast<int32_t>(bundle->device->backend->computeUnits());
    if (tessel_status status =
            findKernels(bundle, c, c.routing, attention->kernels))
      return annotate(status, "tessel_attention_create");
    *out_attention = attention.release();
    return nullptr;
  });
}

void tessel_attention_release(tessel_attention attention) { delete attention; }

tessel_routing tessel_attention_routing(tessel_attention attention) {
  return attention ? attention->config.routing : TESSEL_ROUTING_AUTO;
}

tessel_phase tessel_attention_classify(tessel_attention attention,
                                       int32_t query_len,
                                       int32_t context_len) {
  return classify(query_len, context_len,
                  attention ? attention->config.decode_threshold : 1);
}

tessel_status tessel_attention_order(tessel_attention attention,
                                     const int32_t *query_lens,
                                     const int32_t *context_lens,
                                     size_t num_requests, int32_t *order) {
  if (!attention || (num_requests && (!query_lens || !context_lens || !order)))
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "tessel_attention_order: attention, query_lens, "
                       "context_lens and order must not be NULL");
  for (size_t i = 0; i < num_requests; ++i)
    if (query_lens[i] < 1 || context_lens[i] < 0)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_attention_order: request %zu has query "
                         "length %d and context length %d (a request has at "
                         "least one new token and no negative context)",
                         i, query_lens[i], context_lens[i]);
  orderByPhase(query_lens, context_lens, num_requests,
               attention->config.decode_threshold, order);
  return nullptr;
}

void tessel_permute_rows(const int32_t *order, size_t num_rows,
                         const void *src, size_t row_bytes, void *dst) {
  for (size_t i = 0; i < num_rows; ++i)
    std::memcpy(static_cast<char *>(dst) + i * row_bytes,
                static_cast<const char *>(src) + order[i] * row_bytes,
                row_bytes);
}

tessel_status tessel_attention_plan_create(tessel_attention attention,
                                           size_t max_requests,
                                           tessel_attention_plan *out_plan) {
  return guard("creating an attention plan", [&]() -> tessel_status {
    if (!attention || !out_plan)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_attention_plan_create: attention and "
                         "out_plan must not be NULL");
    auto plan = std::make_unique<tessel_attention_plan_t>();
    plan->attention = attention;
    plan->capacity = max_requests;
    // The image holds two cu_seqlens arrays and one chunk's lengths (more
    // chunks grow it once, then the capacity stays).
    plan->metadata.reserve(4 * (max_requests + 8));
    plan->chunks.reserve(16);
    *out_plan = plan.release();
    return nullptr;
  });
}

void tessel_attention_plan_release(tessel_attention_plan plan) { delete plan; }

tessel_status tessel_attention_plan_build(tessel_attention_plan plan,
                                          const int32_t *query_lens,
                                          const int32_t *context_lens,
                                          size_t num_requests,
                                          int32_t max_blocks) {
  return guard("planning an attention batch", [&]() -> tessel_status {
    if (!plan)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_attention_plan_build: plan is NULL");
    return annotate(
        buildPlan(*plan, query_lens, context_lens, num_requests, max_blocks),
        "tessel_attention_plan_build");
  });
}

void tessel_attention_plan_get_info(tessel_attention_plan plan,
                                    tessel_attention_plan_info *info) {
  if (!info)
    return;
  std::memset(info, 0, sizeof *info);
  if (!plan)
    return;
  info->num_decodes = plan->phaseRequests[0];
  info->num_extends = plan->phaseRequests[1];
  info->num_prefills = plan->phaseRequests[2];
  info->decode_tokens = plan->phaseTokens[0];
  info->extend_tokens = plan->phaseTokens[1];
  info->prefill_tokens = plan->phaseTokens[2];
  info->kv_splits = plan->kvSplits;
  info->context_chunks = static_cast<int32_t>(plan->chunks.size());
  info->context_chunks_parallel = plan->parallelChunks ? 1 : 0;
  info->workspace_bytes = plan->workspace.total;
}

tessel_status tessel_attention_plan_chunk(tessel_attention_plan plan,
                                          size_t index, int64_t *start,
                                          int64_t *width) {
  if (!plan || !start || !width)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "tessel_attention_plan_chunk: plan, start and width "
                       "must not be NULL");
  if (index >= plan->chunks.size())
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "tessel_attention_plan_chunk: chunk %zu of a schedule "
                       "of %zu",
                       index, plan->chunks.size());
  *start = plan->chunks[index].start;
  *width = plan->chunks[index].width;
  return nullptr;
}

tessel_status tessel_attention_run(tessel_attention_plan plan,
                                   const tessel_attention_buffers *buffers,
                                   void *workspace, size_t workspace_bytes,
                                   void *stream) {
  return guard("running an attention plan", [&]() -> tessel_status {
    if (!plan || !buffers)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_attention_run: plan and buffers must not be "
                         "NULL");
    return annotate(runPlan(*plan, *buffers, workspace, workspace_bytes, stream),
                    "tessel_attention_run");
  });
}

tessel_status tessel_attention_write_cache(
    tessel_attention attention, const tessel_tensor *k, const tessel_tensor *v,
    const tessel_tensor *k_cache, const tessel_tensor *v_cache,
    const tessel_tensor *slot_mapping, void *stream) {
  return guard("writing the KV cache", [&]() -> tessel_status {
    if (!attention || !k || !v || !k_cache || !v_cache || !slot_mapping)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "tessel_attention_write_cache: no argument may be "
                         "NULL");
    return annotate(
        writeCache(*attention, *k, *v, *k_cache, *v_cache, *slot_mapping,
                   stream),
        "tessel_attention_write_cache");
  });
}
