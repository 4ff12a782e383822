//===- dispatch_test.cpp - The dispatcher's planning and GPU paths --------===//
//
// Two halves. The planning arithmetic (dispatch/schedule.h) at every
// boundary: phases, order, chunk schedules, split-KV choice. And the
// dispatcher over bundles whose kernels have the right ops, shape
// parameters and signatures but fake binaries, on the fake CUDA driver:
// which kernels a run launches in which order, the metadata it copies, and
// the errors of a driver without cuMemcpyHtoDAsync or a bundle without a
// cache-write kernel. What the kernels compute is tested end to end on the
// host in unittests/Numerics/DispatchTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "dispatch/schedule.h"
#include "fake_drivers.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace tessel;
using namespace tessel::dispatch;
using namespace tessel::test;

namespace {

//===----------------------------------------------------------------------===//
// Planning arithmetic
//===----------------------------------------------------------------------===//

TEST(DispatchSchedule, PhasesAtEveryBoundary) {
  EXPECT_EQ(classify(1, 0, 1), TESSEL_PHASE_DECODE);
  EXPECT_EQ(classify(1, 5000, 1), TESSEL_PHASE_DECODE);
  EXPECT_EQ(classify(2, 0, 1), TESSEL_PHASE_PREFILL);
  EXPECT_EQ(classify(2, 1, 1), TESSEL_PHASE_EXTEND);
  // Speculative decoding: up to the threshold is a decode.
  EXPECT_EQ(classify(4, 0, 4), TESSEL_PHASE_DECODE);
  EXPECT_EQ(classify(4, 9, 4), TESSEL_PHASE_DECODE);
  EXPECT_EQ(classify(5, 9, 4), TESSEL_PHASE_EXTEND);
  EXPECT_EQ(classify(5, 0, 4), TESSEL_PHASE_PREFILL);
}

TEST(DispatchSchedule, OrderIsStableWithinEachPhase) {
  std::vector<int32_t> q = {7, 1, 3, 1, 9, 2, 1}, c = {0, 4, 8, 0, 2, 0, 9};
  std::vector<int32_t> order(q.size());
  orderByPhase(q.data(), c.data(), q.size(), 1, order.data());
  EXPECT_EQ(order, (std::vector<int32_t>{1, 3, 6, 2, 4, 0, 5}));
  orderByPhase(q.data(), c.data(), q.size(), 3, order.data());
  EXPECT_EQ(order, (std::vector<int32_t>{1, 2, 3, 5, 6, 4, 0}));
  orderByPhase(q.data(), c.data(), 0, 1, order.data()); // empty: no-op
}

/// The whole schedule of `contexts` under `budget`, blocks of 16.
std::vector<int64_t> widths(std::vector<int32_t> contexts, int64_t budget) {
  std::vector<int64_t> out;
  for (int64_t start = 0;;) {
    int64_t w = nextChunkWidth(contexts.data(), contexts.size(), start, budget,
                               16);
    if (!w)
      return out;
    EXPECT_EQ(w % 16, 0);
    // Within the budget unless one block alone is more than the budget's
    // share per request.
    if (w > 16)
      EXPECT_LE(chunkTokens(contexts.data(), contexts.size(), start, w),
                budget);
    out.push_back(w);
    start += w;
  }
}

TEST(DispatchSchedule, ChunksAtTheBudgetEdges) {
  const int64_t budget = 32768;
  EXPECT_EQ(widths({0}, budget), (std::vector<int64_t>{}));
  EXPECT_EQ(widths({0, 0}, budget), (std::vector<int64_t>{}));
  EXPECT_EQ(widths({1}, budget), (std::vector<int64_t>{16}));
  EXPECT_EQ(widths({32767}, budget), (std::vector<int64_t>{32768}));
  EXPECT_EQ(widths({32768}, budget), (std::vector<int64_t>{32768}));
  EXPECT_EQ(widths({32769}, budget), (std::vector<int64_t>{32768, 16}));
  EXPECT_EQ(widths({131072}, budget),
            (std::vector<int64_t>{32768, 32768, 32768, 32768}));
}

TEST(DispatchSchedule, ExtendsShareTheBudget) {
  // Two long contexts split it (2 * 16128 + 500 <= 32768); once the 40000
  // one is done the 100000 one takes all of it.
  std::vector<int64_t> w = widths({100000, 40000, 500}, 32768);
  ASSERT_GE(w.size(), 3u);
  EXPECT_EQ(w[0], 16128);
  EXPECT_EQ(w[1], 16384);
  int64_t covered = std::accumulate(w.begin(), w.end(), int64_t{0});
  EXPECT_GE(covered, 100000);
  EXPECT_LT(covered - w.back(), 100000);
  // Many extends: each gets at least a block even past the budget.
  std::vector<int32_t> many(4096, 100);
  EXPECT_EQ(nextChunkWidth(many.data(), many.size(), 0, 32768, 16), 16);
  // A short context does not hold the others back: it is fully inside the
  // first chunk, whose width goes to the long one.
  EXPECT_EQ(widths({200000, 17}, 32768)[0], 32736);
}

TEST(DispatchSchedule, SplitKvFillsTheDevice) {
  SplitInputs one{1, 8, 131072, 8192, 16, 132, 32};
  EXPECT_EQ(chooseKvSplits(one), 32); // 8 blocks of work; 264 wanted
  SplitInputs full{64, 8, 4096, 256, 16, 132, 32};
  EXPECT_EQ(chooseKvSplits(full), 1); // 512 blocks already
  SplitInputs shortContext{1, 8, 511, 32, 16, 132, 32};
  EXPECT_EQ(chooseKvSplits(shortContext), 1); // under one split's worth
  SplitInputs twoWorth{1, 8, 1024, 64, 16, 132, 32};
  EXPECT_EQ(chooseKvSplits(twoWorth), 2);
  EXPECT_EQ(splitWindow(64, 2, 16), 512);
  // A table much wider than the contexts: every split but the first would
  // be empty, so none.
  SplitInputs wideTable{1, 8, 4096, 8192, 16, 132, 32};
  EXPECT_EQ(chooseKvSplits(wideTable), 1);
  SplitInputs capped{1, 1, 1 << 20, 65536, 16, 132, 4};
  EXPECT_EQ(chooseKvSplits(capped), 4);
  SplitInputs none{0, 8, 0, 0, 16, 132, 32};
  EXPECT_EQ(chooseKvSplits(none), 1);
  // MLA on sm90a: 8 decodes of 64K tokens, 2 head groups, one block an
  // SM. Whole waves: 8 splits (128 blocks), not 9 (144: a wave and a bit);
  // at two blocks a unit, rounding up, 17.
  SplitInputs mla{8, 2, 65536, 1024, 64, 132, 32, 1, true};
  EXPECT_EQ(chooseKvSplits(mla), 8);
  mla.blocksPerUnit = 2;
  mla.wholeWaves = false;
  EXPECT_EQ(chooseKvSplits(mla), 17);
}

//===----------------------------------------------------------------------===//
// The dispatcher on fake kernels
//===----------------------------------------------------------------------===//

/// An argument of a role kernel: every dim its own symbol, so any shape of
/// the right rank and dtype passes the launch checks (rank 0: a scalar).
struct ArgSpec {
  const char *name;
  tessel_dtype dtype;
  int rank;
  bool output = false;
};

/// A kernel with `op`, `params` and `args` whose binary the fake CUDA driver
/// loads and "launches" (it records the launch and runs nothing).
bundle::Kernel roleKernel(const std::string &name, const char *op,
                          tessel_dtype dtype,
                          std::vector<std::pair<std::string, int64_t>> params,
                          std::vector<ArgSpec> args) {
  bundle::Kernel k = gpuKernel(name, "sm90");
  k.op = op;
  k.dtype = dtype;
  k.params = std::move(params);
  k.args.clear();
  k.symbols.clear();
  for (const ArgSpec &spec : args) {
    bundle::Arg arg;
    arg.name = spec.name;
    arg.dtype = spec.dtype;
    arg.isOutput = spec.output;
    // As the compiler marks them: read one entry at a time.
    arg.elementwise = arg.name == "block_table";
    for (int d = 0; d < spec.rank; ++d) {
      arg.dims.push_back(bundle::Dim::symbol(k.symbols.size()));
      k.symbols.push_back(name + std::to_string(k.symbols.size()));
    }
    k.args.push_back(arg);
  }
  return k;
}

constexpr tessel_dtype BF16 = TESSEL_DTYPE_BF16, F32 = TESSEL_DTYPE_F32,
                       I32 = TESSEL_DTYPE_I32;

/// The MHA kernel set of a 32/8-head, head dim 128, block 16 bf16 model.
std::vector<bundle::Kernel> mhaKernels(bool withCacheWrite) {
  std::vector<std::pair<std::string, int64_t>> heads = {
      {"num_q_heads", 32}, {"num_kv_heads", 8}, {"head_dim", 128},
      {"v_head_dim", 128}};
  auto with = [&](std::vector<std::pair<std::string, int64_t>> extra) {
    auto p = heads;
    p.insert(p.end(), extra.begin(), extra.end());
    return p;
  };
  auto merge = [](int64_t hasLse) {
    return std::vector<std::pair<std::string, int64_t>>{
        {"num_heads", 32}, {"head_dim", 128}, {"has_lse", hasLse}};
  };
  ArgSpec q{"q", BF16, 3}, k{"k", BF16, 3}, v{"v", BF16, 3},
      kc{"k_cache", BF16, 4}, vc{"v_cache", BF16, 4},
      bt{"block_table", I32, 2}, cu{"cu_seqlens", I32, 1},
      lens{"context_lens", I32, 1}, scale{"scale", F32, 0};
  std::vector<bundle::Kernel> set = {
      roleKernel("decode_split", "tessel.paged_attention", BF16,
                 with({{"block_size", 16}, {"layout", 0}, {"split", 1},
                       {"causal", 0}}),
                 {q, kc, vc, bt, lens, {"out", F32, 4, true},
                  {"lse", F32, 3, true}, scale}),
      roleKernel("decode_merge", "tessel.lse_merge_n", F32, merge(0),
                 {{"partials", F32, 4}, {"partial_lse", F32, 3},
                  {"out", BF16, 3, true}}),
      roleKernel("prefill", "tessel.prefill_attention", BF16,
                 with({{"causal", 1}, {"has_lse", 0}}),
                 {q, k, v, cu, {"out", BF16, 3, true}, scale}),
      roleKernel("extend_new", "tessel.prefill_attention", BF16,
                 with({{"causal", 1}, {"has_lse", 1}}),
                 {q, k, v, cu, {"out", F32, 3, true}, {"lse", F32, 2, true},
                  scale}),
      roleKernel("extend_context", "tessel.paged_attention", BF16,
                 with({{"block_size", 16}, {"layout", 0}, {"split", 1},
                       {"causal", 0}}),
                 {q, kc, vc, bt, cu, lens, {"out", F32, 4, true},
                  {"lse", F32, 3, true}, scale}),
      roleKernel("merge_acc", "tessel.lse_merge", F32, merge(1),
                 {{"o_a", F32, 3}, {"lse_a", F32, 2}, {"o_b", F32, 3},
                  {"lse_b", F32, 2}, {"out", F32, 3, true},
                  {"lse_out", F32, 2, true}}),
      roleKernel("merge_out", "tessel.lse_merge", F32, merge(0),
                 {{"o_a", F32, 3}, {"lse_a", F32, 2}, {"o_b", F32, 3},
                  {"lse_b", F32, 2}, {"out", BF16, 3, true}}),
      roleKernel("unified", "tessel.paged_attention", BF16,
                 with({{"block_size", 16}, {"layout", 0}, {"split", 0},
                       {"causal", 1}, {"has_lse", 0}}),
                 {q, kc, vc, bt, cu, lens, {"out", BF16, 3, true}, scale}),
      roleKernel("unified_split", "tessel.paged_attention", BF16,
                 with({{"block_size", 16}, {"layout", 0}, {"split", 1},
                       {"causal", 1}, {"has_lse", 1}}),
                 {q, kc, vc, bt, cu, lens, {"out", F32, 4, true},
                  {"lse", F32, 3, true}, scale}),
  };
  // The sm90a kernel's geometry: 32 tokens (x 4 heads) a tile, a block
  // per KV head.
  for (bundle::Kernel &k : set)
    if (k.name.rfind("unified", 0) == 0) {
      k.gridDiv[0] = 32;
      k.grid[1] = bundle::Dim::constant(8);
    }
  if (withCacheWrite)
    set.push_back(roleKernel(
        "cache_write", "tessel.reshape_and_cache", BF16,
        {{"num_kv_heads", 8}, {"head_dim", 128}, {"v_head_dim", 128},
         {"block_size", 16}, {"layout", 0}},
        {k, v, {"k_cache", BF16, 4, true}, {"v_cache", BF16, 4, true},
         {"slot_mapping", I32, 1}}));
  return set;
}

tessel_attention_config mhaConfig() {
  tessel_attention_config c;
  tessel_attention_config_init(&c);
  c.num_q_heads = 32;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.block_size = 16;
  c.routing = TESSEL_ROUTING_TRIPLE;
  return c;
}

/// 16-byte aligned host memory standing in for device buffers (the fake
/// driver's "device pointers" are host pointers).
struct Buffer {
  explicit Buffer(size_t bytes) : storage((bytes + 15) / 16 + 1) {}
  void *data() { return storage.data(); }
  std::vector<__int128> storage;
};

class DispatchOnFakeCuda : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_NE(state = resetFakeCudaState(), nullptr); }

  /// Opens the fake device and loads `kernels`.
  void load(const std::vector<bundle::Kernel> &kernels) {
    tessel_device d = nullptr;
    ASSERT_TRUE(succeeds(tessel_device_open("cuda", 0, &d)));
    device.reset(d);
    std::vector<uint8_t> bytes = pack(kernels);
    bundle = loadOrFail(device.get(), bytes);
  }

  tessel_attention create(const tessel_attention_config &config) {
    tessel_attention a = nullptr;
    EXPECT_TRUE(succeeds(tessel_attention_create(bundle.get(), &config, &a)));
    return a;
  }

  /// The kv_splits of a plan for requests of these query and context
  /// lengths (-1 where the plan could not be built).
  int32_t plannedSplits(const tessel_attention_config &config,
                        std::vector<int32_t> queryLens,
                        std::vector<int32_t> contextLens,
                        int64_t maxBlocks) {
    tessel_attention attention = create(config);
    tessel_attention_plan plan = nullptr;
    int32_t splits = -1;
    size_t n = queryLens.size();
    if (attention &&
        succeeds(tessel_attention_plan_create(attention, n, &plan)) &&
        succeeds(tessel_attention_plan_build(plan, queryLens.data(),
                                             contextLens.data(), n,
                                             maxBlocks))) {
      tessel_attention_plan_info info;
      tessel_attention_plan_get_info(plan, &info);
      splits = info.kv_splits;
    }
    tessel_attention_plan_release(plan);
    tessel_attention_release(attention);
    return splits;
  }

  ScopedEnv library{"TESSEL_CUDA_LIBRARY", TESSEL_TEST_FAKE_CUDA};
  fake_driver_state *state = nullptr;
  DevicePtr device;
  BundlePtr bundle;
};

