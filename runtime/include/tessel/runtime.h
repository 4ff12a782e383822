/*===- tessel/runtime.h - The Tessel runtime C API -----------------*- C -*-===*
 *
 * A thin C ABI that engines embed: open a device, load a kernel bundle made by
 * tessel-aot, look kernels up, launch them on caller-owned buffers.
 *
 * Conventions:
 *  - Every fallible call returns a tessel_status: NULL means success; anything
 *    else carries a code and a message and must be freed with
 *    tessel_status_free(). The runtime never aborts on bad input.
 *  - Handles are opaque. A bundle keeps its device alive until both are
 *    released; kernels are owned by their bundle.
 *  - Buffers are owned by the caller. On the host and emulated backends a
 *    "device pointer" is an ordinary pointer; on CUDA/HIP, a device allocation
 *    the caller made (cuMemAlloc, hipMalloc, a framework's allocator).
 *  - Loading and lookups are thread-safe; launches of one kernel from several
 *    threads are safe when they use distinct buffers.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/bundle_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===-- Status -------------------------------------------------------------===*/

typedef enum tessel_status_code {
  TESSEL_OK = 0,
  TESSEL_INVALID_ARGUMENT = 1, /* a caller-provided value breaks a constraint */
  TESSEL_NOT_FOUND = 2,        /* no such kernel, file or backend */
  TESSEL_CORRUPT_BUNDLE = 3,   /* the bundle failed validation */
  TESSEL_UNSUPPORTED = 4,      /* valid, but not supported here (target, version) */
  TESSEL_UNAVAILABLE = 5,      /* a driver or device is missing */
  TESSEL_INTERNAL = 6,         /* a bug in Tessel: please report it */
} tessel_status_code;

typedef struct tessel_status_t *tessel_status;

tessel_status_code tessel_status_get_code(tessel_status status);
/* The message lives as long as the status; "" for NULL (success). */
const char *tessel_status_message(tessel_status status);
void tessel_status_free(tessel_status status);
const char *tessel_status_code_name(tessel_status_code code);

/*===-- Devices ------------------------------------------------------------===*/

typedef struct tessel_device_t *tessel_device;

/* backend: "host" (always available), "cuda" or "hip"; or an emulated GPU,
 * "emu-gfx942", "emu-gfx950" or "emu-sm80" (always available): that chip's
 * GPU kernels, compiled for the host, run on the CPU lane by lane, with the
 * chip's bundle target ("emu-gfx942", ...), launch limits and compute-unit
 * count; memory is host memory. ordinal: device index (for CUDA, in the
 * driver's order, which honours CUDA_VISIBLE_DEVICES; 0 for host and
 * emulated devices). */
tessel_status tessel_device_open(const char *backend, int ordinal,
                                 tessel_device *out_device);
void tessel_device_release(tessel_device device);
/* The bundle target this device prefers, e.g. "host", "sm90a", "gfx942". */
const char *tessel_device_target(tessel_device device);
/* The bundle targets this device runs, most preferred first (index 0 is
 * tessel_device_target); NULL past the last. An sm_90 GPU (H100, H200) runs
 * "sm90a", then "sm90", then "sm80" (whose binaries are PTX, compiled by the
 * driver when loaded); other 9.x GPUs run "sm90", then "sm80". */
const char *tessel_device_target_at(tessel_device device, size_t index);

/*===-- Bundles ------------------------------------------------------------===*/

typedef struct tessel_bundle_t *tessel_bundle;
typedef struct tessel_kernel_t *tessel_kernel;

/* Validates the whole bundle (magic, version, checksum, bounds of every
 * offset and size, known targets, unique names) and loads, for each kernel
 * name, the kernel built for the device's most preferred target that the
 * bundle has. Fails if the bundle has no kernel for any of its targets. */
tessel_status tessel_bundle_load_file(tessel_device device, const char *path,
                                      tessel_bundle *out_bundle);
tessel_status tessel_bundle_load_memory(tessel_device device, const void *data,
                                        size_t size, tessel_bundle *out_bundle);
void tessel_bundle_release(tessel_bundle bundle);

/* The loaded kernels, one per name, in bundle order. */
size_t tessel_bundle_kernel_count(tessel_bundle bundle);
tessel_kernel tessel_bundle_kernel_at(tessel_bundle bundle, size_t index);

tessel_status tessel_bundle_find_kernel(tessel_bundle bundle, const char *name,
                                        tessel_kernel *out_kernel);

