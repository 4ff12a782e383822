//===- dispatch/plan.cpp - Planning one batch ------------------------------===//
//
// Which composition runs which requests, per routing mode:
//
//   triple    decodes -> decode kernel, extends -> extend composition,
//             prefills -> prefill kernel
//   two_path  decodes -> decode kernel, the rest -> extend composition
//   unified   everything -> one causal paged kernel over each request's
//             sequence, its new tokens already in the cache (split into
//             windows merged by LSE when the batch is too small to fill
//             the device)
//
// Decodes of several tokens (decode_threshold > 1, speculative decoding)
// need a causal mask among their tokens, which the decode kernel does not
// have: then the decodes join the extend range, which follows them in plan
// order, so the ranges stay contiguous.
//
//===----------------------------------------------------------------------===//

#include "plan.h"
#include "schedule.h"

#include "../core/handles.h"
#include "../core/status.h"

#include <algorithm>

using namespace tessel;
using namespace tessel::dispatch;
using tessel::runtime::makeStatusf;

namespace {

/// "a decode", "an extend", "a prefill".
const char *phaseName(tessel_phase phase) {
  switch (phase) {
  case TESSEL_PHASE_DECODE:
    return "a decode";
  case TESSEL_PHASE_EXTEND:
    return "an extend";
  case TESSEL_PHASE_PREFILL:
    return "a prefill";
  }
  return "?";
}

Range join(const Range &a, const Range &b) {
  if (a.empty())
    return b;
  if (b.empty())
    return a;
  return {a.firstRequest, a.requests + b.requests, a.firstToken,
          a.tokens + b.tokens};
}

size_t align16(size_t bytes) { return (bytes + 15) / 16 * 16; }

/// Query rows the prefill template gives one workgroup (a tile of 4 warps
/// of 16 rows, of one query head): what "enough new tokens to fill the
/// device" is counted in.
constexpr int64_t kQueryRowsPerWorkgroup = 64;

/// Workgroups per compute unit the parallel windows aim at. A workgroup of
/// the paged prefill template streams its window of K and V at a fraction
/// of an SM's bandwidth, so more of them read a long context faster: on
/// the H200, one 131072-token context under 64 new tokens took 0.59 ms in
/// windows for 8 per SM, 0.73 ms for 2 (bench/extend_turn_bench.py).
constexpr int32_t kWindowBlocksPerUnit = 8;

/// Half the shared memory of an H100/H200 SM (228 KB): a block that takes
/// more leaves no room for a second one on its SM.
constexpr uint32_t kHalfSmSharedBytes = 114 * 1024;

/// Splits of `kernel` aim at whole waves of one block a unit when a block
/// of it takes more than half an SM's shared memory (sm90a's warp-
/// specialised kernels): a wave and a bit costs two. H200, MLA decode of
/// 8 x 64K tokens: 8 splits (one wave) 2.40 TB/s; 17 (2.06 waves) 1.88 in
/// an earlier run.
void fitWaves(SplitInputs &in, const tessel_kernel kernel) {
  if (kernel && kernel->meta.sharedBytes > kHalfSmSharedBytes) {
    in.blocksPerUnit = 1;
    in.wholeWaves = true;
  }
}

/// The most workspace the parallel windows of an extend may take.
constexpr size_t kParallelChunksBytes = size_t{256} << 20;

/// The window count of the extend range's context when its chunks should
/// run in one launch (its new tokens are too few to fill the device alone),
/// or 0 for chunks one after the other. Windows come from the block-table
/// width like split-KV decode's, and are at most the chunk budget wide.
int32_t parallelWindows(const tessel_attention_t &attention, const Range &e,
                        const int32_t *contexts, int64_t maxBlocks) {
  const tessel_attention_config &c = attention.config;
  // MLA's extend table is not the one max_blocks describes.
  if (e.empty() || !attention.kernels.extendMerge ||
      c.kind == TESSEL_ATTENTION_MLA || (c.num_q_heads * e.tokens) % 4 != 0)
    return 0;
  int64_t longest = 0;
  for (size_t i = 0; i < e.requests; ++i)
    longest = std::max<int64_t>(longest, contexts[i]);
  size_t tiles = static_cast<size_t>(
      (e.tokens + kQueryRowsPerWorkgroup - 1) / kQueryRowsPerWorkgroup);
  int32_t windows = chooseKvSplits({tiles, c.num_q_heads, longest, maxBlocks,
                                    c.block_size, c.compute_units,
                                    c.max_kv_splits, kWindowBlocksPerUnit});
  if (windows <= 1)
    return 0;
  // Within the budget: more (narrower) windows if need be. A window is
  // whole blocks (splitWindow), so count the blocks that fit the budget
  // (at least one), not tokens: at blocks of 48 and a budget of 512, a
  // token count let 3001 tokens' 63 blocks into 6 windows of 11 blocks
  // (528 tokens).
  int64_t windowBlocks =
      std::max<int64_t>(1, c.context_chunk_tokens / c.block_size);
  int64_t fewest = (maxBlocks + windowBlocks - 1) / windowBlocks;
  windows = static_cast<int32_t>(std::max<int64_t>(windows, fewest));
  size_t bytes = static_cast<size_t>(windows + 1) * e.tokens *
                 c.num_q_heads * (c.v_head_dim + 1) * 4;
  if (windows > c.max_kv_splits || bytes > kParallelChunksBytes)
    return 0;
  return windows;
}

/// The split count of the unified kernel: windows of each sequence when
/// the batch's tiles (of the kernel's grid divisor, in tokens) are too few
/// to fill the device, as split-KV decode chooses them; 1 without the
/// split kernel and merge, or past the workspace budget.
int32_t unifiedSplits(const tessel_attention_t &attention, const Range &u,
                      const int32_t *queryLens, const int32_t *contextLens,
                      int64_t maxBlocks) {
  const tessel_attention_config &c = attention.config;
  const KernelSet &k = attention.kernels;
  if (u.empty() || !k.unifiedSplit || !k.extendMerge)
    return 1;
  int64_t tileTokens = std::max<uint32_t>(1, k.unified->meta.gridDiv[0]);
  size_t tiles = 0;
  int64_t longest = 0;
  for (size_t i = u.firstRequest; i < u.firstRequest + u.requests; ++i) {
    tiles += static_cast<size_t>((queryLens[i] + tileTokens - 1) / tileTokens);
    longest = std::max<int64_t>(longest, int64_t{contextLens[i]} + queryLens[i]);
  }
  // Blocks per tile: one per KV head where the query heads pack (the
  // grid's constant y), else one per query head.
  const bundle::Dim &heads = k.unified->meta.grid[1];
  int64_t headBlocks = heads.isConstant() ? heads.add : c.num_q_heads;
  SplitInputs in{tiles,        headBlocks,      longest,        maxBlocks,
                 c.block_size, c.compute_units, c.max_kv_splits};
  fitWaves(in, k.unifiedSplit);
  int32_t splits = chooseKvSplits(in);
  size_t bytes = static_cast<size_t>(splits) * u.tokens * c.num_q_heads *
                 (c.v_head_dim + 1) * 4;
  return bytes > kParallelChunksBytes ? 1 : splits;
}

/// Appends the cu_seqlens of `range`, rebased to its first token.
void appendCuSeqlens(std::vector<int32_t> &image, const Range &range,
                     const int32_t *queryLens) {
  int32_t total = 0;
  image.push_back(0);
  for (size_t i = 0; i < range.requests; ++i)
    image.push_back(total += queryLens[range.firstRequest + i]);
}

} // namespace