/// The buffers of a batch of `tokens` new tokens and `requests` requests,
/// with a block table `maxBlocks` wide.
struct FakeBatch {
  FakeBatch(int64_t tokens, int64_t requests, int64_t maxBlocks)
      : q(tokens * 32 * 128 * 2), kv(tokens * 8 * 128 * 2),
        out(tokens * 32 * 128 * 2), cache(64 * 16 * 8 * 128 * 2),
        table(requests * maxBlocks * 4), lens(requests * 4),
        slots(tokens * 4) {
    b.q = tensor(q.data(), BF16, {tokens, 32, 128});
    b.k = b.v = tensor(kv.data(), BF16, {tokens, 8, 128});
    b.k_cache = b.v_cache = tensor(cache.data(), BF16, {64, 16, 8, 128});
    b.block_table = tensor(table.data(), I32, {requests, maxBlocks});
    b.seq_lens = tensor(lens.data(), I32, {requests});
    b.out = tensor(out.data(), BF16, {tokens, 32, 128});
  }
  Buffer q, kv, out, cache, table, lens, slots;
  tessel_attention_buffers b = {};
};

TEST_F(DispatchOnFakeCuda, TripleRunLaunchesEachPhaseInOrder) {
  load(mhaKernels(true));
  tessel_attention attention = create(mhaConfig());
  ASSERT_NE(attention, nullptr);
  tessel_attention_plan plan = nullptr;
  ASSERT_TRUE(succeeds(tessel_attention_plan_create(attention, 8, &plan)));
  // One long decode (split on 132 SMs), two extends with 4000 new tokens
  // (enough to fill the device: the 40000-token context in two chunks of
  // the 32768-token budget, one after the other), one prefill.
  std::vector<int32_t> q = {1, 2000, 2000, 9}, c = {20000, 40000, 100, 0};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q.data(), c.data(), 4, 2501)));
  tessel_attention_plan_info info;
  tessel_attention_plan_get_info(plan, &info);
  EXPECT_GT(info.kv_splits, 1);
  ASSERT_EQ(info.context_chunks, 2);
  ASSERT_EQ(info.context_chunks_parallel, 0);

  FakeBatch batch(4010, 4, 2501);
  Buffer workspace(info.workspace_bytes);
  state->num_params = 0;
  ASSERT_TRUE(succeeds(tessel_attention_run(plan, &batch.b, workspace.data(),
                                            info.workspace_bytes, nullptr)));
  // decode: split + merge; extend: new + 2 x (context + merge); prefill.
  EXPECT_EQ(state->launches, 2 + 1 + 4 + 1);
  EXPECT_STREQ(state->last_launch.function, "prefill_entry");
  // The metadata went to the workspace's head: the extends' cu_seqlens,
  // rebased to their first token, then (16-byte aligned) the prefill's,
  // then each chunk's context lengths (clipped to the chunk).
  const int32_t *image = static_cast<const int32_t *>(workspace.data());
  EXPECT_EQ(std::vector<int32_t>(image, image + 3),
            (std::vector<int32_t>{0, 2000, 4000}));
  EXPECT_EQ(std::vector<int32_t>(image + 4, image + 6),
            (std::vector<int32_t>{0, 9}));
  EXPECT_EQ(std::vector<int32_t>(image + 8, image + 10),
            (std::vector<int32_t>{32656, 100}));
  EXPECT_EQ(std::vector<int32_t>(image + 12, image + 14),
            (std::vector<int32_t>{7344, 0}));

  // With slot_mapping the run writes the new tokens into the cache first.
  state->launches = 0;
  batch.b.slot_mapping = tensor(batch.slots.data(), I32, {4010});
  ASSERT_TRUE(succeeds(tessel_attention_run(plan, &batch.b, workspace.data(),
                                            info.workspace_bytes, nullptr)));
  EXPECT_EQ(state->launches, 1 + 2 + 1 + 4 + 1);

  // A short turn on the same long context: 12 new tokens cannot fill 132
  // SMs, so the context runs as the windows of one launch, merged at once.
  std::vector<int32_t> q2 = {1, 5, 7, 9};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q2.data(), c.data(), 4, 2501)));
  tessel_attention_plan_get_info(plan, &info);
  EXPECT_EQ(info.context_chunks_parallel, 1);
  EXPECT_GT(info.context_chunks, 2);
  int64_t start = 0, width = 0;
  ASSERT_TRUE(succeeds(tessel_attention_plan_chunk(
      plan, info.context_chunks - 1, &start, &width)));
  EXPECT_EQ(start, (info.context_chunks - 1) * width);
  EXPECT_LE(width, 32768);
  FakeBatch shortTurn(22, 4, 2501);
  Buffer workspace2(info.workspace_bytes);
  state->launches = 0;
  ASSERT_TRUE(succeeds(tessel_attention_run(plan, &shortTurn.b,
                                            workspace2.data(),
                                            info.workspace_bytes, nullptr)));
  // decode: split + merge; extend: new + windows + one merge; prefill.
  EXPECT_EQ(state->launches, 2 + 3 + 1);
  const int32_t *image2 = static_cast<const int32_t *>(workspace2.data());
  EXPECT_EQ(std::vector<int32_t>(image2 + 8, image2 + 10),
            (std::vector<int32_t>{40000, 100})); // whole contexts
  tessel_attention_plan_release(plan);
  tessel_attention_release(attention);
}

