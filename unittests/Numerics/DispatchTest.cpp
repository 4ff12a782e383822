//===- DispatchTest.cpp - The attention dispatcher on the host ------------===//
//
// Random mixed batches (decodes, extends, prefills, in a shuffled order that
// the dispatcher reorders) run through tessel_attention_run in every routing
// mode and compared, token by token, with causal attention over each
// request's cached context and its new tokens. The kernels are the
// dispatch_* set of NumericsKernels.mlir (f32, 4 query heads, 2 KV heads,
// head dim 64, NHD blocks of 16); small chunk budgets and compute-unit
// counts make the schedules several chunks and several splits long.
//
// Also: the plan's decisions through the C API and every refusal message of
// creation, planning and running.
//
//===----------------------------------------------------------------------===//

#include "AttentionSetup.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>

namespace tessel::numerics {
namespace {

constexpr int64_t kQHeads = 4, kKvHeads = 2, kDim = 64, kBlock = 16;
/// The dispatcher's default, 1/sqrt(kDim).
constexpr double kScale = 0.125;

/// f32 on the host; bf16 on an emulated GPU, whose templates take no f32
/// attention (NumericsKernels.mlir has the dispatcher's set in both).
tessel_dtype dispatchDtype() {
  return onEmulatedGPU() ? TESSEL_DTYPE_BF16 : TESSEL_DTYPE_F32;
}

tessel_attention_config baseConfig() {
  tessel_attention_config c;
  tessel_attention_config_init(&c);
  c.dtype = dispatchDtype();
  c.num_q_heads = kQHeads;
  c.num_kv_heads = kKvHeads;
  c.head_dim = kDim;
  c.block_size = kBlock;
  c.routing = TESSEL_ROUTING_TRIPLE;
  return c;
}

struct AttentionDeleter {
  void operator()(tessel_attention a) const { tessel_attention_release(a); }
};
struct PlanDeleter {
  void operator()(tessel_attention_plan p) const {
    tessel_attention_plan_release(p);
  }
};
using AttentionPtr = std::unique_ptr<tessel_attention_t, AttentionDeleter>;
using PlanPtr = std::unique_ptr<tessel_attention_plan_t, PlanDeleter>;

/// The dispatcher of `config` over the default numerics bundle, or the
/// creation error in `error`.
AttentionPtr create(const tessel_attention_config &config,
                    std::string *error = nullptr,
                    tessel_status_code *code = nullptr) {
  tessel_attention attention = nullptr;
  std::string message = consume(
      tessel_attention_create(sharedBundle(defaultBundle().path), &config,
                              &attention),
      code);
  if (error)
    *error = message;
  else
    EXPECT_EQ(message, "");
  return AttentionPtr(attention);
}

PlanPtr plan(tessel_attention attention, size_t capacity) {
  tessel_attention_plan p = nullptr;
  EXPECT_EQ(consume(tessel_attention_plan_create(attention, capacity, &p)), "");
  return PlanPtr(p);
}

/// A workspace of the plan's size, 64-byte aligned.
struct Workspace {
  explicit Workspace(size_t bytes)
      : bytes(bytes), storage(bytes ? std::aligned_alloc(64, (bytes + 63) / 64 *
                                                                 64)
                                    : nullptr,
                              std::free) {}
  size_t bytes;
  std::unique_ptr<void, void (*)(void *)> storage;
};

/// One step's batch in plan order: caches holding every request's context
/// and its new tokens (as they are once the new tokens are written), and the
/// new tokens' q, k, v.
struct Batch {
  std::vector<int32_t> queryLens, contextLens;
  std::unique_ptr<PagedKV> cache;
  Tensor q, k, v, out, seqLens, slots;
  int64_t tokens = 0;