typedef struct tessel_param {
  const char *key;
  int64_t value;
} tessel_param;

/* The first kernel of this op (e.g. "tessel.prefill_attention"; dtype
 * TESSEL_DTYPE_INVALID for any) whose shape parameters include all of
 * `params`. */
tessel_status tessel_bundle_find_kernel_by_params(tessel_bundle bundle,
                                                  const char *op,
                                                  tessel_dtype dtype,
                                                  const tessel_param *params,
                                                  size_t num_params,
                                                  tessel_kernel *out_kernel);

/*===-- Kernel introspection -----------------------------------------------===*/

const char *tessel_kernel_name(tessel_kernel kernel);
const char *tessel_kernel_op(tessel_kernel kernel);
/* The bundle target of the binary that was loaded, e.g. "sm80". */
const char *tessel_kernel_target(tessel_kernel kernel);
tessel_dtype tessel_kernel_dtype(tessel_kernel kernel);
size_t tessel_kernel_num_args(tessel_kernel kernel);
const char *tessel_kernel_arg_name(tessel_kernel kernel, size_t index);
/* 1 if the kernel writes argument `index`, 0 if it only reads it (or there is
 * no such argument). */
int tessel_kernel_arg_is_output(tessel_kernel kernel, size_t index);
/* 1 if GPU launches need argument `index` aligned to its element size only
 * (the kernel reads it one element at a time, e.g. a block table), 0 if to
 * 16 bytes (or there is no such argument). */
int tessel_kernel_arg_is_elementwise(tessel_kernel kernel, size_t index);
/* 1 if argument `index` is a scalar passed by value (rank 0, e.g. the
 * attention kernels' softmax scale "scale", f32), 0 if a buffer (or there
 * is no such argument). */
int tessel_kernel_arg_is_scalar(tessel_kernel kernel, size_t index);
/* Returns 0 and sets *value if the kernel has this shape parameter. */
int tessel_kernel_param(tessel_kernel kernel, const char *key, int64_t *value);
/* The shape parameters in bundle order: the key of parameter `index`, with
 * its value in *value (if value is not NULL); NULL past the last. */
size_t tessel_kernel_num_params(tessel_kernel kernel);
const char *tessel_kernel_param_at(tessel_kernel kernel, size_t index,
                                   int64_t *value);

/*===-- Launch -------------------------------------------------------------===*/

/* A dense row-major buffer; or, with rank 0, a scalar argument, whose data
 * points to its value in host memory (read during the launch call, like
 * CUDA's kernelParams). */
typedef struct tessel_tensor {
  void *data;
  tessel_dtype dtype;
  int32_t rank;
  int64_t shape[TESSEL_BUNDLE_MAX_RANK];
} tessel_tensor;

/* Checks every tensor against the kernel's signature (count, dtype, rank,
 * static dims, the consistency of symbolic dims, alignment, null data) and
 * launches. `stream` is a CUstream/hipStream_t of the kernel's device (NULL:
 * the default stream); GPU launches are asynchronous, and the grid, block and
 * shared memory are checked against the device's limits first. The host and
 * emulated backends take NULL only, and their launches are synchronous. */
tessel_status tessel_kernel_launch(tessel_kernel kernel,
                                   const tessel_tensor *args, size_t num_args,
                                   void *stream);

/*===-- Attention dispatcher -----------------------------------------------===*
 *
 * An engine hands the dispatcher one mixed batch per step; the dispatcher
 * sends each request to the kernel made for its phase:
 *
 *   decode   query length <= decode_threshold (default 1), any context
 *   extend   more query tokens, and a cached context (> 0 tokens)
 *   prefill  more query tokens, no cached context
 *
 * The steps of one engine iteration:
 *
 *   1. tessel_attention_order(): the permutation that puts the batch in
 *      [decode : extend : prefill] order (stable within a phase). The engine
 *      applies it to its own per-request state (tessel_permute_rows helps),
 *      so that each phase is a contiguous range of requests, of query
 *      tokens and of block-table rows, and no kernel needs a gather.
 *   2. tessel_attention_plan_build(): from the reordered host metadata,
 *      the phase counts, the split-KV factor of the decodes, the schedule of
 *      context chunks of the extends and the workspace size. O(batch), no
 *      allocation (the plan's capacity is fixed when it is created).
 *   3. tessel_attention_run(): launches the plan on a stream, with no host
 *      synchronisation; the caller owns every buffer, the workspace too.
 *
 * Token and cache conventions (docs/dispatcher.md):
 *  - q, k, v, out hold the step's new tokens, request after request in plan
 *    order; k and v are the new tokens' keys and values.
 *  - context_lens are the tokens cached before this step; seq_lens (on the
 *    device) are context + query tokens, as vLLM counts them.
 *  - Decode kernels read the new token's key and value from the cache, so
 *    they must be there before the run: pass slot_mapping and the run writes
 *    every new token into the cache first (reshape-and-cache), or write them
 *    yourself (tessel_attention_write_cache) and pass slot_mapping.data NULL.
 *  - block_table [B, MB] int32: row b lists request b's cache blocks in
 *    token order; entries past the request's last block are never read.
 *
 * A dispatcher is immutable once created: plans of one dispatcher may be
 * built and run from several threads at once. A plan is used by one thread
 * at a time, and must outlive runs that are still reading its metadata
 * (the copy to the workspace is asynchronous only on the GPU side: the plan
 * may be rebuilt as soon as tessel_attention_run returns).
 *
 *===----------------------------------------------------------------------===*/