TEST_F(DispatchOnFakeCuda, UnifiedSplitsOfALargeBlockFillWholeWaves) {
  // 64 new tokens on a 131072-token context: 2 tiles x 8 KV heads a split.
  // At two blocks an SM, 17 splits (272 blocks); a unified_split kernel
  // whose block takes more than half an SM's shared memory (sm90a's) runs
  // one an SM, and takes 8 (128 blocks, one wave of 132).
  for (auto [sharedBytes, splits] :
       {std::pair<uint32_t, int32_t>{0, 17}, {200 * 1024, 8}}) {
    std::vector<bundle::Kernel> set = mhaKernels(true);
    for (bundle::Kernel &k : set)
      if (k.name == "unified_split")
        k.sharedBytes = sharedBytes;
    load(set);
    tessel_attention_config config = mhaConfig();
    config.routing = TESSEL_ROUTING_UNIFIED;
    config.compute_units = 132;
    EXPECT_EQ(plannedSplits(config, {64}, {131072}, 8197), splits)
        << sharedBytes << " bytes a block";
  }
}

TEST_F(DispatchOnFakeCuda, ParallelWindowsStayWithinTheBudget) {
  // Windows are whole blocks: a 200-token budget holds 12 blocks of 16, so
  // a 49-block context takes at least 5 windows, not the 4 of 13 blocks
  // (208 tokens) that a count in tokens gave.
  load(mhaKernels(true));
  tessel_attention_config config = mhaConfig();
  config.context_chunk_tokens = 200;
  bool parallel = false;
  for (int32_t units : {2, 3, 4, 8, 132}) {
    config.compute_units = units;
    tessel_attention attention = create(config);
    tessel_attention_plan plan = nullptr;
    ASSERT_TRUE(succeeds(tessel_attention_plan_create(attention, 1, &plan)));
    std::vector<int32_t> q = {4}, c = {780};
    ASSERT_TRUE(
        succeeds(tessel_attention_plan_build(plan, q.data(), c.data(), 1, 49)));
    tessel_attention_plan_info info;
    tessel_attention_plan_get_info(plan, &info);
    for (int32_t i = 0; info.context_chunks_parallel && i < info.context_chunks;
         ++i) {
      parallel = true;
      int64_t start = 0, width = 0;
      ASSERT_TRUE(
          succeeds(tessel_attention_plan_chunk(plan, i, &start, &width)));
      EXPECT_LE(width, 200) << units << " compute units, window " << i;
    }
    tessel_attention_plan_release(plan);
    tessel_attention_release(attention);
  }
  EXPECT_TRUE(parallel);
}