  /// `requests` (query length, context length) in the caller's order; the
  /// dispatcher orders them.
  Batch(tessel_attention attention,
        const std::vector<std::pair<int32_t, int32_t>> &requests, Rng &rng) {
    std::vector<int32_t> q0, c0;
    for (auto [ql, cl] : requests) {
      q0.push_back(ql);
      c0.push_back(cl);
    }
    std::vector<int32_t> order(requests.size());
    EXPECT_EQ(consume(tessel_attention_order(attention, q0.data(), c0.data(),
                                             q0.size(), order.data())),
              "");
    queryLens.resize(q0.size());
    contextLens.resize(c0.size());
    tessel_permute_rows(order.data(), order.size(), q0.data(), 4,
                        queryLens.data());
    tessel_permute_rows(order.data(), order.size(), c0.data(), 4,
                        contextLens.data());
    std::vector<int32_t> total(queryLens.size());
    for (size_t b = 0; b < total.size(); ++b)
      total[b] = queryLens[b] + contextLens[b];
    cache = std::make_unique<PagedKV>(
        PagedSpec{dispatchDtype(), ref::Layout::NHD, kBlock, kKvHeads, kDim,
                  kDim},
        total, rng);
    tokens = std::accumulate(queryLens.begin(), queryLens.end(), int64_t{0});
    q = randomTensor(dispatchDtype(), {tokens, kQHeads, kDim}, rng);
    k = Tensor(dispatchDtype(), {tokens, kKvHeads, kDim});
    v = Tensor(dispatchDtype(), {tokens, kKvHeads, kDim});
    out = Tensor::poisoned(dispatchDtype(), {tokens, kQHeads, kDim});
    seqLens = Tensor::i32({static_cast<int64_t>(total.size())}, total);
    std::vector<int32_t> slotOf;
    const int64_t columns = cache->blockTable.dim(1);
    for (size_t b = 0; b < queryLens.size(); ++b)
      for (int32_t i = 0; i < queryLens[b]; ++i) {
        int64_t j = contextLens[b] + i, t = slotOf.size();
        int32_t block = cache->blockTable.i32()[b * columns + j / kBlock];
        slotOf.push_back(static_cast<int32_t>(block * kBlock + j % kBlock));
        for (int64_t h = 0; h < kKvHeads; ++h)
          for (int64_t d = 0; d < kDim; ++d) {
            k.set(k.index({t, h, d}), cache->keys[b].row(j, h)[d]);
            v.set(v.index({t, h, d}), cache->values[b].row(j, h)[d]);
          }
      }
    slots = Tensor::i32({tokens}, slotOf);
  }

  int32_t maxBlocks() const {
    return static_cast<int32_t>(cache->blockTable.dim(1));
  }

  /// Overwrites the new tokens' cache slots with other numbers, so that
  /// only a run that writes them first gets the right answer.
  void scrambleNewTokens(Rng &rng) {
    const ref::CacheGeometry &g = cache->geometry;
    for (int64_t t = 0; t < tokens; ++t) {
      int32_t slot = slots.i32()[t];
      for (int64_t h = 0; h < kKvHeads; ++h)
        for (int64_t d = 0; d < kDim; ++d) {
          cache->kCache.set(g.kIndex(slot / kBlock, slot % kBlock, h, d),
                            rng.uniform(2.0, 3.0));
          cache->vCache.set(g.vIndex(slot / kBlock, slot % kBlock, h, d),
                            rng.uniform(2.0, 3.0));
        }
    }
  }

  tessel_attention_buffers buffers(bool writeCache) const {
    tessel_attention_buffers b = {};
    b.q = q.arg();
    b.k = k.arg();
    b.v = v.arg();
    b.k_cache = cache->kCache.arg();
    b.v_cache = cache->vCache.arg();
    b.block_table = cache->blockTable.arg();
    b.seq_lens = seqLens.arg();
    b.out = out.arg();
    if (writeCache)
      b.slot_mapping = slots.arg();
    return b;
  }