typedef enum tessel_attention_kind {
  TESSEL_ATTENTION_MHA = 0, /* multi-head / grouped-query attention */
  TESSEL_ATTENTION_MLA = 1, /* multi-head latent attention (DeepSeek) */
} tessel_attention_kind;

typedef enum tessel_routing {
  /* TESSEL_ATTENTION from the environment if set, else TRIPLE (MHA) or
   * the MLA path (MLA). */
  TESSEL_ROUTING_AUTO = 0,
  /* Each phase its own kernel: decode (split-KV + merge), extend (new
   * tokens causal + context chunks + LSE merges), prefill (varlen causal). */
  TESSEL_ROUTING_TRIPLE = 1,
  /* One kernel for the whole batch, whatever the phase: causal paged
   * attention over each request's sequence in the cache (its new tokens
   * written first), split into windows merged by LSE for small batches. */
  TESSEL_ROUTING_UNIFIED = 2,
  /* Decode kernel for decodes, the extend composition for the rest. */
  TESSEL_ROUTING_TWO_PATH = 3,
} tessel_routing;

typedef enum tessel_phase {
  TESSEL_PHASE_DECODE = 0,
  TESSEL_PHASE_EXTEND = 1,
  TESSEL_PHASE_PREFILL = 2,
} tessel_phase;

typedef struct tessel_attention_config {
  /* sizeof(tessel_attention_config), set by tessel_attention_config_init:
   * fields added later keep their defaults for callers built before. */
  uint32_t struct_size;
  tessel_attention_kind kind;
  tessel_dtype dtype;     /* of q, k, v, caches and out: bf16 or f16 */
  int32_t num_q_heads;
  int32_t num_kv_heads;   /* MLA: the non-absorbed heads (= num_q_heads) */
  int32_t head_dim;       /* q and k (MLA non-absorbed: 192) */
  int32_t v_head_dim;     /* 0: head_dim (MLA non-absorbed: 128) */
  int32_t block_size;     /* tokens per KV-cache block */
  int32_t kv_layout;      /* 0: NHD, 1: CDNA pre-shuffled */
  /* MLA absorbed decode: latent cache [blocks, latent_block_size,
   * latent_dim + rope_dim], its own block table. */
  int32_t latent_dim;
  int32_t rope_dim;
  int32_t latent_block_size;
  tessel_routing routing;
  int32_t decode_threshold;      /* default 1 */
  int64_t context_chunk_tokens;  /* extend context per chunk, all extends
                                    together; default 32768 */
  int32_t max_kv_splits;         /* split-KV factor cap; default 32 */
  int32_t compute_units;         /* SMs/CUs to fill; 0: the device's */
  /* The softmax scale of every phase (the kernels take it at launch);
   * 0: 1/sqrt(head_dim), which for MLA (head_dim 192) is DeepSeek's scale
   * before any YaRN factor. */
  float softmax_scale;
} tessel_attention_config;

/* Defaults: MHA, bf16, routing AUTO, decode_threshold 1, chunks of 32768
 * tokens, at most 32 KV splits, softmax scale 1/sqrt(head_dim); head
 * geometry 0 (the caller must set it). */
void tessel_attention_config_init(tessel_attention_config *config);

typedef struct tessel_attention_t *tessel_attention;
typedef struct tessel_attention_plan_t *tessel_attention_plan;