TEST_F(DispatchOnFakeCuda, UnifiedRunsTheBatchInOneKernel) {
  load(mhaKernels(true));
  tessel_attention_config config = mhaConfig();
  config.routing = TESSEL_ROUTING_UNIFIED;
  tessel_attention attention = create(config);
  ASSERT_NE(attention, nullptr);
  tessel_attention_plan plan = nullptr;
  ASSERT_TRUE(succeeds(tessel_attention_plan_create(attention, 8, &plan)));
  // 3 decodes, an extend and a prefill: 4 + 63 + 1 tiles of 32 tokens x 8
  // KV heads fill 132 SMs twice over: no split.
  std::vector<int32_t> q = {1, 1, 1, 2000, 9}, c = {20000, 300, 0, 4000, 0};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q.data(), c.data(), 5, 1400)));
  tessel_attention_plan_info info;
  tessel_attention_plan_get_info(plan, &info);
  EXPECT_EQ(info.kv_splits, 1);
  EXPECT_EQ(info.context_chunks, 0);
  FakeBatch batch(2012, 5, 1400);
  Buffer workspace(info.workspace_bytes);
  state->launches = 0;
  ASSERT_TRUE(succeeds(tessel_attention_run(plan, &batch.b, workspace.data(),
                                            info.workspace_bytes, nullptr)));
  EXPECT_EQ(state->launches, 1);
  EXPECT_STREQ(state->last_launch.function, "unified_entry");
  // The whole batch's cu_seqlens head the workspace.
  const int32_t *image = static_cast<const int32_t *>(workspace.data());
  EXPECT_EQ(std::vector<int32_t>(image, image + 6),
            (std::vector<int32_t>{0, 1, 2, 3, 2003, 2012}));
  // With the cache write first.
  state->launches = 0;
  batch.b.slot_mapping = tensor(batch.slots.data(), I32, {2012});
  ASSERT_TRUE(succeeds(tessel_attention_run(plan, &batch.b, workspace.data(),
                                            info.workspace_bytes, nullptr)));
  EXPECT_EQ(state->launches, 2);

  // A short turn on a long context: 1 tile x 8 blocks; the sequence runs
  // in windows, merged into out.
  std::vector<int32_t> q2 = {16}, c2 = {131072};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q2.data(), c2.data(), 1, 8193)));
  tessel_attention_plan_get_info(plan, &info);
  EXPECT_GT(info.kv_splits, 8);
  EXPECT_GE(info.workspace_bytes,
            static_cast<size_t>(info.kv_splits) * 16 * 32 * 129 * 4);
  FakeBatch shortTurn(16, 1, 8193);
  Buffer workspace2(info.workspace_bytes);
  state->launches = 0;
  ASSERT_TRUE(succeeds(tessel_attention_run(plan, &shortTurn.b,
                                            workspace2.data(),
                                            info.workspace_bytes, nullptr)));
  EXPECT_EQ(state->launches, 2);
  // (The N-way merge: the decodes' serves.)
  EXPECT_STREQ(state->last_launch.function, "decode_merge_entry");
  tessel_attention_plan_release(plan);
  tessel_attention_release(attention);
}

