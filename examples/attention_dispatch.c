/*===- examples/attention_dispatch.c - Embedding the attention dispatcher -===*
 *
 * One step of an inference engine, as it drives Tessel's attention
 * dispatcher (docs/dispatcher.md): a mixed batch of decodes, extends and a
 * prefill is put in the dispatcher's order, planned, and run with the new
 * tokens' keys and values written into the paged KV cache on the way. The
 * output is then checked against attention computed here, plainly.
 *
 *   attention_dispatch BUNDLE
 *
 * BUNDLE is examples/attention_dispatch.mlir compiled for the host
 * (tessel-aot attention_dispatch.mlir --targets=host -o BUNDLE): bf16,
 * 4 query heads sharing 2 KV heads, head dim 64, cache blocks of 16 tokens.
 * TESSEL_ATTENTION=triple|unified|two_path picks the routing mode. Exits 0
 * when every output matches, 1 otherwise.
 *
 * On a GPU the calls are the same; the buffers are device allocations and
 * tessel_attention_run takes the engine's stream.
 *
 *===----------------------------------------------------------------------===*/

#include "tessel/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HQ = 4, HKV = 2, D = 64, BS = 16 };

/* The engine's batch, in its own order: what each request brings this step
 * (query tokens) and what it has cached from earlier steps (context). */
enum { NUM_REQUESTS = 6 };
static const int32_t kQueryLens[NUM_REQUESTS] = {37, 1, 9, 1, 20, 1};
static const int32_t kContextLens[NUM_REQUESTS] = {0, 50, 70, 16, 100, 0};

/* Prints a failed status with what was being done; returns 1 on failure. */
static int failed(tessel_status status, const char *what) {
  if (!status)
    return 0;
  fprintf(stderr, "%s: %s: %s\n", what,
          tessel_status_code_name(tessel_status_get_code(status)),
          tessel_status_message(status));
  tessel_status_free(status);
  return 1;
}

