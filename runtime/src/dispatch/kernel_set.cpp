//===- dispatch/kernel_set.cpp - The kernels of one attention config ------===//

#include "kernel_set.h"

#include "../core/handles.h"
#include "../core/status.h"
#include "../support/format.h"

#include <string>
#include <vector>

using namespace tessel;
using namespace tessel::dispatch;
using tessel::runtime::makeStatus;

namespace {

/// What one role asks of a kernel.
struct Want {
  const char *role; ///< for messages, e.g. "decode split-KV partials"
  const char *op;
  std::vector<std::pair<const char *, int64_t>> params;
  tessel_dtype dtype;    ///< the kernel's dtype (its first float operand's)
  tessel_dtype outDtype; ///< the dtype of its "out" argument
  /// Paged attention comes with and without cu_seqlens (extend context vs
  /// decode): 1 needs the argument, 0 refuses it, -1 takes either.
  int cuSeqlens = -1;
};

const bundle::Arg *findArg(const bundle::Kernel &meta, const char *name) {
  for (const bundle::Arg &arg : meta.args)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

bool hasParam(const bundle::Kernel &meta, const char *key, int64_t value) {
  for (const auto &param : meta.params)
    if (param.first == key)
      return param.second == value;
  return false;
}

bool matches(const bundle::Kernel &meta, const Want &want) {
  if (meta.op != want.op || meta.dtype != want.dtype)
    return false;
  const bundle::Arg *out = findArg(meta, "out");
  if (!out || out->dtype != want.outDtype)
    return false;
  if (want.cuSeqlens >= 0 &&
      (findArg(meta, "cu_seqlens") != nullptr) != (want.cuSeqlens == 1))
    return false;
  for (const auto &[key, value] : want.params)
    if (!hasParam(meta, key, value))
      return false;
  return true;
}

tessel_kernel find(tessel_bundle bundle, const Want &want) {
  for (const auto &kernel : bundle->kernels)
    if (matches(kernel->meta, want))
      return kernel.get();
  return nullptr;
}

std::string describe(const Want &want) {
  std::string text = want.op;
  if (want.cuSeqlens >= 0)
    text += want.cuSeqlens ? " with cu_seqlens" : " without cu_seqlens";
  text += " with";
  for (const auto &[key, value] : want.params)
    text += format(" %s=%lld", key, static_cast<long long>(value));
  return text + format(", %s in, %s out", tessel_dtype_name(want.dtype),
                       tessel_dtype_name(want.outDtype));
}

std::string describe(const bundle::Kernel &meta) {
  std::string text = meta.name + " (";
  for (const auto &param : meta.params)
    text += format("%s=%lld ", param.first.c_str(),
                   static_cast<long long>(param.second));
  const bundle::Arg *out = findArg(meta, "out");
  return text + format("%s in, %s out%s)", tessel_dtype_name(meta.dtype),
                       out ? tessel_dtype_name(out->dtype) : "no",
                       findArg(meta, "cu_seqlens") ? ", cu_seqlens" : "");
}

tessel_status missing(tessel_bundle bundle, const Want &want,
                      tessel_routing routing) {
  std::string others;
  size_t listed = 0, total = 0;
  for (const auto &kernel : bundle->kernels) {
    if (kernel->meta.op != want.op)
      continue;
    if (listed < 8) {
      others += (listed ? "; " : "") + describe(kernel->meta);
      ++listed;
    }
    ++total;
  }
  if (total > listed)
    others += format("; and %zu more", total - listed);
  return makeStatus(
      TESSEL_UNSUPPORTED,
      format("the %s routing needs a kernel for the %s: %s; the bundle has %s",
             tessel_routing_name(routing), want.role, describe(want).c_str(),
             total ? ("these " + std::string(want.op) + " kernels: " + others)
                         .c_str()
                   : ("no " + std::string(want.op) + " kernel").c_str()) +
          ". Compile one for this configuration (docs/dispatcher.md lists "
          "the kernels a model needs)");
}

} // namespace

tessel_status dispatch::findKernels(tessel_bundle bundle,
                                    const tessel_attention_config &config,
                                    tessel_routing routing, KernelSet &set) {
  const tessel_dtype dtype = config.dtype, f32 = TESSEL_DTYPE_F32;
  const bool mla = config.kind == TESSEL_ATTENTION_MLA;
  const std::vector<std::pair<const char *, int64_t>> heads = {
      {"num_q_heads", config.num_q_heads},
      {"num_kv_heads", config.num_kv_heads},
      {"head_dim", config.head_dim},
      {"v_head_dim", config.v_head_dim}};
  auto paged = [&](int64_t split) {
    auto params = heads;
    params.insert(params.end(), {{"block_size", config.block_size},
                                 {"layout", config.kv_layout},
                                 {"split", split}});
    return params;
  };
  auto prefill = [&](int64_t hasLse) {
    auto params = heads;
    params.insert(params.end(), {{"causal", 1}, {"has_lse", hasLse}});
    return params;
  };
  auto merge = [&](int64_t numHeads, int64_t headDim, int64_t hasLse) {
    return std::vector<std::pair<const char *, int64_t>>{
        {"num_heads", numHeads}, {"head_dim", headDim}, {"has_lse", hasLse}};
  };
  const int64_t latentRow = config.latent_dim + config.rope_dim;
  auto mlaDecode = [&](int64_t split) {
    return std::vector<std::pair<const char *, int64_t>>{
        {"num_heads", config.num_q_heads},
        {"head_dim", latentRow},
        {"latent_dim", config.latent_dim},
        {"block_size", config.latent_block_size},
        {"split", split},
        {"has_lse", split}};
  };

  // Each role: the kernel, and whether this routing needs it.
  auto need = [&](tessel_kernel &slot, const Want &want) -> tessel_status {
    slot = find(bundle, want);
    return slot ? nullptr : missing(bundle, want, routing);
  };
  bool decodes = routing != TESSEL_ROUTING_UNIFIED;
  bool prefills = routing == TESSEL_ROUTING_TRIPLE;
  const int64_t decodeOutDim = mla ? config.latent_dim : config.v_head_dim;
  if (decodes) {
    Want split = mla ? Want{"decode split-KV partials", "tessel.mla_decode",
                            mlaDecode(1), dtype, f32}
                     : Want{"decode split-KV partials",
                            "tessel.paged_attention", paged(1), dtype, f32, 0};
    if (tessel_status status = need(set.decodeSplit, split))
      return status;
    if (tessel_status status =
            need(set.decodeMerge,
                 {"merge of the decode partials", "tessel.lse_merge_n",
                  merge(config.num_q_heads, decodeOutDim, 0), f32, dtype}))
      return status;
    auto unsplitParams = mla ? mlaDecode(0) : paged(0);
    if (!mla) {
      // decode_attention has no split or cu_seqlens and says has_lse.
      unsplitParams.pop_back();
      unsplitParams.push_back({"has_lse", 0});
    }
    set.decode = find(bundle, {"decode", mla ? "tessel.mla_decode"
                                             : "tessel.decode_attention",
                               unsplitParams, dtype, dtype});
  }
  if (prefills)
    if (tessel_status status =
            need(set.prefill, {"prefill", "tessel.prefill_attention",
                               prefill(0), dtype, dtype}))
      return status;
  // Every routing has extends (or, for unified, everything) on the extend
  // composition.
  if (tessel_status status =
          need(set.extendNew, {"new tokens of an extend (f32 partial)",
                               "tessel.prefill_attention", prefill(1), dtype,
                               f32}))
    return status;
  if (tessel_status status =
          need(set.extendContext,
               {"context chunks of an extend (split form)",
                "tessel.paged_attention", paged(1), dtype, f32, 1}))
    return status;
  if (tessel_status status = need(
          set.mergeAccumulate,
          {"merge of a context chunk into the f32 accumulator",
           "tessel.lse_merge", merge(config.num_q_heads, config.v_head_dim, 1),
           f32, f32}))
    return status;
  if (tessel_status status = need(
          set.mergeOut,
          {"last merge of an extend into out", "tessel.lse_merge",
           merge(config.num_q_heads, config.v_head_dim, 0), f32, dtype}))
    return status;
  // reshape_and_cache's dtype is that of k; it has no "out" argument.
  for (const auto &kernel : bundle->kernels) {
    const bundle::Kernel &meta = kernel->meta;
    if (meta.op == "tessel.reshape_and_cache" && meta.dtype == dtype &&
        hasParam(meta, "num_kv_heads", config.num_kv_heads) &&
        hasParam(meta, "head_dim", config.head_dim) &&
        hasParam(meta, "v_head_dim", config.v_head_dim) &&
        hasParam(meta, "block_size", config.block_size) &&
        hasParam(meta, "layout", config.kv_layout)) {
      set.cacheWrite = kernel.get();
      break;
    }
  }
  return nullptr;
}