TEST_F(DispatchOnFakeCuda, DecodeOnlyStepCopiesNothing) {
  // A driver without cuMemcpyHtoDAsync still runs uniform single-token
  // decode steps (the CUDA-graph case), and refuses plans with metadata.
  ScopedEnv minimal("TESSEL_CUDA_LIBRARY", TESSEL_TEST_FAKE_CUDA_MINIMAL);
  load(mhaKernels(true));
  tessel_attention attention = create(mhaConfig());
  ASSERT_NE(attention, nullptr);
  tessel_attention_plan plan = nullptr;
  ASSERT_TRUE(succeeds(tessel_attention_plan_create(attention, 8, &plan)));
  std::vector<int32_t> q = {1, 1, 1}, c = {3000, 10, 0};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q.data(), c.data(), 3, 200)));
  tessel_attention_plan_info info;
  tessel_attention_plan_get_info(plan, &info);
  FakeBatch decodes(3, 3, 200);
  Buffer workspace(info.workspace_bytes);
  EXPECT_TRUE(succeeds(tessel_attention_run(plan, &decodes.b, workspace.data(),
                                            info.workspace_bytes, nullptr)));

  std::vector<int32_t> q2 = {1, 4}, c2 = {10, 0};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q2.data(), c2.data(), 2, 200)));
  tessel_attention_plan_get_info(plan, &info);
  FakeBatch mixed(5, 2, 200);
  Buffer workspace2(info.workspace_bytes);
  EXPECT_TRUE(failsWith(
      tessel_attention_run(plan, &mixed.b, workspace2.data(),
                           info.workspace_bytes, nullptr),
      TESSEL_UNAVAILABLE,
      {"tessel_attention_run: copying the plan's metadata to the workspace: "
       "the CUDA driver lacks cuMemcpyHtoDAsync_v2"}));
  tessel_attention_plan_release(plan);
  tessel_attention_release(attention);
}

