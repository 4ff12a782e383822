//===- dispatch/kernel_set.cpp - The kernels of one attention config ------===//

#include "kernel_set.h"

#include "../core/kernel_lookup.h"
#include "../support/format.h"

#include <vector>

using namespace tessel;
using namespace tessel::dispatch;
using tessel::runtime::KernelQuery;

tessel_status dispatch::findKernels(tessel_bundle bundle,
                                    const tessel_attention_config &config,
                                    tessel_routing routing, KernelSet &set) {
  const tessel_dtype dtype = config.dtype, f32 = TESSEL_DTYPE_F32;
  const bool mla = config.kind == TESSEL_ATTENTION_MLA;
  using Params = std::vector<std::pair<const char *, int64_t>>;
  const Params heads = {{"num_q_heads", config.num_q_heads},
                        {"num_kv_heads", config.num_kv_heads},
                        {"head_dim", config.head_dim},
                        {"v_head_dim", config.v_head_dim}};
  auto with = [](Params params, const Params &more) {
    params.insert(params.end(), more.begin(), more.end());
    return params;
  };
  auto paged = [&](int64_t split, int64_t causal = 0) {
    return with(heads, {{"block_size", config.block_size},
                        {"layout", config.kv_layout},
                        {"split", split},
                        {"causal", causal}});
  };
  auto prefill = [&](int64_t hasLse) {
    return with(heads, {{"causal", 1}, {"has_lse", hasLse}});
  };
  auto merge = [&](int64_t numHeads, int64_t headDim, int64_t hasLse) {
    return Params{
        {"num_heads", numHeads}, {"head_dim", headDim}, {"has_lse", hasLse}};
  };
  auto mlaDecode = [&](int64_t split) {
    return Params{{"num_heads", config.num_q_heads},
                  {"head_dim", config.latent_dim + config.rope_dim},
                  {"latent_dim", config.latent_dim},
                  {"block_size", config.latent_block_size},
                  {"split", split},
                  {"has_lse", split}};
  };
  // A query for a kernel reading `in` and writing "out" in `out`.
  auto query = [](const char *role, const char *op, Params params,
                  tessel_dtype in, tessel_dtype out) {
    KernelQuery q;
    q.role = role;
    q.op = op;
    q.params = std::move(params);
    q.dtype = in;
    q.argDtypes = {{"out", out}};
    return q;
  };
  auto need = [&](tessel_kernel &slot, const KernelQuery &q) {
    slot = runtime::findKernel(bundle, q);
    return slot ? nullptr
                : runtime::missingKernel(
                      bundle, q,
                      format("the %s routing", tessel_routing_name(routing)),
                      " (docs/dispatcher.md lists the kernels a model needs)");
  };
  const int64_t decodeOutDim = mla ? config.latent_dim : config.v_head_dim;
  // The merge of split partials into out (the extends' windows, the
  // unified kernel's splits).
  KernelQuery mergeN =
      query("merge of split partials into out", "tessel.lse_merge_n",
            merge(config.num_q_heads, config.v_head_dim, 0), f32, dtype);
  // Optional; its dtype is that of k, and it has no "out" argument.
  KernelQuery cacheWrite;
  cacheWrite.role = "cache write";
  cacheWrite.op = "tessel.reshape_and_cache";
  cacheWrite.dtype = dtype;
  cacheWrite.params = {{"num_kv_heads", config.num_kv_heads},
                       {"head_dim", config.head_dim},
                       {"v_head_dim", config.v_head_dim},
                       {"block_size", config.block_size},
                       {"layout", config.kv_layout}};
  set.cacheWrite = runtime::findKernel(bundle, cacheWrite);
  if (routing == TESSEL_ROUTING_UNIFIED) {
    // (MLA has no unified routing: attention_api.cpp refuses it.)
    KernelQuery whole =
        query("whole batch (unified)", "tessel.paged_attention",
              with(paged(0, 1), {{"has_lse", 0}}), dtype, dtype);
    whole.argPresent = {{"cu_seqlens", true}};
    if (tessel_status status = need(set.unified, whole))
      return status;
    KernelQuery split =
        query("split-KV partials of the unified batch",
              "tessel.paged_attention", paged(1, 1), dtype, f32);
    split.argPresent = {{"cu_seqlens", true}};
    set.unifiedSplit = runtime::findKernel(bundle, split);
    set.extendMerge = runtime::findKernel(bundle, mergeN);
    if (!set.extendMerge)
      set.unifiedSplit = nullptr;
    return nullptr;
  }
  KernelQuery split =
      mla ? query("decode split-KV partials", "tessel.mla_decode",
                  mlaDecode(1), dtype, f32)
          : query("decode split-KV partials", "tessel.paged_attention",
                  paged(1), dtype, f32);
  if (!mla)
    split.argPresent = {{"cu_seqlens", false}};
  if (tessel_status status = need(set.decodeSplit, split))
    return status;
  if (tessel_status status =
          need(set.decodeMerge,
               query("merge of the decode partials", "tessel.lse_merge_n",
                     merge(config.num_q_heads, decodeOutDim, 0), f32, dtype)))
    return status;
  // Optional: decode_attention has neither split nor cu_seqlens.
  set.decode = runtime::findKernel(
      bundle, mla ? query("decode", "tessel.mla_decode", mlaDecode(0), dtype,
                          dtype)
                  : query("decode", "tessel.decode_attention",
                          with(heads, {{"block_size", config.block_size},
                                       {"layout", config.kv_layout},
                                       {"has_lse", 0}}),
                          dtype, dtype));
  if (routing == TESSEL_ROUTING_TRIPLE)
    if (tessel_status status =
            need(set.prefill, query("prefill", "tessel.prefill_attention",
                                    prefill(0), dtype, dtype)))
      return status;
  // triple and two_path run extends on the extend composition.
  if (tessel_status status = need(
          set.extendNew, query("new tokens of an extend (f32 partial)",
                               "tessel.prefill_attention", prefill(1), dtype,
                               f32)))
    return status;
  KernelQuery context = query("context chunks of an extend (split form)",
                              "tessel.paged_attention", paged(1), dtype, f32);
  context.argPresent = {{"cu_seqlens", true}};
  if (tessel_status status = need(set.extendContext, context))
    return status;
  if (tessel_status status = need(
          set.mergeAccumulate,
          query("merge of a context chunk into the f32 accumulator",
                "tessel.lse_merge",
                merge(config.num_q_heads, config.v_head_dim, 1), f32, f32)))
    return status;
  if (tessel_status status = need(
          set.mergeOut,
          query("last merge of an extend into out", "tessel.lse_merge",
                merge(config.num_q_heads, config.v_head_dim, 0), f32, dtype)))
    return status;
  set.extendMerge = runtime::findKernel(bundle, mergeN);
  return nullptr;
}