/* bf16 is the top half of an IEEE float; round to nearest even. */
static uint16_t to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static float from_bf16(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Fresh data in [-1, 1) from a fixed seed (never zeros: a kernel that
 * skips work must not pass by accident). */
static uint16_t random_bf16(void) {
  static uint32_t state = 2463534242u;
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return to_bf16((float)(state >> 8) / (float)(1u << 23) - 1.0f);
}

static uint16_t *random_bf16s(size_t n) {
  uint16_t *p = malloc(n * sizeof *p);
  for (size_t i = 0; p && i < n; ++i)
    p[i] = random_bf16();
  return p;
}

static tessel_tensor tensor(void *data, tessel_dtype dtype, int32_t rank,
                            int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
  tessel_tensor t = {data, dtype, rank, {d0, d1, d2, d3}};
  return t;
}

/* Key or value `h` of position `pos` of request `r`: cached positions come
 * from the cache through the block table, the step's new ones from the
 * engine's k/v (the reference does not trust the cache write). */
static const uint16_t *kv_at(const uint16_t *cache, const uint16_t *fresh,
                             const int32_t *table_row, int32_t context,
                             int32_t first_token, int32_t pos, int h) {
  if (pos < context)
    return cache +
           (((size_t)table_row[pos / BS] * BS + pos % BS) * HKV + h) * D;
  return fresh + ((size_t)(first_token + pos - context) * HKV + h) * D;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s BUNDLE\n", argv[0]);
    return 2;
  }

  /* 1. The device and the bundle. The bundle keeps the device alive, so
   *    the engine can drop its own reference at once. */
  tessel_device device;
  if (failed(tessel_device_open("host", 0, &device), "open the host device"))
    return 1;
  tessel_bundle bundle;
  tessel_status status = tessel_bundle_load_file(device, argv[1], &bundle);
  tessel_device_release(device);
  if (failed(status, "load the bundle"))
    return 1;

  /* 2. The dispatcher: the model's attention geometry; everything else
   *    keeps its default (routing AUTO follows TESSEL_ATTENTION). The
   *    context budget is cut to 48 tokens here only so that this small
   *    batch's extends are cut into several chunks; engines keep 32768. */
  tessel_attention_config config;
  tessel_attention_config_init(&config);
  config.kind = TESSEL_ATTENTION_MHA;
  config.dtype = TESSEL_DTYPE_BF16;
  config.num_q_heads = HQ;
  config.num_kv_heads = HKV;
  config.head_dim = D;
  config.block_size = BS;
  config.context_chunk_tokens = 48;

  /* A configuration the bundle cannot serve is refused when the dispatcher
   * is created, never at run time, and the message lists what the bundle
   * has: here, a head dim the bundle has no kernels for. */
  tessel_attention att;
  config.head_dim = 96;
  status = tessel_attention_create(bundle, &config, &att);
  if (!status) {
    fprintf(stderr, "head dim 96 was accepted\n");
    return 1;
  }
  if (tessel_status_get_code(status) != TESSEL_UNSUPPORTED) {
    failed(status, "head dim 96 (expected TESSEL_UNSUPPORTED)");
    return 1;
  }
  printf("refused as expected: %s\n", tessel_status_message(status));
  tessel_status_free(status);
  config.head_dim = D;

  /* The dispatcher holds the bundle's kernels: the bundle must outlive it
   * and its plans. */
  if (failed(tessel_attention_create(bundle, &config, &att),
             "create the dispatcher"))
    return 1;
  printf("routing: %s\n", tessel_routing_name(tessel_attention_routing(att)));

  /* 3. The engine's cache blocks, in its own order: each request owns
   *    enough blocks for its context and this step's tokens. Block ids are
   *    handed out from the top down, as a busy allocator would: the
   *    block table, not the order of the blocks, says where a token is.
   *    Entries past a request's last block are never read (-1 here). */
  int32_t max_blocks = 0, num_blocks = 0, max_keys = 0;
  for (int r = 0; r < NUM_REQUESTS; ++r) {
    int32_t keys = kContextLens[r] + kQueryLens[r];
    int32_t blocks = (keys + BS - 1) / BS;
    num_blocks += blocks;
    if (blocks > max_blocks)
      max_blocks = blocks;
    if (keys > max_keys)
      max_keys = keys;
  }
  int32_t *engine_table = malloc(sizeof(int32_t) * NUM_REQUESTS * max_blocks);
  int32_t next_block = num_blocks;
  for (int r = 0; r < NUM_REQUESTS; ++r)
    for (int32_t b = 0; b < max_blocks; ++b)
      engine_table[r * max_blocks + b] =
          b * BS < kContextLens[r] + kQueryLens[r] ? --next_block : -1;

  /* 4. The order: decodes, then extends, then prefills, so that each
   *    phase is one contiguous range of requests, tokens and block-table
   *    rows. The engine applies the permutation to everything it keeps per
   *    request; tessel_permute_rows does it for flat arrays and tables. */
  int32_t order[NUM_REQUESTS], query_lens[NUM_REQUESTS],
      context_lens[NUM_REQUESTS];
  if (failed(tessel_attention_order(att, kQueryLens, kContextLens,
                                    NUM_REQUESTS, order),
             "order the batch"))
    return 1;
  tessel_permute_rows(order, NUM_REQUESTS, kQueryLens, sizeof(int32_t),
                      query_lens);
  tessel_permute_rows(order, NUM_REQUESTS, kContextLens, sizeof(int32_t),
                      context_lens);
  int32_t *block_table = malloc(sizeof(int32_t) * NUM_REQUESTS * max_blocks);
  tessel_permute_rows(order, NUM_REQUESTS, engine_table,
                      sizeof(int32_t) * max_blocks, block_table);

  /* 5. The plan: phase counts, split-KV factor, context chunks, workspace
   *    size, from host metadata only. A plan is made once for the largest
   *    batch and rebuilt every step without allocating. */
  tessel_attention_plan plan;
  if (failed(tessel_attention_plan_create(att, NUM_REQUESTS, &plan),
             "create the plan") ||
      failed(tessel_attention_plan_build(plan, query_lens, context_lens,
                                         NUM_REQUESTS, max_blocks),
             "build the plan"))
    return 1;
  tessel_attention_plan_info info;
  tessel_attention_plan_get_info(plan, &info);
  printf("plan: %zu decodes (%lld tokens), %zu extends (%lld), "
         "%zu prefills (%lld); kv_splits %d; %d context chunks; "
         "workspace %zu bytes\n",
         info.num_decodes, (long long)info.decode_tokens, info.num_extends,
         (long long)info.extend_tokens, info.num_prefills,
         (long long)info.prefill_tokens, info.kv_splits, info.context_chunks,
         info.workspace_bytes);
  for (int c = 0; c < info.context_chunks; ++c) {
    int64_t start, width;
    if (failed(tessel_attention_plan_chunk(plan, (size_t)c, &start, &width),
               "read the chunk schedule"))
      return 1;
    printf("  chunk %d: context tokens [%lld, %lld) of each extend\n", c,
           (long long)start, (long long)(start + width));
  }

  /* 6. The step's buffers, in plan order. Token i of the batch belongs to
   *    the request whose range [first[r], first[r] + query_lens[r]) holds
   *    it. seq_lens count context + new tokens, as vLLM does. Each new
   *    token gets the cache slot of its position, so that the run writes
   *    it there before any kernel reads the cache (decodes read their own
   *    new key from it). */
  int32_t first[NUM_REQUESTS + 1] = {0}, seq_lens[NUM_REQUESTS];
  for (int r = 0; r < NUM_REQUESTS; ++r) {
    first[r + 1] = first[r] + query_lens[r];
    seq_lens[r] = context_lens[r] + query_lens[r];
  }
  int32_t tokens = first[NUM_REQUESTS];
  int32_t *slot_mapping = malloc(sizeof(int32_t) * tokens);
  for (int r = 0; r < NUM_REQUESTS; ++r)
    for (int32_t j = 0; j < query_lens[r]; ++j) {
      int32_t pos = context_lens[r] + j;
      slot_mapping[first[r] + j] =
          block_table[r * max_blocks + pos / BS] * BS + pos % BS;
    }
  /* Random cache contents stand for what earlier steps wrote. */
  size_t cache_elems = (size_t)num_blocks * BS * HKV * D;
  uint16_t *q = random_bf16s((size_t)tokens * HQ * D);
  uint16_t *k = random_bf16s((size_t)tokens * HKV * D);
  uint16_t *v = random_bf16s((size_t)tokens * HKV * D);
  uint16_t *k_cache = random_bf16s(cache_elems);
  uint16_t *v_cache = random_bf16s(cache_elems);
  uint16_t *out = calloc((size_t)tokens * HQ * D, sizeof *out);

  tessel_attention_buffers buffers;
  memset(&buffers, 0, sizeof buffers); /* NULL data: absent (no MLA) */
  buffers.q = tensor(q, TESSEL_DTYPE_BF16, 3, tokens, HQ, D, 0);
  buffers.k = tensor(k, TESSEL_DTYPE_BF16, 3, tokens, HKV, D, 0);
  buffers.v = tensor(v, TESSEL_DTYPE_BF16, 3, tokens, HKV, D, 0);
  buffers.k_cache = tensor(k_cache, TESSEL_DTYPE_BF16, 4, num_blocks, BS,
                           HKV, D);
  buffers.v_cache = tensor(v_cache, TESSEL_DTYPE_BF16, 4, num_blocks, BS,
                           HKV, D);
  buffers.block_table = tensor(block_table, TESSEL_DTYPE_I32, 2,
                               NUM_REQUESTS, max_blocks, 0, 0);
  buffers.seq_lens = tensor(seq_lens, TESSEL_DTYPE_I32, 1, NUM_REQUESTS, 0,
                            0, 0);
  buffers.slot_mapping = tensor(slot_mapping, TESSEL_DTYPE_I32, 1, tokens,
                                0, 0, 0);
  buffers.out = tensor(out, TESSEL_DTYPE_BF16, 3, tokens, HQ, D, 0);

  /* 7. The run: cache write, decodes, extends (chunks and merges),
   *    prefills. The workspace (partials, LSEs, the plan's metadata on the
   *    device) is the caller's, 16-byte aligned. On the host the launches
   *    are synchronous; on a GPU nothing here waits for them. */
  size_t workspace_bytes = (info.workspace_bytes + 63) / 64 * 64;
  void *workspace = aligned_alloc(64, workspace_bytes ? workspace_bytes : 64);
  if (failed(tessel_attention_run(plan, &buffers, workspace,
                                  info.workspace_bytes, NULL),
             "run the plan"))
    return 1;

  /* 8. The check: every new token's key and value is in its slot, and each
   *    output row is softmax(q K^T / sqrt(D)) V over the request's context
   *    and its new tokens up to itself (causal), in double precision. */
  int ok = 1;
  for (int32_t t = 0; t < tokens; ++t)
    if (memcmp(k_cache + (size_t)slot_mapping[t] * HKV * D,
               k + (size_t)t * HKV * D, sizeof(uint16_t) * HKV * D) ||
        memcmp(v_cache + (size_t)slot_mapping[t] * HKV * D,
               v + (size_t)t * HKV * D, sizeof(uint16_t) * HKV * D)) {
      printf("token %d: not written to cache slot %d\n", t, slot_mapping[t]);
      ok = 0;
    }
  static const char *const kPhases[] = {"decode", "extend", "prefill"};
  double scale = 1.0 / sqrt((double)D);
  double *scores = malloc(sizeof(double) * max_keys);
  for (int r = 0; r < NUM_REQUESTS; ++r) {
    const int32_t *row = block_table + r * max_blocks;
    double worst = 0, largest = 0;
    for (int32_t j = 0; j < query_lens[r]; ++j) {
      int32_t keys = context_lens[r] + j + 1;
      for (int h = 0; h < HQ; ++h) {
        const uint16_t *qh = q + ((size_t)(first[r] + j) * HQ + h) * D;
        int kvh = h / (HQ / HKV); /* GQA: query heads share a KV head */
        double max_score = -INFINITY, sum = 0;
        for (int32_t p = 0; p < keys; ++p) {
          const uint16_t *kp =
              kv_at(k_cache, k, row, context_lens[r], first[r], p, kvh);
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += (double)from_bf16(qh[d]) * from_bf16(kp[d]);
          scores[p] = s * scale;
          max_score = fmax(max_score, scores[p]);
        }
        for (int32_t p = 0; p < keys; ++p)
          sum += scores[p] = exp(scores[p] - max_score);
        for (int d = 0; d < D; ++d) {
          double ref = 0;
          for (int32_t p = 0; p < keys; ++p)
            ref += scores[p] / sum *
                   from_bf16(kv_at(v_cache, v, row, context_lens[r],
                                   first[r], p, kvh)[d]);
          double got =
              from_bf16(out[((size_t)(first[r] + j) * HQ + h) * D + d]);
          worst = isnan(got) ? INFINITY : fmax(worst, fabs(got - ref));
          largest = fmax(largest, fabs(ref));
        }
      }
    }
    /* bf16 output: within 1e-2 of the request's largest value. */
    int good = worst <= 1e-2 * largest;
    ok &= good;
    printf("%-4s request %d (engine's #%d) %-7s query %3d context %3d: "
           "max error %.2e of %.2e\n",
           good ? "ok" : "FAIL", r, order[r],
           kPhases[tessel_attention_classify(att, query_lens[r],
                                             context_lens[r])],
           query_lens[r], context_lens[r], worst, largest);
  }

  free(scores);
  free(workspace);
  free(out);
  free(v_cache);
  free(k_cache);
  free(v);
  free(k);
  free(q);
  free(slot_mapping);
  free(block_table);
  free(engine_table);
  tessel_attention_plan_release(plan);
  tessel_attention_release(att);
  tessel_bundle_release(bundle);
  printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