TEST_F(DispatchOnFakeCuda, NoCacheWriteKernel) {
  load(mhaKernels(false));
  tessel_attention attention = create(mhaConfig());
  ASSERT_NE(attention, nullptr);
  FakeBatch batch(4, 1, 4);
  batch.b.slot_mapping = tensor(batch.slots.data(), I32, {4});
  const char *expected =
      "the bundle has no reshape_and_cache kernel for 8 KV heads, head dims "
      "128/128, block size 16, layout 0, bf16: write the new tokens into the "
      "cache yourself (and pass slot_mapping.data = NULL to runs)";
  EXPECT_TRUE(failsWith(
      tessel_attention_write_cache(attention, &batch.b.k, &batch.b.v,
                                   &batch.b.k_cache, &batch.b.v_cache,
                                   &batch.b.slot_mapping, nullptr),
      TESSEL_UNSUPPORTED, {"tessel_attention_write_cache: ", expected}));
  tessel_attention_plan plan = nullptr;
  ASSERT_TRUE(succeeds(tessel_attention_plan_create(attention, 1, &plan)));
  std::vector<int32_t> q = {4}, c = {0};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q.data(), c.data(), 1, 4)));
  EXPECT_TRUE(failsWith(
      tessel_attention_run(plan, &batch.b, nullptr, 0, nullptr),
      TESSEL_INVALID_ARGUMENT, {"tessel_attention_run: the plan needs "}));
  tessel_attention_plan_info info;
  tessel_attention_plan_get_info(plan, &info);
  Buffer workspace(info.workspace_bytes);
  EXPECT_TRUE(failsWith(tessel_attention_run(plan, &batch.b, workspace.data(),
                                             info.workspace_bytes, nullptr),
                        TESSEL_UNSUPPORTED,
                        {"tessel_attention_run: ", expected}));
  tessel_attention_plan_release(plan);
  tessel_attention_release(attention);
}

