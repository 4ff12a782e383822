//===- dispatch/run.cpp - Launching a plan ---------------------------------===//
//
// One run, in stream order: the metadata image into the workspace, the new
// tokens into the cache, the decode kernel, the extend composition, the
// prefill kernel (or, unified, the one kernel and its merge). Every phase reads contiguous rows of the caller's buffers
// (the plan order makes them so), so the only data the run moves besides
// attention itself is the image (a few KB) and, for split decodes and
// extends, f32 partials in the workspace.
//
//===----------------------------------------------------------------------===//

#include "plan.h"

#include "../core/handles.h"
#include "../core/status.h"

#include <cstring>
#include <initializer_list>
#include <utility>

using namespace tessel;
using namespace tessel::dispatch;
using tessel::runtime::annotate;
using tessel::runtime::makeStatusf;

namespace {

int64_t rowElements(const tessel_tensor &t) {
  int64_t n = 1;
  for (int32_t d = 1; d < t.rank; ++d)
    n *= t.shape[d];
  return n;
}

/// Rows [first, first + count) along dim 0 of `t`.
tessel_tensor rows(const tessel_tensor &t, int64_t first, int64_t count) {
  tessel_tensor out = t;
  out.data = static_cast<char *>(t.data) +
             first * rowElements(t) * tessel_dtype_size(t.dtype);
  out.shape[0] = count;
  return out;
}

/// A tensor in the workspace.
tessel_tensor scratch(void *workspace, size_t offset, tessel_dtype dtype,
                      std::initializer_list<int64_t> shape) {
  tessel_tensor t = {};
  t.data = static_cast<char *>(workspace) + offset;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  int32_t d = 0;
  for (int64_t size : shape)
    t.shape[d++] = size;
  return t;
}

/// The dispatcher's softmax scale as the attention kernels' scalar
/// argument (rank 0, read during each launch call).
tessel_tensor scaleArg(const tessel_attention_config &config) {
  tessel_tensor t = {};
  t.data = const_cast<float *>(&config.softmax_scale);
  t.dtype = TESSEL_DTYPE_F32;
  return t;
}

/// Checks a buffer the run slices itself (the kernels check the rest:
/// dtypes, head counts and dims, cache shapes): present, of rank `rank`,
/// with `rows` rows.
tessel_status need(const tessel_tensor &t, const char *name, int32_t rank,
                   int64_t rows) {
  if (!t.data)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "buffers.%s is missing (data is NULL) but this plan "
                       "needs it",
                       name);
  if (t.rank != rank)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "buffers.%s has rank %d, expected %d", name, t.rank,
                       rank);
  if (t.shape[0] != rows)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "buffers.%s has %lld rows, but the plan has %lld", name,
                       static_cast<long long>(t.shape[0]),
                       static_cast<long long>(rows));
  return nullptr;
}

tessel_status launch(tessel_kernel kernel, const char *role,
                     std::initializer_list<tessel_tensor> args, void *stream) {
  if (tessel_status status =
          tessel_kernel_launch(kernel, args.begin(), args.size(), stream))
    return annotate(status, role);
  return nullptr;
}

/// What both schedules of the extend composition work on: the plan's
/// extend range, its rows of the caller's buffers, and its scratch.
struct ExtendStep {
  ExtendStep(const tessel_attention_plan_t &plan,
             const tessel_attention_buffers &b, void *workspace, void *stream)
      : plan(plan), kernels(plan.attention->kernels), b(b),
        workspace(workspace), stream(stream), e(plan.extendRange),
        n(static_cast<int64_t>(e.requests)), t(e.tokens),
        hq(plan.attention->config.num_q_heads),
        dv(plan.attention->config.v_head_dim),
        scale(scaleArg(plan.attention->config)) {
    int64_t first = e.firstToken - plan.tokenBase;
    q = rows(b.q, first, t);
    k = rows(b.k, first, t);
    v = rows(b.v, first, t);
    out = rows(b.out, first, t);
    cu = scratch(workspace, plan.extendCuOffset * 4, TESSEL_DTYPE_I32,
                 {n + 1});
  }

  /// f32 scratch of `shape` at byte `offset` of the workspace.
  tessel_tensor f32(size_t offset, std::initializer_list<int64_t> shape) const {
    return scratch(workspace, offset, TESSEL_DTYPE_F32, shape);
  }

  const tessel_attention_plan_t &plan;
  const KernelSet &kernels;
  const tessel_attention_buffers &b;
  void *workspace, *stream;
  const Range &e;
  const int64_t n, t, hq, dv;
  const tessel_tensor scale;
  tessel_tensor q, k, v, out, cu;
};