/* Resolves the routing mode and finds in `bundle` every kernel it needs for
 * this configuration (by op and shape parameters, any kernel names). A
 * configuration the bundle cannot serve is refused here with
 * TESSEL_UNSUPPORTED and a message that lists what the bundle supports.
 * The bundle must outlive the dispatcher and its plans. */
tessel_status tessel_attention_create(tessel_bundle bundle,
                                      const tessel_attention_config *config,
                                      tessel_attention *out_attention);
void tessel_attention_release(tessel_attention attention);
/* The routing mode in use (never AUTO). */
tessel_routing tessel_attention_routing(tessel_attention attention);
/* "auto", "triple", "unified", "two_path"; "" for an unknown value. */
const char *tessel_routing_name(tessel_routing routing);

/* The phase of one request (see above). */
tessel_phase tessel_attention_classify(tessel_attention attention,
                                       int32_t query_len, int32_t context_len);

/* order[i] = the index, in the caller's batch, of the request that goes to
 * position i; decodes first, then extends, then prefills, each in the
 * caller's order. Fails on a negative length or a zero query length. */
tessel_status tessel_attention_order(tessel_attention attention,
                                     const int32_t *query_lens,
                                     const int32_t *context_lens,
                                     size_t num_requests, int32_t *order);

/* dst row i = src row order[i], rows of row_bytes bytes (host memory): to
 * reorder per-request arrays and block tables. src and dst must not
 * overlap. */
void tessel_permute_rows(const int32_t *order, size_t num_rows,
                         const void *src, size_t row_bytes, void *dst);

/* A plan for batches of up to max_requests requests. */
tessel_status tessel_attention_plan_create(tessel_attention attention,
                                           size_t max_requests,
                                           tessel_attention_plan *out_plan);
void tessel_attention_plan_release(tessel_attention_plan plan);

/* Plans one batch, already in [decode : extend : prefill] order (refused
 * otherwise, naming the first request out of order). max_blocks is the
 * width MB of the block table the run will get. */
tessel_status tessel_attention_plan_build(tessel_attention_plan plan,
                                          const int32_t *query_lens,
                                          const int32_t *context_lens,
                                          size_t num_requests,
                                          int32_t max_blocks);

typedef struct tessel_attention_plan_info {
  size_t num_decodes, num_extends, num_prefills;
  int64_t decode_tokens, extend_tokens, prefill_tokens;
  /* Split-KV factor of the decode kernel, or of the unified kernel under
   * the unified routing (1: unsplit). */
  int32_t kv_splits;
  /* Context chunks of the extends (0: none), run one after the other; or,
   * when context_chunks_parallel is 1, all in one split-form launch and
   * merged at once: the plan does that when the extends' new tokens are
   * too few to fill the device alone (a short turn on a long context). */
  int32_t context_chunks;
  int32_t context_chunks_parallel;
  /* Bytes of workspace tessel_attention_run needs (16-byte aligned). */
  size_t workspace_bytes;
} tessel_attention_plan_info;

void tessel_attention_plan_get_info(tessel_attention_plan plan,
                                    tessel_attention_plan_info *info);
/* Chunk `index` of the context schedule: every extend attends to its
 * cached tokens [start, start + width) (clipped to its context) in that
 * chunk. Run one after the other, a chunk's tokens summed over the extends
 * are at most context_chunk_tokens; run in parallel, each extend's are. */
tessel_status tessel_attention_plan_chunk(tessel_attention_plan plan,
                                          size_t index, int64_t *start,
                                          int64_t *width);

/* The device buffers of a run (dense, row-major; see the conventions). A
 * tensor with NULL data is absent. T = the plan's total query tokens,
 * B = its requests. */
typedef struct tessel_attention_buffers {
  tessel_tensor q;            /* [T, Hq, head_dim] */
  tessel_tensor k;            /* [T, Hkv, head_dim] */
  tessel_tensor v;            /* [T, Hkv, v_head_dim] */
  tessel_tensor k_cache;      /* in kv_layout */
  tessel_tensor v_cache;
  tessel_tensor block_table;  /* [B, max_blocks] int32 */
  tessel_tensor seq_lens;     /* [B] int32: context + query tokens */
  tessel_tensor slot_mapping; /* [T] int32 cache slots of the new tokens */
  tessel_tensor out;          /* [T, Hq, v_head_dim] */
  /* MLA absorbed decode, for the plan's decode requests D (one token each):
   * q_latent [D, Hq, latent+rope], latent_cache, latent_block_table
   * [B, MBL] (rows in plan order; only decode rows are read),
   * out_latent [D, Hq, latent]. Decodes have no entries in q/k/v/out. */
  tessel_tensor q_latent;
  tessel_tensor latent_cache;
  tessel_tensor latent_block_table;
  tessel_tensor out_latent;
} tessel_attention_buffers;