/// The MLA kernel set of MlaDecodesRunAbsorbed: the MHA kernels with 32 KV
/// heads, the split MLA decode (its grid taking `headsPerBlock` heads per
/// block, as the bundle's grid x divisor says) and its merge.
std::vector<bundle::Kernel> mlaKernels(uint32_t headsPerBlock) {
  std::vector<bundle::Kernel> set = mhaKernels(false);
  // Non-absorbed MLA: 32 heads of qk 128 here, as kv heads too.
  for (bundle::Kernel &k : set)
    for (auto &param : k.params)
      if (param.first == "num_kv_heads")
        param.second = 32;
  ArgSpec qArg{"q", BF16, 3}, cache{"kv_cache", BF16, 3},
      bt{"block_table", I32, 2}, lens{"seq_lens", I32, 1},
      scale{"scale", F32, 0};
  set.push_back(roleKernel("mla_split", "tessel.mla_decode", BF16,
                           {{"num_heads", 32}, {"head_dim", 576},
                            {"latent_dim", 512}, {"split", 1},
                            {"block_size", 64}, {"has_lse", 1}},
                           {qArg, cache, bt, lens, {"out", F32, 4, true},
                            {"lse", F32, 3, true}, scale}));
  set.back().gridDiv[0] = headsPerBlock;
  set.push_back(roleKernel("mla_merge", "tessel.lse_merge_n", F32,
                           {{"num_heads", 32}, {"head_dim", 512},
                            {"has_lse", 0}},
                           {{"partials", F32, 4}, {"partial_lse", F32, 3},
                            {"out", BF16, 3, true}}));
  return set;
}