/// The extend composition with its context chunks one after the other:
/// the new tokens' partial is the f32 accumulator that each chunk is merged
/// into (two buffers, ping-pong), the last merge writing out.
tessel_status runChunks(const ExtendStep &x) {
  const WorkspaceLayout &ws = x.plan.workspace;
  const int64_t t = x.t, hq = x.hq, dv = x.dv;
  tessel_tensor acc[2], accLse[2];
  for (int i = 0; i < 2; ++i) {
    acc[i] = x.f32(ws.extendOut[i], {t, hq, dv});
    accLse[i] = x.f32(ws.extendLse[i], {hq, t});
  }
  // One chunk's partial, as the split form writes it and as a merge reads.
  tessel_tensor chunk = x.f32(ws.extendOut[2], {1, t, hq, dv});
  tessel_tensor chunkLse = x.f32(ws.extendLse[2], {1, hq, t});
  tessel_tensor chunkOut = x.f32(ws.extendOut[2], {t, hq, dv});
  tessel_tensor chunkOutLse = x.f32(ws.extendLse[2], {hq, t});
  if (tessel_status s =
          launch(x.kernels.extendNew, "new tokens of the extends",
                 {x.q, x.k, x.v, x.cu, acc[0], accLse[0], x.scale}, x.stream))
    return s;
  const int64_t maxBlocks = x.b.block_table.shape[1];
  const int64_t blockSize = x.plan.attention->config.block_size;
  int current = 0;
  for (size_t c = 0; c < x.plan.chunks.size(); ++c) {
    // The chunk's block-table columns start start / block_size blocks
    // into each row: the same table, shifted (see docs/dispatcher.md).
    tessel_tensor table = rows(x.b.block_table, x.e.firstRequest, x.n);
    table.data = static_cast<int32_t *>(table.data) +
                 x.plan.chunks[c].start / blockSize;
    table.shape[1] = maxBlocks;
    tessel_tensor lens = scratch(
        x.workspace,
        (x.plan.chunkLensOffset + c * x.plan.chunkLensStride) * 4,
        TESSEL_DTYPE_I32, {x.n});
    if (tessel_status s = launch(x.kernels.extendContext,
                                 "a context chunk of the extends",
                                 {x.q, x.b.k_cache, x.b.v_cache, table, x.cu,
                                  lens, chunk, chunkLse, x.scale},
                                 x.stream))
      return s;
    if (c + 1 == x.plan.chunks.size())
      return launch(x.kernels.mergeOut, "the last merge of the extends",
                    {acc[current], accLse[current], chunkOut, chunkOutLse,
                     x.out},
                    x.stream);
    if (tessel_status s = launch(x.kernels.mergeAccumulate,
                                 "merging a context chunk",
                                 {acc[current], accLse[current], chunkOut,
                                  chunkOutLse, acc[1 - current],
                                  accLse[1 - current]},
                                 x.stream))
      return s;
    current = 1 - current;
  }
  return nullptr;
}

/// The extend composition with its context chunks as the P windows of one
/// split-form launch: partial 0 is the new tokens', partials 1..P the
/// windows', and one N-way merge writes out.
tessel_status runParallelChunks(const ExtendStep &x) {
  const WorkspaceLayout &ws = x.plan.workspace;
  const int64_t t = x.t, hq = x.hq, dv = x.dv;
  const int64_t windows = static_cast<int64_t>(x.plan.chunks.size());
  const size_t slot = t * hq * dv * 4, lseSlot = hq * t * 4;
  if (tessel_status s = launch(x.kernels.extendNew, "new tokens of the extends",
                               {x.q, x.k, x.v, x.cu,
                                x.f32(ws.extendOut[0], {t, hq, dv}),
                                x.f32(ws.extendLse[0], {hq, t}), x.scale},
                               x.stream))
    return s;
  tessel_tensor lens = scratch(x.workspace, x.plan.chunkLensOffset * 4,
                               TESSEL_DTYPE_I32, {x.n});
  if (tessel_status s = launch(
          x.kernels.extendContext, "the context windows of the extends",
          {x.q, x.b.k_cache, x.b.v_cache,
           rows(x.b.block_table, x.e.firstRequest, x.n), x.cu, lens,
           x.f32(ws.extendOut[0] + slot, {windows, t, hq, dv}),
           x.f32(ws.extendLse[0] + lseSlot, {windows, hq, t}), x.scale},
          x.stream))
    return s;
  return launch(x.kernels.extendMerge, "merging the extends' windows",
                {x.f32(ws.extendOut[0], {windows + 1, t, hq, dv}),
                 x.f32(ws.extendLse[0], {windows + 1, hq, t}), x.out},
                x.stream);
}

} // namespace