tessel_status dispatch::buildPlan(tessel_attention_plan_t &plan,
                                  const int32_t *queryLens,
                                  const int32_t *contextLens, size_t n,
                                  int32_t maxBlocks) {
  const tessel_attention_config &config = plan.attention->config;
  if (n > plan.capacity)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "a batch of %zu requests exceeds the plan's capacity "
                       "of %zu (tessel_attention_plan_create's max_requests)",
                       n, plan.capacity);
  if (n && (!queryLens || !contextLens))
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "query_lens and context_lens must not be NULL");
  if (maxBlocks < 0)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "max_blocks %d is negative", maxBlocks);

  // Validate and count in one pass; remember the longest decode context.
  size_t counts[3] = {};
  int64_t tokens[3] = {};
  int64_t longestDecode = 0;
  tessel_phase previous = TESSEL_PHASE_DECODE;
  const int64_t blockSize = config.kind == TESSEL_ATTENTION_MLA
                                ? config.latent_block_size
                                : config.block_size;
  for (size_t i = 0; i < n; ++i) {
    int32_t q = queryLens[i], c = contextLens[i];
    if (q < 1)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "request %zu: query length %d; every request has "
                         "at least one new token",
                         i, q);
    if (c < 0 || c > INT32_MAX - q)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "request %zu: context length %d is out of range", i,
                         c);
    tessel_phase phase = classify(q, c, config.decode_threshold);
    if (phase < previous)
      return makeStatusf(
          TESSEL_INVALID_ARGUMENT,
          "the batch is not in [decode : extend : prefill] order: request "
          "%zu (query %d, context %d tokens) is %s after %s "
          "(tessel_attention_order gives the permutation)",
          i, q, c, phaseName(phase), phaseName(previous));
    previous = phase;
    ++counts[phase];
    tokens[phase] += q;
    // The decode and unified kernels read the new tokens from the cache,
    // so they need context + query tokens of blocks; extends read their
    // context.
    bool readsNew = phase == TESSEL_PHASE_DECODE ||
                    config.routing == TESSEL_ROUTING_UNIFIED;
    int64_t cached = readsNew ? int64_t{c} + q : c;
    if (phase == TESSEL_PHASE_DECODE)
      longestDecode = std::max(longestDecode, cached);
    bool decodeTable = phase == TESSEL_PHASE_DECODE ||
                       config.kind != TESSEL_ATTENTION_MLA;
    if (decodeTable && (cached + blockSize - 1) / blockSize > maxBlocks)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "request %zu (%s of %d new tokens after %d cached) "
                         "needs %lld cache blocks of %lld tokens, but "
                         "max_blocks is %d",
                         i, phaseName(phase), q, c,
                         static_cast<long long>((cached + blockSize - 1) /
                                                blockSize),
                         static_cast<long long>(blockSize), maxBlocks);
  }

  plan.requests = n;
  plan.maxBlocks = maxBlocks;
  std::copy(counts, counts + 3, plan.phaseRequests);
  std::copy(tokens, tokens + 3, plan.phaseTokens);
  Range decodes{0, counts[0], 0, tokens[0]};
  Range extends{counts[0], counts[1], tokens[0], tokens[1]};
  Range prefills{counts[0] + counts[1], counts[2], tokens[0] + tokens[1],
                 tokens[2]};
  bool oneTokenDecodes = tokens[0] == static_cast<int64_t>(counts[0]);
  if (!oneTokenDecodes) {
    extends = join(decodes, extends);
    decodes = {};
  }
  plan.unifiedRange = {};
  switch (config.routing) {
  case TESSEL_ROUTING_UNIFIED:
    plan.decodeRange = plan.extendRange = plan.prefillRange = {};
    plan.unifiedRange = join(join(decodes, extends), prefills);
    break;
  case TESSEL_ROUTING_TWO_PATH:
    plan.decodeRange = decodes;
    plan.extendRange = join(extends, prefills);
    plan.prefillRange = {};
    break;
  default:
    plan.decodeRange = decodes;
    plan.extendRange = extends;
    plan.prefillRange = prefills;
    break;
  }
  // MLA decodes have their own q and out (absorbed, latent).
  plan.tokenBase = config.kind == TESSEL_ATTENTION_MLA ? tokens[0] : 0;

  plan.kvSplits = unifiedSplits(*plan.attention, plan.unifiedRange, queryLens,
                                contextLens, maxBlocks);
  if (!plan.decodeRange.empty()) {
    // MLA: a block takes the heads of its split kernel's grid x divisor
    // (16 on the sm80 template, 64 on sm90a's wgmma tiles).
    SplitInputs in{plan.decodeRange.requests, config.num_kv_heads,
                   longestDecode, maxBlocks, blockSize, config.compute_units,
                   config.max_kv_splits};
    if (config.kind == TESSEL_ATTENTION_MLA) {
      const tessel_kernel split = plan.attention->kernels.decodeSplit;
      int64_t rows = split ? std::max<uint32_t>(1, split->meta.gridDiv[0]) : 16;
      in.blocksPerSplit1 = (config.num_q_heads + rows - 1) / rows;
      fitWaves(in, split);
    }
    plan.kvSplits = chooseKvSplits(in);
  }

  // The context schedule of the extend range: windows of one launch when
  // its new tokens are few, else chunks one after the other. Without any
  // context (unified or two_path on prefills only) one empty chunk still
  // runs: the merge is what turns the new tokens' f32 partial into out.
  const Range &e = plan.extendRange;
  const int32_t *contexts = contextLens + e.firstRequest;
  plan.chunks.clear();
  int32_t windows = parallelWindows(*plan.attention, e, contexts, maxBlocks);
  plan.parallelChunks = windows > 0;
  int64_t windowWidth =
      windows ? splitWindow(maxBlocks, windows, config.block_size) : 0;
  for (int32_t p = 0; p < windows; ++p)
    plan.chunks.push_back({p * windowWidth, windowWidth});
  for (int64_t start = 0; !plan.parallelChunks;) {
    int64_t width = nextChunkWidth(contexts, e.requests, start,
                                   config.context_chunk_tokens,
                                   config.block_size);
    if (width == 0)
      break;
    plan.chunks.push_back({start, width});
    start += width;
  }
  if (!e.empty() && plan.chunks.empty())
    plan.chunks.push_back({0, config.block_size});

  std::vector<int32_t> &image = plan.metadata;
  image.clear();
  // Every array starts 16-byte aligned, as GPU buffers must.
  auto align = [&image] { image.resize(align16(image.size() * 4) / 4); };
  plan.extendCuOffset = image.size();
  if (!e.empty())
    appendCuSeqlens(image, e, queryLens);
  if (!plan.unifiedRange.empty())
    appendCuSeqlens(image, plan.unifiedRange, queryLens);
  align();
  plan.prefillCuOffset = image.size();
  if (!plan.prefillRange.empty())
    appendCuSeqlens(image, plan.prefillRange, queryLens);
  align();
  plan.chunkLensOffset = image.size();
  plan.chunkLensStride = align16(e.requests * 4) / 4;
  // Sequential chunks read the table shifted to their start, so each gets
  // its own clipped lengths; parallel windows clip themselves.
  if (plan.parallelChunks) {
    image.insert(image.end(), contexts, contexts + e.requests);
    align();
  }
  for (size_t c = 0; c < plan.chunks.size() && !plan.parallelChunks; ++c) {
    for (size_t i = 0; i < e.requests; ++i)
      image.push_back(static_cast<int32_t>(std::clamp<int64_t>(
          contexts[i] - plan.chunks[c].start, 0, plan.chunks[c].width)));
    align();
  }

  // Workspace: the image, then the decode or the extend scratch (they run
  // one after the other on one stream, so they share the space).
  WorkspaceLayout &ws = plan.workspace;
  ws = {};
  ws.metadata = 0;
  size_t base = align16(image.size() * 4), decodeEnd = base, extendEnd = base;
  const int64_t hq = config.num_q_heads;
  if (!plan.decodeRange.empty() &&
      (plan.kvSplits > 1 || !plan.attention->kernels.decode)) {
    int64_t dv = config.kind == TESSEL_ATTENTION_MLA ? config.latent_dim
                                                     : config.v_head_dim;
    size_t rows = plan.kvSplits * plan.decodeRange.requests;
    ws.decodePartials = decodeEnd;
    decodeEnd += align16(rows * hq * dv * 4);
    ws.decodeLse = decodeEnd;
    decodeEnd += align16(rows * hq * 4);
  }
  const Range &u = plan.unifiedRange;
  if (!u.empty() && plan.kvSplits > 1) {
    ws.unifiedPartials = extendEnd;
    extendEnd +=
        align16(plan.kvSplits * u.tokens * hq * config.v_head_dim * 4);
    ws.unifiedLse = extendEnd;
    extendEnd += align16(plan.kvSplits * hq * u.tokens * 4);
  }
  if (plan.parallelChunks) {
    size_t partials = plan.chunks.size() + 1;
    ws.extendOut[0] = extendEnd;
    extendEnd += align16(partials * e.tokens * hq * config.v_head_dim * 4);
    ws.extendLse[0] = extendEnd;
    extendEnd += align16(partials * hq * e.tokens * 4);
  } else if (!e.empty()) {
    for (int i = 0; i < 3; ++i) {
      ws.extendOut[i] = extendEnd;
      extendEnd += align16(e.tokens * hq * config.v_head_dim * 4);
      ws.extendLse[i] = extendEnd;
      extendEnd += align16(e.tokens * hq * 4);
    }
  }
  ws.total = std::max(decodeEnd, extendEnd);
  if (ws.total == base && image.empty())
    ws.total = 0;
  return nullptr;
}