tessel_attention_config mlaConfig() {
  tessel_attention_config config = mhaConfig();
  config.kind = TESSEL_ATTENTION_MLA;
  config.num_kv_heads = 32;
  config.latent_dim = 512;
  config.rope_dim = 64;
  config.latent_block_size = 64;
  return config;
}

TEST_F(DispatchOnFakeCuda, MlaSplitsFollowTheKernelsHeadsPerBlock) {
  // 40 decodes of 9000 tokens, 32 heads, 132 SMs at 2 blocks each: the
  // sm80 template's 16 heads a block make 80 blocks a split (4 splits);
  // sm90a's 64 make 40 (7 splits); and with sm90a's shared memory (more
  // than half an SM's: one block an SM) whole waves of 132, 3 splits.
  struct Case {
    uint32_t headsPerBlock, sharedBytes;
    int32_t splits;
  };
  for (Case kernel :
       {Case{16, 0, 4}, Case{64, 0, 7}, Case{64, 200 * 1024, 3}}) {
    auto [headsPerBlock, sharedBytes, splits] = kernel;
    std::vector<bundle::Kernel> set = mlaKernels(headsPerBlock);
    for (bundle::Kernel &k : set)
      if (k.name == "mla_split")
        k.sharedBytes = sharedBytes;
    load(set);
    tessel_attention_config config = mlaConfig();
    config.compute_units = 132;
    EXPECT_EQ(plannedSplits(config, std::vector<int32_t>(40, 1),
                            std::vector<int32_t>(40, 9000), 150),
              splits)
        << headsPerBlock << " heads a block";
  }
}

TEST_F(DispatchOnFakeCuda, MlaDecodesRunAbsorbed) {
  load(mlaKernels(16));
  tessel_attention_config config = mlaConfig();
  tessel_attention attention = create(config);
  ASSERT_NE(attention, nullptr);
  tessel_attention_plan plan = nullptr;
  ASSERT_TRUE(succeeds(tessel_attention_plan_create(attention, 4, &plan)));
  std::vector<int32_t> q = {1, 1, 6}, c = {9000, 5, 0};
  ASSERT_TRUE(succeeds(
      tessel_attention_plan_build(plan, q.data(), c.data(), 3, 150)));
  tessel_attention_plan_info info;
  tessel_attention_plan_get_info(plan, &info);
  Buffer workspace(info.workspace_bytes);
  // q/k/v/out hold the prefill's 6 tokens only; the decodes' absorbed
  // queries and latent outputs have their own buffers.
  FakeBatch batch(6, 3, 150);
  Buffer qLatent(2 * 32 * 576 * 2), outLatent(2 * 32 * 512 * 2),
      latent(40 * 64 * 576 * 2), latentTable(3 * 150 * 4);
  batch.b.q_latent = tensor(qLatent.data(), BF16, {2, 32, 576});
  batch.b.out_latent = tensor(outLatent.data(), BF16, {2, 32, 512});
  batch.b.latent_cache = tensor(latent.data(), BF16, {40, 64, 576});
  batch.b.latent_block_table = tensor(latentTable.data(), I32, {3, 150});
  // Without the latent buffers the run says which one is missing.
  tessel_attention_buffers noLatent = batch.b;
  noLatent.q_latent.data = nullptr;
  EXPECT_TRUE(failsWith(tessel_attention_run(plan, &noLatent, workspace.data(),
                                             info.workspace_bytes, nullptr),
                        TESSEL_INVALID_ARGUMENT,
                        {"buffers.q_latent is missing"}));
  ASSERT_TRUE(succeeds(tessel_attention_run(plan, &batch.b, workspace.data(),
                                            info.workspace_bytes, nullptr)));
  EXPECT_EQ(state->launches, 3); // decode partials, their merge, prefill
  tessel_attention_plan_release(plan);
  tessel_attention_release(attention);

  // The MLA decode kernel is required: a bundle without it is refused.
  config.latent_dim = 256;
  tessel_attention missing = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_attention_create(bundle.get(), &config, &missing),
      TESSEL_UNSUPPORTED,
      {"the triple routing needs a kernel for the decode split-KV partials: "
       "tessel.mla_decode with num_heads=32 head_dim=320 latent_dim=256",
       "the bundle has these tessel.mla_decode kernels: mla_split ("}));
}

} // namespace