tessel_status dispatch::writeCache(const tessel_attention_t &attention,
                                   const tessel_tensor &k,
                                   const tessel_tensor &v,
                                   const tessel_tensor &kCache,
                                   const tessel_tensor &vCache,
                                   const tessel_tensor &slotMapping,
                                   void *stream) {
  const tessel_attention_config &c = attention.config;
  if (!attention.kernels.cacheWrite)
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "the bundle has no reshape_and_cache kernel for %d KV "
                       "heads, head dims %d/%d, block size %d, layout %d, %s: "
                       "write the new tokens into the cache yourself (and "
                       "pass slot_mapping.data = NULL to runs)",
                       c.num_kv_heads, c.head_dim, c.v_head_dim, c.block_size,
                       c.kv_layout, tessel_dtype_name(c.dtype));
  return launch(attention.kernels.cacheWrite,
                "writing the new tokens into the cache",
                {k, v, kCache, vCache, slotMapping}, stream);
}

tessel_status dispatch::runPlan(const tessel_attention_plan_t &plan,
                                const tessel_attention_buffers &b,
                                void *workspace, size_t workspaceBytes,
                                void *stream) {
  const tessel_attention_t &attention = *plan.attention;
  const tessel_attention_config &config = attention.config;
  const KernelSet &kernels = attention.kernels;
  const bool mla = config.kind == TESSEL_ATTENTION_MLA;
  const WorkspaceLayout &ws = plan.workspace;
  if (ws.total > 0) {
    if (!workspace)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "the plan needs %zu bytes of workspace, got NULL",
                         ws.total);
    if (workspaceBytes < ws.total)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "the plan needs %zu bytes of workspace, got %zu",
                         ws.total, workspaceBytes);
    if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "the workspace %p is not 16-byte aligned", workspace);
  }

  // What this plan reads, checked before anything is launched.
  const int64_t tokens = plan.phaseTokens[0] + plan.phaseTokens[1] +
                         plan.phaseTokens[2] - plan.tokenBase;
  const int64_t requests = static_cast<int64_t>(plan.requests);
  const Range &d = plan.decodeRange, &e = plan.extendRange,
              &p = plan.prefillRange, &u = plan.unifiedRange;
  const bool writeCache = b.slot_mapping.data != nullptr;
  const bool newTokens = tokens > 0 && (!e.empty() || !p.empty() || writeCache);
  // Kernels that read q, out, the block table and seq_lens.
  const bool pagedQueries = (!d.empty() && !mla) || !u.empty();
  struct Needed {
    bool when;
    const tessel_tensor &tensor;
    const char *name;
    int32_t rank;
    int64_t rows;
  };
  const Needed needed[] = {
      {newTokens || pagedQueries, b.q, "q", 3, tokens},
      {newTokens || pagedQueries, b.out, "out", 3, tokens},
      {newTokens, b.k, "k", 3, tokens},
      {newTokens, b.v, "v", 3, tokens},
      {writeCache, b.slot_mapping, "slot_mapping", 1, tokens},
      {pagedQueries || !e.empty(), b.block_table, "block_table", 2, requests},
      {!d.empty() || !u.empty(), b.seq_lens, "seq_lens", 1, requests},
      {!d.empty() && mla, b.q_latent, "q_latent", 3, d.tokens},
      {!d.empty() && mla, b.out_latent, "out_latent", 3, d.tokens},
      {!d.empty() && mla, b.latent_block_table, "latent_block_table", 2,
       requests},
  };
  for (const Needed &n : needed)
    if (n.when)
      if (tessel_status s = need(n.tensor, n.name, n.rank, n.rows))
        return s;
  const tessel_tensor &decodeTable = mla ? b.latent_block_table : b.block_table;
  if ((!d.empty() || !u.empty()) && decodeTable.shape[1] != plan.maxBlocks)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "buffers.%s has %lld columns, but the plan was built "
                       "for max_blocks %lld",
                       mla ? "latent_block_table" : "block_table",
                       static_cast<long long>(decodeTable.shape[1]),
                       static_cast<long long>(plan.maxBlocks));

  if (!plan.metadata.empty()) {
    tessel_device device = attention.bundle->device;
    if (tessel_status s = device->backend->copyToDevice(
            workspace, plan.metadata.data(), plan.metadata.size() * 4, stream))
      return annotate(s, "copying the plan's metadata to the workspace");
  }
  if (writeCache)
    if (tessel_status s = dispatch::writeCache(attention, b.k, b.v, b.k_cache,
                                               b.v_cache, b.slot_mapping,
                                               stream))
      return s;

  const tessel_dtype f32 = TESSEL_DTYPE_F32;
  const int64_t hq = config.num_q_heads;
  const tessel_tensor scale = scaleArg(config);
  if (!d.empty()) {
    const int64_t n = static_cast<int64_t>(d.requests);
    tessel_tensor q = mla ? b.q_latent : rows(b.q, d.firstToken, n);
    tessel_tensor out = mla ? b.out_latent : rows(b.out, d.firstToken, n);
    tessel_tensor table = rows(decodeTable, 0, n);
    tessel_tensor lens = rows(b.seq_lens, 0, n);
    auto withCaches = [&](tessel_kernel k, const char *role,
                          tessel_tensor o, tessel_tensor lse, bool hasLse) {
      if (mla)
        return hasLse ? launch(k, role,
                               {q, b.latent_cache, table, lens, o, lse, scale},
                               stream)
                      : launch(k, role,
                               {q, b.latent_cache, table, lens, o, scale},
                               stream);
      return hasLse ? launch(k, role,
                             {q, b.k_cache, b.v_cache, table, lens, o, lse,
                              scale},
                             stream)
                    : launch(k, role,
                             {q, b.k_cache, b.v_cache, table, lens, o, scale},
                             stream);
    };
    if (plan.kvSplits == 1 && kernels.decode) {
      if (tessel_status s =
              withCaches(kernels.decode, "decode", out, {}, false))
        return s;
    } else {
      int64_t dv = mla ? config.latent_dim : config.v_head_dim;
      int64_t splits = plan.kvSplits;
      tessel_tensor partials =
          scratch(workspace, ws.decodePartials, f32, {splits, n, hq, dv});
      tessel_tensor lse =
          scratch(workspace, ws.decodeLse, f32, {splits, hq, n});
      if (tessel_status s = withCaches(kernels.decodeSplit,
                                       "decode split-KV partials", partials,
                                       lse, true))
        return s;
      if (tessel_status s = launch(kernels.decodeMerge,
                                   "merging the decode partials",
                                   {partials, lse, out}, stream))
        return s;
    }
  }

  if (!u.empty()) {
    const int64_t n = static_cast<int64_t>(u.requests), t = u.tokens;
    tessel_tensor cu = scratch(workspace, plan.extendCuOffset * 4,
                               TESSEL_DTYPE_I32, {n + 1});
    tessel_tensor q = rows(b.q, 0, t), out = rows(b.out, 0, t);
    tessel_tensor table = rows(b.block_table, 0, n);
    tessel_tensor lens = rows(b.seq_lens, 0, n);
    if (plan.kvSplits == 1)
      return launch(kernels.unified, "the batch (unified)",
                    {q, b.k_cache, b.v_cache, table, cu, lens, out, scale},
                    stream);
    const int64_t splits = plan.kvSplits, dv = config.v_head_dim;
    tessel_tensor partials =
        scratch(workspace, ws.unifiedPartials, f32, {splits, t, hq, dv});
    tessel_tensor lse = scratch(workspace, ws.unifiedLse, f32, {splits, hq, t});
    if (tessel_status s = launch(kernels.unifiedSplit,
                                 "split-KV partials of the batch (unified)",
                                 {q, b.k_cache, b.v_cache, table, cu, lens,
                                  partials, lse, scale},
                                 stream))
      return s;
    return launch(kernels.extendMerge, "merging the unified partials",
                  {partials, lse, out}, stream);
  }

  if (!e.empty()) {
    ExtendStep step(plan, b, workspace, stream);
    if (tessel_status s = plan.parallelChunks ? runParallelChunks(step)
                                              : runChunks(step))
      return s;
  }

  if (!p.empty()) {
    const int64_t first = p.firstToken - plan.tokenBase, t = p.tokens;
    tessel_tensor cu = scratch(workspace, plan.prefillCuOffset * 4,
                               TESSEL_DTYPE_I32,
                               {static_cast<int64_t>(p.requests) + 1});
    if (tessel_status s = launch(kernels.prefill, "prefill",
                                 {rows(b.q, first, t), rows(b.k, first, t),
                                  rows(b.v, first, t), cu,
                                  rows(b.out, first, t), scale},
                                 stream))
      return s;
  }
  return nullptr;
}