/* Launches the plan on `stream` (see tessel_kernel_launch): the cache write
 * (if slot_mapping is given), decodes, extends, prefills. `workspace` is a
 * device buffer of at least the plan's workspace_bytes, 16-byte aligned, not
 * used by anything else until the launches are done. A decode-only plan of
 * single-token decodes reads no host data and can be captured in a CUDA
 * graph; replays then follow the device seq_lens and block table. */
tessel_status tessel_attention_run(tessel_attention_plan plan,
                                   const tessel_attention_buffers *buffers,
                                   void *workspace, size_t workspace_bytes,
                                   void *stream);

/* Writes new tokens' keys and values into the cache: token t goes to slot
 * slot_mapping[t] (block slot / block_size, offset slot % block_size); a
 * negative slot is skipped (padding). */
tessel_status tessel_attention_write_cache(tessel_attention attention,
                                           const tessel_tensor *k,
                                           const tessel_tensor *v,
                                           const tessel_tensor *k_cache,
                                           const tessel_tensor *v_cache,
                                           const tessel_tensor *slot_mapping,
                                           void *stream);

/*===-- MoE routing glue ---------------------------------------------------===*
 *
 * The device-side steps around an MoE layer's grouped matmuls, for engines
 * and training code in C: route (per-expert counts, their cumulative ends,
 * a stable expert-sorted order of the T * topk (token, slot) rows and its
 * inverse), permute (gather token rows into that order) and unpermute (the
 * weighted, deterministic combine back to [T, hidden]). Each is one or two
 * kernels of the bundle, found by shape parameters; no host
 * synchronisation, so the steps can be captured in a CUDA graph. Ids
 * outside [0, num_experts) are dropped slots: not counted, not placed. The
 * semantics are those of tessel.expert_histogram / expert_sort /
 * moe_permute / moe_unpermute (docs/dialect.md).
 *
 *===----------------------------------------------------------------------===*/

typedef struct tessel_moe_config {
  uint32_t struct_size;      /* sizeof(tessel_moe_config), set by _init */
  int32_t num_experts;
  int32_t topk;
  /* Row width of permute and unpermute; 0: routing only. */
  int32_t hidden;
  tessel_dtype dtype;        /* of the rows (default bf16) */
  tessel_dtype weight_dtype; /* of the routing weights (default f32) */
} tessel_moe_config;

void tessel_moe_config_init(tessel_moe_config *config);

typedef struct tessel_moe_t *tessel_moe;

/* Finds the glue kernels of this configuration in `bundle` (which must
 * outlive the handle); TESSEL_UNSUPPORTED, listing what the bundle has, if
 * one is missing. */
tessel_status tessel_moe_create(tessel_bundle bundle,
                                const tessel_moe_config *config,
                                tessel_moe *out_moe);
void tessel_moe_release(tessel_moe moe);

/* topk_ids [T, topk] i32 -> counts [E], group_offsets [E] (cumulative
 * ends, the grouped matmuls' group_offsets), sorted_rows [T * topk] and
 * row_positions [T, topk], all i32. */
tessel_status tessel_moe_route(tessel_moe moe, const tessel_tensor *topk_ids,
                               const tessel_tensor *counts,
                               const tessel_tensor *group_offsets,
                               const tessel_tensor *sorted_rows,
                               const tessel_tensor *row_positions,
                               void *stream);

/* out [R, hidden] row p = x [T, hidden] row sorted_rows[p] / topk (a zero
 * row for -1). */
tessel_status tessel_moe_permute(tessel_moe moe, const tessel_tensor *x,
                                 const tessel_tensor *sorted_rows,
                                 const tessel_tensor *out, void *stream);

/* out [T, hidden] row t = sum over j of weights[t, j] * y row
 * row_positions[t, j], in fp32, j in order. */
tessel_status tessel_moe_unpermute(tessel_moe moe, const tessel_tensor *y,
                                   const tessel_tensor *row_positions,
                                   const tessel_tensor *weights,
                                   const tessel_tensor *out, void *stream);

size_t tessel_dtype_size(tessel_dtype dtype);
const char *tessel_dtype_name(tessel_dtype dtype);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_RUNTIME_H */