  /// Token i of request b attends to b's cached tokens [0, context + i].
  AttentionRef reference(double scale = kScale) const {
    std::vector<int64_t> requestOf, positionOf;
    for (size_t b = 0; b < queryLens.size(); ++b)
      for (int32_t i = 0; i < queryLens[b]; ++i) {
        requestOf.push_back(b);
        positionOf.push_back(contextLens[b] + i);
      }
    return attendAll(tokenRows(q), kKvHeads, kDim, scale,
                     [&](int64_t t, int64_t h, auto &keys, auto &values) {
                       int64_t b = requestOf[t];
                       for (int64_t j = 0; j <= positionOf[t]; ++j) {
                         keys.push_back(cache->keys[b].row(j, h));
                         values.push_back(cache->values[b].row(j, h));
                       }
                     });
  }
};

tessel_attention_plan_info infoOf(tessel_attention_plan p) {
  tessel_attention_plan_info info;
  tessel_attention_plan_get_info(p, &info);
  return info;
}

/// A plan of `batch`, or null and the planning error in `error`.
PlanPtr planBatch(tessel_attention attention, const Batch &batch,
                  std::string &error) {
  PlanPtr p = plan(attention, batch.queryLens.size());
  error = consume(tessel_attention_plan_build(
      p.get(), batch.queryLens.data(), batch.contextLens.data(),
      batch.queryLens.size(), batch.maxBlocks()));
  return error.empty() ? std::move(p) : nullptr;
}

/// Plans and runs `batch`, returning the run's message ("" on success).
std::string runBatch(tessel_attention attention, Batch &batch, bool writeCache,
                     tessel_attention_plan_info *info = nullptr) {
  std::string error;
  PlanPtr p = planBatch(attention, batch, error);
  if (!p)
    return error;
  tessel_attention_plan_info planned = infoOf(p.get());
  if (info)
    *info = planned;
  Workspace ws(planned.workspace_bytes);
  tessel_attention_buffers b = batch.buffers(writeCache);
  return consume(tessel_attention_run(p.get(), &b, ws.storage.get(), ws.bytes,
                                      nullptr));
}

//===----------------------------------------------------------------------===//
// End to end, every routing mode
//===----------------------------------------------------------------------===//

struct Mode {
  tessel_routing routing;
  int32_t decodeThreshold;
  bool writeCache;
};

void PrintTo(const Mode &m, std::ostream *os) {
  *os << tessel_routing_name(m.routing) << "_threshold"
      << m.decodeThreshold << (m.writeCache ? "_write" : "");
}

class Dispatch : public ::testing::TestWithParam<Mode> {};

// Decodes at block edges and a long one (split-KV), extends whose contexts
// end before, at and after chunk edges, prefills of odd lengths, and
// requests of 2-3 tokens that a decode threshold of 3 makes decodes.
const std::vector<std::pair<int32_t, int32_t>> kMixedBatch = {
    {17, 0},  {1, 15},  {2, 47}, {1, 1500}, {33, 48}, {1, 0},   {5, 200},
    {1, 16},  {64, 0},  {3, 49}, {1, 17},   {2, 0},   {40, 700}, {1, 300},
    {9, 1},   {3, 0}};

TEST_P(Dispatch, MixedBatchMatchesReference) {
  const Mode mode = GetParam();
  tessel_attention_config config = baseConfig();
  config.routing = mode.routing;
  config.decode_threshold = mode.decodeThreshold;
  config.context_chunk_tokens = 96; // several chunks, shared
  config.compute_units = 64;        // the long decode splits
  AttentionPtr attention = create(config);
  ASSERT_TRUE(attention);
  Rng rng(7 + mode.routing * 10 + mode.decodeThreshold);
  Batch batch(attention.get(), kMixedBatch, rng);
  if (mode.writeCache)
    batch.scrambleNewTokens(rng);

  tessel_attention_plan_info info;
  ASSERT_EQ(runBatch(attention.get(), batch, mode.writeCache, &info), "");
  size_t decodes = mode.decodeThreshold == 1 ? 6 : 10;
  EXPECT_EQ(info.num_decodes, decodes);
  EXPECT_EQ(info.num_extends + info.num_prefills, kMixedBatch.size() - decodes);
  if (mode.routing == TESSEL_ROUTING_UNIFIED) {
    // One kernel over every sequence, no context chunks.
    EXPECT_EQ(info.context_chunks, 0);
  } else {
    if (mode.decodeThreshold == 1)
      EXPECT_GT(info.kv_splits, 1);
    EXPECT_GT(info.context_chunks, 1);
  }
  EXPECT_TRUE(near("out", batch.out, batch.reference().out));
}

INSTANTIATE_TEST_SUITE_P(
    Routing, Dispatch,
    ::testing::Values(Mode{TESSEL_ROUTING_TRIPLE, 1, false},
                      Mode{TESSEL_ROUTING_TRIPLE, 1, true},
                      Mode{TESSEL_ROUTING_TRIPLE, 3, false},
                      Mode{TESSEL_ROUTING_UNIFIED, 1, false},
                      Mode{TESSEL_ROUTING_UNIFIED, 1, true},
                      Mode{TESSEL_ROUTING_TWO_PATH, 1, false},
                      Mode{TESSEL_ROUTING_TWO_PATH, 3, true}),
    [](const ::testing::TestParamInfo<Mode> &info) {
      std::ostringstream os;
      PrintTo(info.param, &os);
      return os.str();
    });

TEST(Dispatch, RandomBatchesInEveryMode) {
  Rng rng(2026);
  for (int round = 0; round < 6; ++round) {
    std::vector<std::pair<int32_t, int32_t>> requests;
    int64_t n = rng.integer(1, 9);
    for (int64_t i = 0; i < n; ++i) {
      int64_t kind = rng.integer(0, 2);
      int32_t q = kind == 0 ? 1 : static_cast<int32_t>(rng.integer(2, 40));
      int32_t c = kind == 2 ? 0 : static_cast<int32_t>(rng.integer(0, 400));
      requests.push_back({q, c});
    }
    for (tessel_routing routing :
         {TESSEL_ROUTING_TRIPLE, TESSEL_ROUTING_UNIFIED,
          TESSEL_ROUTING_TWO_PATH}) {
      tessel_attention_config config = baseConfig();
      config.routing = routing;
      config.context_chunk_tokens = 16 * rng.integer(1, 12);
      config.compute_units = static_cast<int32_t>(rng.integer(1, 200));
      AttentionPtr attention = create(config);
      ASSERT_TRUE(attention);
      Batch batch(attention.get(), requests, rng);
      ASSERT_EQ(runBatch(attention.get(), batch, false), "");
      EXPECT_TRUE(near("out", batch.out, batch.reference().out))
          << "round " << round << ", " << tessel_routing_name(routing);
    }
  }
}

/// The kernels take the softmax scale at launch: dispatchers of one bundle
/// with different scales each give the answer of their own scale, in every
/// routing mode (and the two answers are far apart, so a kernel that ignored
/// the scale would fail).
TEST(Dispatch, EachDispatcherRunsItsOwnScale) {
  for (tessel_routing routing : {TESSEL_ROUTING_TRIPLE, TESSEL_ROUTING_UNIFIED,
                                 TESSEL_ROUTING_TWO_PATH}) {
    for (double scale : {kScale, 0.3}) {
      tessel_attention_config config = baseConfig();
      config.routing = routing;
      if (scale != kScale)
        config.softmax_scale = static_cast<float>(scale);
      config.compute_units = 64;
      AttentionPtr attention = create(config);
      ASSERT_TRUE(attention);
      Rng rng(31);
      Batch batch(attention.get(), kMixedBatch, rng);
      ASSERT_EQ(runBatch(attention.get(), batch, false), "");
      const double other = scale == kScale ? 0.3 : kScale;
      EXPECT_TRUE(near("out", batch.out, batch.reference(scale).out))
          << tessel_routing_name(routing) << " scale " << scale;
      EXPECT_FALSE(near("out", batch.out, batch.reference(other).out))
          << tessel_routing_name(routing) << " scale " << scale;
    }
  }
}

/// The unified kernel's split form: a batch too small for the device runs
/// each sequence in windows, merged by LSE; the plan needs their partials'
/// workspace and blocks for every request's context and new tokens.
TEST(Dispatch, UnifiedSplitsSmallBatches) {
  tessel_attention_config config = baseConfig();
  config.routing = TESSEL_ROUTING_UNIFIED;
  config.compute_units = 512;
  AttentionPtr attention = create(config);
  ASSERT_TRUE(attention);
  Rng rng(43);
  Batch batch(attention.get(), {{1, 1500}, {3, 700}, {20, 0}}, rng);
  tessel_attention_plan_info info;
  ASSERT_EQ(runBatch(attention.get(), batch, false, &info), "");
  EXPECT_GT(info.kv_splits, 1);
  EXPECT_GE(info.workspace_bytes,
            static_cast<size_t>(info.kv_splits) * 24 * kQHeads * (kDim + 1) *
                4);
  EXPECT_TRUE(near("out", batch.out, batch.reference().out));

  // A prefill of 20 tokens needs 2 blocks of 16 here, not none.
  PlanPtr p = plan(attention.get(), 1);
  std::vector<int32_t> q = {20}, c = {0};
  EXPECT_EQ(consume(tessel_attention_plan_build(p.get(), q.data(), c.data(), 1,
                                                1)),
            "tessel_attention_plan_build: request 0 (a prefill of 20 new "
            "tokens after 0 cached) needs 2 cache blocks of 16 tokens, but "
            "max_blocks is 1");
}

TEST(Dispatch, BlockTablesNeedOnlyElementAlignment) {
  // The compiler marks block tables as read one entry at a time, which lets
  // the dispatcher pass row ranges and chunk-shifted tables to GPU kernels.
  for (std::string role : {"decode", "decode_split", "extend_context",
                           "unified"}) {
    std::string name = (onEmulatedGPU() ? "dispatch_bf16_" : "dispatch_") +
                       role;
    Kernel kernel(defaultBundle().path, name.c_str());
    ASSERT_TRUE(kernel.valid());
    for (size_t i = 0; i < tessel_kernel_num_args(kernel.handle()); ++i)
      EXPECT_EQ(tessel_kernel_arg_is_elementwise(kernel.handle(), i),
                std::string(tessel_kernel_arg_name(kernel.handle(), i)) ==
                    "block_table")
          << name << " arg " << tessel_kernel_arg_name(kernel.handle(), i);
  }
}

TEST(Dispatch, WriteCacheAlone) {
  AttentionPtr attention = create(baseConfig());
  ASSERT_TRUE(attention);
  Rng rng(11);
  Batch batch(attention.get(), {{1, 20}, {4, 0}}, rng);
  Tensor before = batch.cache->kCache;
  batch.scrambleNewTokens(rng);
  tessel_attention_buffers b = batch.buffers(true);
  ASSERT_EQ(consume(tessel_attention_write_cache(attention.get(), &b.k, &b.v,
                                                 &b.k_cache, &b.v_cache,
                                                 &b.slot_mapping, nullptr)),
            "");
  EXPECT_TRUE(exact("k_cache", batch.cache->kCache, before.values()));
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

TEST(DispatchPlan, DecodeOnlyStepNeedsNoWorkspaceOrCopy) {
  tessel_attention_config config = baseConfig();
  config.compute_units = 1; // no split
  AttentionPtr attention = create(config);
  ASSERT_TRUE(attention);
  PlanPtr p = plan(attention.get(), 4);
  std::vector<int32_t> q = {1, 1, 1}, c = {5, 40, 0};
  ASSERT_EQ(consume(tessel_attention_plan_build(p.get(), q.data(), c.data(), 3,
                                                4)),
            "");
  tessel_attention_plan_info info = infoOf(p.get());
  EXPECT_EQ(info.num_decodes, 3u);
  EXPECT_EQ(info.decode_tokens, 3);
  EXPECT_EQ(info.kv_splits, 1);
  EXPECT_EQ(info.context_chunks, 0);
  EXPECT_EQ(info.workspace_bytes, 0u);
}

TEST(DispatchPlan, WorkspaceIsExactlyEnough) {
  tessel_attention_config config = baseConfig();
  config.compute_units = 64;
  config.context_chunk_tokens = 64;
  AttentionPtr attention = create(config);
  ASSERT_TRUE(attention);
  Rng rng(5);
  Batch batch(attention.get(), {{1, 2000}, {7, 100}, {9, 0}}, rng);
  std::string error;
  PlanPtr p = planBatch(attention.get(), batch, error);
  ASSERT_TRUE(p) << error;
  tessel_attention_plan_info info = infoOf(p.get());
  EXPECT_GT(info.kv_splits, 1);
  EXPECT_EQ(info.context_chunks, 2); // 100 cached tokens, chunks of 64
  // Decode partials [P, 1, 4, 64] f32 + LSE, or the extend's three f32
  // partials of 7 tokens + LSE, after the metadata: at least the larger.
  size_t decode = info.kv_splits * (4 * 64 * 4 + 16);
  size_t extend = 3 * (7 * 4 * 64 * 4 + 7 * 4 * 4);
  EXPECT_GE(info.workspace_bytes, std::max(decode, extend));
  EXPECT_EQ(info.workspace_bytes % 16, 0u);
  tessel_attention_buffers b = batch.buffers(false);
  Workspace ws(info.workspace_bytes);
  std::string tooSmall = consume(tessel_attention_run(
      p.get(), &b, ws.storage.get(), info.workspace_bytes - 16, nullptr));
  EXPECT_NE(tooSmall.find("needs " + std::to_string(info.workspace_bytes) +
                          " bytes of workspace, got " +
                          std::to_string(info.workspace_bytes - 16)),
            std::string::npos)
      << tooSmall;
  EXPECT_EQ(consume(tessel_attention_run(p.get(), &b, ws.storage.get(),
                                         ws.bytes, nullptr)),
            "");
  EXPECT_TRUE(near("out", batch.out, batch.reference().out));
}

TEST(DispatchPlan, ChunksShareTheBudget) {
  tessel_attention_config config = baseConfig();
  config.context_chunk_tokens = 32768;
  config.compute_units = 1; // filled by the new tokens: chunks in sequence
  AttentionPtr attention = create(config);
  ASSERT_TRUE(attention);
  PlanPtr p = plan(attention.get(), 3);
  std::vector<int32_t> q = {64, 64, 64}, c = {100000, 40000, 500};
  ASSERT_EQ(consume(tessel_attention_plan_build(p.get(), q.data(), c.data(), 3,
                                                100000 / 16 + 1)),
            "");
  // Two long contexts share the budget (2 x 16128 + 500 <= 32768), then the
  // longest alone takes all of it.
  int64_t start = 0, width = 0;
  ASSERT_EQ(consume(tessel_attention_plan_chunk(p.get(), 0, &start, &width)),
            "");
  EXPECT_EQ(start, 0);
  EXPECT_EQ(width, 16128);
  tessel_attention_plan_info info = infoOf(p.get());
  EXPECT_EQ(info.context_chunks_parallel, 0);
  int64_t covered = 0;
  for (int32_t i = 0; i < info.context_chunks; ++i) {
    ASSERT_EQ(
        consume(tessel_attention_plan_chunk(p.get(), i, &start, &width)), "");
    EXPECT_EQ(start, covered);
    covered += width;
  }
  EXPECT_GE(covered, 100000);
  EXPECT_EQ(consume(tessel_attention_plan_chunk(p.get(), info.context_chunks,
                                                &start, &width)),
            "tessel_attention_plan_chunk: chunk " +
                std::to_string(info.context_chunks) + " of a schedule of " +
                std::to_string(info.context_chunks));
}

TEST(DispatchPlan, ShortTurnsOnLongContextsRunWindowsInParallel) {
  // A few new tokens over long contexts cannot fill the device: the
  // context runs as the windows of one launch, merged at once, each window
  // at most the budget wide.
  for (int64_t budget : {32768, 256}) {
    tessel_attention_config config = baseConfig();
    config.compute_units = 132;
    config.context_chunk_tokens = budget;
    AttentionPtr attention = create(config);
    ASSERT_TRUE(attention);
    Rng rng(budget);
    Batch batch(attention.get(), {{4, 3000}, {1, 900}, {7, 2500}, {6, 0}},
                rng);
    tessel_attention_plan_info info;
    ASSERT_EQ(runBatch(attention.get(), batch, true, &info), "");
    EXPECT_EQ(info.context_chunks_parallel, 1);
    EXPECT_GE(info.context_chunks, 6);
    std::string error;
    PlanPtr p = planBatch(attention.get(), batch, error);
    ASSERT_TRUE(p) << error;
    int64_t start = 0, width = 0;
    ASSERT_EQ(consume(tessel_attention_plan_chunk(p.get(), 1, &start, &width)),
              "");
    EXPECT_EQ(start, width);
    EXPECT_LE(width, budget);
    EXPECT_TRUE(near("out", batch.out, batch.reference().out))
        << "budget " << budget;
  }
}

//===----------------------------------------------------------------------===//
// Refusals: creation
//===----------------------------------------------------------------------===//

/// The creation error of `config` changed by `edit`.
std::string createError(void (*edit)(tessel_attention_config &),
                        tessel_status_code *code = nullptr) {
  tessel_attention_config config = baseConfig();
  edit(config);
  std::string error;
  AttentionPtr attention = create(config, &error, code);
  EXPECT_FALSE(attention);
  return error;
}

TEST(DispatchErrors, ConfigFields) {
  const std::string prefix = "tessel_attention_create: ";
  EXPECT_EQ(createError([](auto &c) { c.struct_size = 8; }),
            prefix + "config.struct_size is 8, expected " +
                std::to_string(sizeof(tessel_attention_config)) +
                ": initialise the config with tessel_attention_config_init");
  EXPECT_EQ(createError([](auto &c) {
              c.kind = static_cast<tessel_attention_kind>(7);
            }),
            prefix + "config.kind 7 is neither TESSEL_ATTENTION_MHA nor "
                     "TESSEL_ATTENTION_MLA");
  tessel_status_code code;
  EXPECT_EQ(
      createError([](auto &c) { c.dtype = TESSEL_DTYPE_I32; }, &code),
      prefix + "config.dtype i32 is not supported: the dispatcher runs bf16, "
               "f16 or f32 attention");
  EXPECT_EQ(code, TESSEL_UNSUPPORTED);
  EXPECT_EQ(createError([](auto &c) { c.num_kv_heads = 3; }),
            prefix + "config.num_q_heads (4) must be a positive multiple of "
                     "config.num_kv_heads (3)");
  EXPECT_EQ(createError([](auto &c) { c.head_dim = -64; }),
            prefix + "config.head_dim (-64) and v_head_dim (-64) must be "
                     "positive");
  EXPECT_EQ(createError([](auto &c) { c.block_size = 8; }),
            prefix + "config.block_size 8 is not supported: cache blocks hold "
                     "a positive multiple of 16 tokens");
  EXPECT_EQ(createError([](auto &c) { c.kv_layout = 2; }),
            prefix + "config.kv_layout 2 is neither 0 (NHD) nor 1 (CDNA "
                     "pre-shuffled)");
  EXPECT_EQ(createError([](auto &c) { c.decode_threshold = 0; }),
            prefix + "config.decode_threshold 0 must be at least 1");
  EXPECT_EQ(createError([](auto &c) { c.context_chunk_tokens = 15; }),
            prefix + "config.context_chunk_tokens 15 is less than one cache "
                     "block (16 tokens)");
  EXPECT_EQ(createError([](auto &c) { c.max_kv_splits = 0; }),
            prefix + "config.max_kv_splits 0 is outside [1, 256]");
  EXPECT_EQ(createError([](auto &c) { c.compute_units = -1; }),
            prefix + "config.compute_units -1 is negative");
  EXPECT_EQ(createError([](auto &c) { c.softmax_scale = -0.5f; }),
            prefix + "config.softmax_scale -0.5 must be finite and positive "
                     "(0: 1/sqrt(head_dim))");
  EXPECT_EQ(createError([](auto &c) { c.softmax_scale = INFINITY; }),
            prefix + "config.softmax_scale inf must be finite and positive "
                     "(0: 1/sqrt(head_dim))");
  EXPECT_EQ(createError([](auto &c) {
              c.routing = static_cast<tessel_routing>(9);
            }),
            prefix + "config.routing 9 is not a tessel_routing");
}

TEST(DispatchErrors, MlaConfig) {
  const std::string prefix = "tessel_attention_create: ";
  auto mla = [](tessel_attention_config &c) {
    c.kind = TESSEL_ATTENTION_MLA;
    c.latent_dim = 512;
    c.rope_dim = 64;
    c.latent_block_size = 16;
  };
  static decltype(mla) *edit = &mla;
  EXPECT_EQ(createError([](auto &c) {
              (*edit)(c);
              c.latent_dim = 0;
            }),
            prefix + "MLA needs config.latent_dim > 0 and rope_dim >= 0 (got "
                     "0 and 64)");
  EXPECT_EQ(createError([](auto &c) {
              (*edit)(c);
              c.latent_block_size = 20;
            }),
            prefix + "config.latent_block_size 20 is not supported: cache "
                     "blocks hold a positive multiple of 16 tokens");
  EXPECT_EQ(createError([](auto &c) {
              (*edit)(c);
              c.decode_threshold = 2;
            }),
            prefix + "MLA decodes run absorbed, one query token per request: "
                     "config.decode_threshold must be 1, got 2");
  EXPECT_EQ(createError([](auto &c) {
              (*edit)(c);
              c.routing = TESSEL_ROUTING_UNIFIED;
            }),
            prefix + "the unified routing is for MHA/GQA only: MLA decodes "
                     "run absorbed on the latent cache, which the unified "
                     "kernel does not read (use triple or two_path)");
}

TEST(DispatchErrors, MissingKernelListsWhatTheBundleHas) {
  tessel_status_code code;
  std::string error = createError(
      [](auto &c) {
        c.num_q_heads = 8;
        c.head_dim = 128;
      },
      &code);
  EXPECT_EQ(code, TESSEL_UNSUPPORTED);
  EXPECT_EQ(error.rfind("tessel_attention_create: the triple routing needs a "
                        "kernel for the decode split-KV partials: "
                        "tessel.paged_attention without cu_seqlens with "
                        "num_q_heads=8 num_kv_heads=2 head_dim=128 "
                        "v_head_dim=128 block_size=16 layout=0 split=1 "
                        "causal=0, f32, out f32; the bundle has these "
                        "tessel.paged_attention kernels: ",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find("dispatch_decode_split (layout=0 num_q_heads=4 "
                       "num_kv_heads=2 head_dim=64 v_head_dim=64 "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("Compile one for this configuration"),
            std::string::npos);
  // The unified routing needs its own kernel (and only it).
  error = createError(
      [](auto &c) {
        c.num_q_heads = 8;
        c.routing = TESSEL_ROUTING_UNIFIED;
      },
      &code);
  EXPECT_EQ(code, TESSEL_UNSUPPORTED);
  EXPECT_EQ(error.rfind("tessel_attention_create: the unified routing needs "
                        "a kernel for the whole batch (unified): "
                        "tessel.paged_attention with cu_seqlens with "
                        "num_q_heads=8 num_kv_heads=2 head_dim=64 "
                        "v_head_dim=64 block_size=16 layout=0 split=0 "
                        "causal=1 has_lse=0, f32, out f32; ",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find("paged_causal_f32_nhd_h4kv2_d64_bs16_cu (layout=0 "),
            std::string::npos)
      << error;
}

TEST(DispatchErrors, EnvironmentChoosesAutoRouting) {
  tessel_attention_config config = baseConfig();
  config.routing = TESSEL_ROUTING_AUTO;
  {
    AttentionPtr attention = create(config);
    EXPECT_EQ(tessel_attention_routing(attention.get()), TESSEL_ROUTING_TRIPLE);
  }
  ::setenv("TESSEL_ATTENTION", "two_path", 1);
  {
    AttentionPtr attention = create(config);
    EXPECT_EQ(tessel_attention_routing(attention.get()),
              TESSEL_ROUTING_TWO_PATH);
    // An explicit mode wins over the environment.
    tessel_attention_config explicitMode = config;
    explicitMode.routing = TESSEL_ROUTING_UNIFIED;
    AttentionPtr unified = create(explicitMode);
    EXPECT_EQ(tessel_attention_routing(unified.get()), TESSEL_ROUTING_UNIFIED);
  }
  ::setenv("TESSEL_ATTENTION", "fast", 1);
  std::string error;
  EXPECT_FALSE(create(config, &error));
  EXPECT_EQ(error, "tessel_attention_create: TESSEL_ATTENTION='fast' is not a "
                   "routing mode (auto, triple, unified, two_path)");
  ::unsetenv("TESSEL_ATTENTION");
}

//===----------------------------------------------------------------------===//
// Refusals: ordering, planning, running
//===----------------------------------------------------------------------===//

TEST(DispatchErrors, OrderAndPlan) {
  AttentionPtr attention = create(baseConfig());
  ASSERT_TRUE(attention);
  std::vector<int32_t> order(3);
  std::vector<int32_t> q = {1, 0, 4}, c = {3, 3, 0};
  EXPECT_EQ(consume(tessel_attention_order(attention.get(), q.data(), c.data(),
                                           3, order.data())),
            "tessel_attention_order: request 1 has query length 0 and context "
            "length 3 (a request has at least one new token and no negative "
            "context)");

  PlanPtr p = plan(attention.get(), 2);
  const std::string prefix = "tessel_attention_plan_build: ";
  auto build = [&](std::vector<int32_t> ql, std::vector<int32_t> cl,
                   int32_t maxBlocks) {
    return consume(tessel_attention_plan_build(p.get(), ql.data(), cl.data(),
                                               ql.size(), maxBlocks));
  };
  EXPECT_EQ(build({1, 1, 1}, {1, 1, 1}, 4),
            prefix + "a batch of 3 requests exceeds the plan's capacity of 2 "
                     "(tessel_attention_plan_create's max_requests)");
  EXPECT_EQ(build({1, 0}, {1, 1}, 4),
            prefix + "request 1: query length 0; every request has at least "
                     "one new token");
  EXPECT_EQ(build({1, 1}, {1, -2}, 4),
            prefix + "request 1: context length -2 is out of range");
  EXPECT_EQ(build({5, 1}, {0, 9}, 4),
            prefix + "the batch is not in [decode : extend : prefill] order: "
                     "request 1 (query 1, context 9 tokens) is a decode after "
                     "a prefill (tessel_attention_order gives the "
                     "permutation)");
  EXPECT_EQ(build({1, 5}, {40, 70}, 4),
            prefix + "request 1 (an extend of 5 new tokens after 70 cached) "
                     "needs 5 cache blocks of 16 tokens, but max_blocks is 4");
  EXPECT_EQ(build({1}, {1}, -1), prefix + "max_blocks -1 is negative");
}

TEST(DispatchErrors, RunBuffers) {
  tessel_attention_config config = baseConfig();
  config.compute_units = 64;
  AttentionPtr attention = create(config);
  ASSERT_TRUE(attention);
  Rng rng(3);
  Batch batch(attention.get(), {{1, 900}, {6, 30}, {5, 0}}, rng);
  std::string error;
  PlanPtr p = planBatch(attention.get(), batch, error);
  ASSERT_TRUE(p) << error;
  tessel_attention_plan_info info = infoOf(p.get());
  Workspace ws(info.workspace_bytes);
  const std::string prefix = "tessel_attention_run: ";
  auto run = [&](const tessel_attention_buffers &b, void *w = nullptr,
                 size_t bytes = 0) {
    return consume(tessel_attention_run(p.get(), &b, w ? w : ws.storage.get(),
                                        w ? bytes : ws.bytes, nullptr));
  };
  tessel_attention_buffers b = batch.buffers(false);
  b.k.data = nullptr;
  EXPECT_EQ(run(b), prefix + "buffers.k is missing (data is NULL) but this "
                             "plan needs it");
  b = batch.buffers(false);
  b.q.shape[0] = 11;
  EXPECT_EQ(run(b), prefix + "buffers.q has 11 rows, but the plan has 12");
  b = batch.buffers(false);
  b.seq_lens.rank = 2;
  EXPECT_EQ(run(b), prefix + "buffers.seq_lens has rank 2, expected 1");
  b = batch.buffers(false);
  b.block_table.shape[1] += 1;
  EXPECT_EQ(run(b), prefix + "buffers.block_table has " +
                        std::to_string(batch.maxBlocks() + 1) +
                        " columns, but the plan was built for max_blocks " +
                        std::to_string(batch.maxBlocks()));
  b = batch.buffers(false);
  EXPECT_EQ(consume(tessel_attention_run(p.get(), &b, nullptr, 0, nullptr)),
            prefix + "the plan needs " + std::to_string(info.workspace_bytes) +
                " bytes of workspace, got NULL");
  EXPECT_EQ(run(b, static_cast<char *>(ws.storage.get()) + 8,
                info.workspace_bytes),
            prefix + "the workspace " +
                [&] {
                  char text[32];
                  std::snprintf(text, sizeof text, "%p",
                                static_cast<char *>(ws.storage.get()) + 8);
                  return std::string(text);
                }() +
                " is not 16-byte aligned");
  // A kernel's own check names the kernel's role.
  b = batch.buffers(false);
  b.out.dtype = TESSEL_DTYPE_BF16;
  error = run(b);
  EXPECT_EQ(error.rfind(prefix + "merging the decode partials: kernel ", 0),
            0u)
      << error;
  EXPECT_NE(error.find("'out'"), std::string::npos) << error;
  EXPECT_NE(error.find("bf16"), std::string::npos) << error;

  // Unified: every request reads its sequence through seq_lens.
  config.routing = TESSEL_ROUTING_UNIFIED;
  AttentionPtr unified = create(config);
  ASSERT_TRUE(unified);
  Batch all(unified.get(), {{1, 900}, {6, 30}, {5, 0}}, rng);
  PlanPtr up = planBatch(unified.get(), all, error);
  ASSERT_TRUE(up) << error;
  Workspace uws(infoOf(up.get()).workspace_bytes);
  b = all.buffers(false);
  b.seq_lens.data = nullptr;
  EXPECT_EQ(consume(tessel_attention_run(up.get(), &b, uws.storage.get(),
                                         uws.bytes, nullptr)),
            prefix + "buffers.seq_lens is missing (data is NULL) but this "
                     "plan needs it");
}

TEST(DispatchErrors, WriteCacheNamesTheStep) {
  AttentionPtr attention = create(baseConfig());
  ASSERT_TRUE(attention);
  Rng rng(1);
  Batch batch(attention.get(), {{1, 3}}, rng);
  tessel_attention_buffers b = batch.buffers(true);
  b.k_cache.shape[1] = 32; // a cache of another block size
  std::string error = consume(tessel_attention_write_cache(
      attention.get(), &b.k, &b.v, &b.k_cache, &b.v_cache, &b.slot_mapping,
      nullptr));
  EXPECT_EQ(error.rfind("tessel_attention_write_cache: writing the new tokens "
                        "into the cache: kernel ",
                        0),
            0u)
      << error;
}

} // namespace
} // namespace tessel::numerics
