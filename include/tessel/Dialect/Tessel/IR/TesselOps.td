//===- TesselOps.td - Tessel operations --------------------*- tablegen -*-===//
//
// Every op works on memrefs in destination-passing style. Shapes below use
// T (tokens), B (requests), Hq/Hkv (query/KV heads), D (head dim), NB (cache
// blocks), BS (block size), MB (max blocks per request), G (groups), P
// (partials). Every verifier message has a test in
// test/Dialect/Tessel/invalid.mlir.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_TD
#define TESSEL_OPS_TD

include "tessel/Dialect/Tessel/IR/TesselBase.td"
include "tessel/Dialect/Tessel/IR/TesselAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

class Tessel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tessel_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

// Reads and writes its memref operands; the kernel ops have no results.
defvar Tessel_Buffer = Arg<AnyMemRef, "", [MemRead]>;
defvar Tessel_OutBuffer = Arg<AnyMemRef, "", [MemWrite]>;
defvar Tessel_OptOutBuffer = Arg<Optional<AnyMemRef>, "", [MemWrite]>;

//===----------------------------------------------------------------------===//
// Attention (MHA / GQA)
//===----------------------------------------------------------------------===//

def Tessel_PrefillAttentionOp : Tessel_Op<"prefill_attention"> {
  let summary = "varlen attention of new prompts over themselves";
  let description = [{
    Attention of a ragged batch of new prompts, like
    `flash_attn_varlen_func`. Request `b` owns tokens
    `[cu_seqlens[b], cu_seqlens[b+1])` of `q`, `k` and `v`. Query head `h`
    reads KV head `h / (Hq / Hkv)` (GQA). With `causal`, token `i` of a request
    attends to tokens `0..i` of the same request.

    `out[t, h] = softmax(scale * q[t,h] . K^T) V`; the optional `lse[h, t]`
    is the natural-log log-sum-exp of the scaled scores (fp32), `-inf` for a
    query that sees no key (then `out` is zero).

    `scale` is an f32 value, not an attribute: in a kernel it is an argument
    given at launch, so one kernel serves every model's scale (1/sqrt(Dqk),
    MLA's 1/sqrt(192) times a YaRN factor, Gemma's query pre-scaling, ...).
    The other attention ops take it the same way.

    `q`/`k` head dim and `v`/`out` head dim may differ (MLA non-absorbed
    prefill: 192 and 128). `out` may be fp32 when the inputs are 16-bit.
    Tokens outside every request (padding past `cu_seqlens[B]`) are not part
    of the result: their rows of `out` and `lse` are unspecified.

    Shapes: q `[T, Hq, Dqk]`, k `[T, Hkv, Dqk]`, v `[T, Hkv, Dv]`,
    cu_seqlens `[B + 1]` i32, out `[T, Hq, Dv]`, lse `[Hq, T]` f32.

    Example:

    ```mlir
    tessel.prefill_attention q(%q : memref<?x32x128xbf16>)
        k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
        cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>)
        scale(%scale) {causal}
    ```
  }];
  let arguments = (ins Tessel_Buffer:$q, Tessel_Buffer:$k, Tessel_Buffer:$v,
                   Tessel_Buffer:$cu_seqlens, Tessel_OutBuffer:$out,
                   Tessel_OptOutBuffer:$lse, F32:$scale, UnitAttr:$causal);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)` `k` `(` $k `:` type($k) `)`
    `v` `(` $v `:` type($v) `)`
    `cu_seqlens` `(` $cu_seqlens `:` type($cu_seqlens) `)`
    `out` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    `scale` `(` $scale `)` attr-dict
  }];
}

def Tessel_DecodeAttentionOp : Tessel_Op<"decode_attention"> {
  let summary = "one query token per request against a paged KV cache";
  let description = [{
    Decode: request `b` has one query token `q[b]` and `seq_lens[b]` tokens in
    the paged cache. Token `j` of request `b` lives in block
    `block_table[b, j / BS]` at offset `j % BS`. The query attends to all of
    them (the query token's own K/V are already in the cache).

    `tessel-decompose-phases` splits long contexts into split-KV partials
    (`tessel.paged_attention` over windows) merged by `tessel.lse_merge_n`.

    Shapes: q `[B, Hq, Dqk]`; caches in `layout` (see `KVLayout`);
    block_table `[B, MB]` i32; seq_lens `[B]` i32; out `[B, Hq, Dv]`;
    lse `[Hq, B]` f32.

    Example:

    ```mlir
    tessel.decode_attention q(%q : memref<?x32x128xbf16>)
        k_cache(%kc : memref<?x16x8x128xbf16>)
        v_cache(%vc : memref<?x16x8x128xbf16>)
        block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>)
        out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$q, Tessel_Buffer:$k_cache,
                   Tessel_Buffer:$v_cache, Tessel_Buffer:$block_table,
                   Tessel_Buffer:$seq_lens, Tessel_OutBuffer:$out,
                   Tessel_OptOutBuffer:$lse, F32:$scale,
                   Tessel_KVLayoutAttr:$layout);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `k_cache` `(` $k_cache `:` type($k_cache) `)`
    `v_cache` `(` $v_cache `:` type($v_cache) `)`
    `block_table` `(` $block_table `:` type($block_table) `)`
    `seq_lens` `(` $seq_lens `:` type($seq_lens) `)`
    `out` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)? `layout` `(` $layout `)`
    `scale` `(` $scale `)` attr-dict
  }];
}

def Tessel_ExtendAttentionOp : Tessel_Op<"extend_attention"> {
  let summary = "new tokens of requests with a cached context";
  let description = [{
    Extend: request `b` has new tokens `[cu_seqlens[b], cu_seqlens[b+1])`
    (their q, k, v given directly) and `context_lens[b]` cached tokens in the
    paged cache. New token `i` attends to all cached tokens and to new tokens
    `0..i` of its request.

    `tessel-decompose-phases` rewrites it as attention over the cached
    context in chunks of a token budget (`tessel.paged_attention` with a
    window), causal attention of the new tokens over themselves
    (`tessel.prefill_attention`), and `tessel.lse_merge`s. As in prefill,
    rows of padding tokens (outside every request) are unspecified.

    Shapes: q `[T, Hq, Dqk]`, k `[T, Hkv, Dqk]`, v `[T, Hkv, Dv]`; caches in
    `layout`; block_table `[B, MB]`; cu_seqlens `[B + 1]`; context_lens `[B]`;
    out `[T, Hq, Dv]`; lse `[Hq, T]`.

    Example:

    ```mlir
    tessel.extend_attention q(%q : memref<?x32x128xbf16>)
        k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
        k_cache(%kc : memref<?x16x8x128xbf16>)
        v_cache(%vc : memref<?x16x8x128xbf16>)
        block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>)
        context_lens(%cl : memref<?xi32>) out(%o : memref<?x32x128xbf16>)
        layout(nhd) scale(%scale)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$q, Tessel_Buffer:$k, Tessel_Buffer:$v,
                   Tessel_Buffer:$k_cache, Tessel_Buffer:$v_cache,
                   Tessel_Buffer:$block_table, Tessel_Buffer:$cu_seqlens,
                   Tessel_Buffer:$context_lens, Tessel_OutBuffer:$out,
                   Tessel_OptOutBuffer:$lse, F32:$scale,
                   Tessel_KVLayoutAttr:$layout);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)` `k` `(` $k `:` type($k) `)`
    `v` `(` $v `:` type($v) `)`
    `k_cache` `(` $k_cache `:` type($k_cache) `)`
    `v_cache` `(` $v_cache `:` type($v_cache) `)`
    `block_table` `(` $block_table `:` type($block_table) `)`
    `cu_seqlens` `(` $cu_seqlens `:` type($cu_seqlens) `)`
    `context_lens` `(` $context_lens `:` type($context_lens) `)`
    `out` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)? `layout` `(` $layout `)`
    `scale` `(` $scale `)` attr-dict
  }];
}

def Tessel_PagedAttentionOp : Tessel_Op<"paged_attention", [AttrSizedOperandSegments]> {
  let summary = "queries over a window of a paged cached context";
  let description = [{
    The building block of split-KV decode and chunked extend: every query
    token of request `b` attends (without a causal mask) to the cached tokens
    `[window_start, min(window_start + window_len, context_lens[b]))` of
    that request, or to all `context_lens[b]` of them without a window.
    Queries are `[cu_seqlens[b], cu_seqlens[b+1])`; without `cu_seqlens`
    request `b` has exactly one query token, `q[b]` (decode).

    A query that sees no key gets a zero output and an LSE of `-inf`, the
    identity of `tessel.lse_merge`.

    `causal` (with `cu_seqlens`; the dispatcher's unified mode: decodes,
    extends and prefills of one batch in one kernel, their new tokens
    already written to the cache): `context_lens[b]` counts the request's
    whole sequence, cached context and new tokens, and its queries are the
    sequence's last tokens, so query `j` of the request's `n` sits at
    position `p = context_lens[b] - n + j` and attends to the cached tokens
    `[0, p]` (in the split form, those of its window). A query whose
    position is negative sees no key.

    Split form (split-KV decode, context chunks of extend; one kernel for
    every split): `out` `[P, T, Hq, Dv]` and `lse` `[P, Hq, T]` hold P
    partials; partial `p` covers the window `[p * W, (p + 1) * W)` with
    `W = ceil(MB / P) * BS` (whole cache blocks), so the caller picks the
    split count through the shape of its buffers and merges them with
    `tessel.lse_merge_n` (or folds them in with `tessel.lse_merge`). It
    takes no window operands and needs `lse`.

    Shapes: q `[T, Hq, Dqk]`; caches in `layout`; block_table `[B, MB]`;
    cu_seqlens `[B + 1]`; context_lens `[B]`; out `[T, Hq, Dv]`;
    lse `[Hq, T]` f32.

    Example:

    ```mlir
    tessel.paged_attention q(%q : memref<?x32x128xbf16>)
        k_cache(%kc : memref<?x16x8x128xbf16>)
        v_cache(%vc : memref<?x16x8x128xbf16>)
        block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>)
        out(%o : memref<?x32x128xf32>) lse(%l : memref<32x?xf32>)
        window(%start, %len) layout(nhd) scale(%scale)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$q, Tessel_Buffer:$k_cache,
                   Tessel_Buffer:$v_cache, Tessel_Buffer:$block_table,
                   Arg<Optional<AnyMemRef>, "", [MemRead]>:$cu_seqlens,
                   Tessel_Buffer:$context_lens, Tessel_OutBuffer:$out,
                   Tessel_OptOutBuffer:$lse, Optional<Index>:$window_start,
                   Optional<Index>:$window_len, F32:$scale,
                   Tessel_KVLayoutAttr:$layout, UnitAttr:$causal);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `k_cache` `(` $k_cache `:` type($k_cache) `)`
    `v_cache` `(` $v_cache `:` type($v_cache) `)`
    `block_table` `(` $block_table `:` type($block_table) `)`
    (`cu_seqlens` `(` $cu_seqlens^ `:` type($cu_seqlens) `)`)?
    `context_lens` `(` $context_lens `:` type($context_lens) `)`
    `out` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`window` `(` $window_start^ `,` $window_len `)`)?
    (`causal` $causal^)?
    `layout` `(` $layout `)`
    `scale` `(` $scale `)` attr-dict
  }];
  let extraClassDeclaration = [{
    /// `out` [P, B, Hq, Dv] and `lse` [P, Hq, B]: split-KV partials.
    bool isSplit() {
      return ::llvm::cast<::mlir::MemRefType>(getOut().getType()).getRank() == 4;
    }
  }];
}

def Tessel_ReshapeAndCacheOp : Tessel_Op<"reshape_and_cache"> {
  let summary = "write new tokens' K and V into a paged cache";
  let description = [{
    Token `t` is written to slot `slot_mapping[t]` (block
    `slot / BS`, offset `slot % BS`) of both caches, in `layout`. A negative
    slot (padding) or a slot outside the cache is skipped.

    Shapes: k `[T, Hkv, Dk]`, v `[T, Hkv, Dv]`, slot_mapping `[T]` i32; caches
    in `layout`.

    Example:

    ```mlir
    tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
        v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>)
        v_cache(%vc : memref<?x16x8x128xbf16>)
        slot_mapping(%s : memref<?xi32>) layout(nhd)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$k, Tessel_Buffer:$v,
                   Tessel_OutBuffer:$k_cache, Tessel_OutBuffer:$v_cache,
                   Tessel_Buffer:$slot_mapping, Tessel_KVLayoutAttr:$layout);
  let assemblyFormat = [{
    `k` `(` $k `:` type($k) `)` `v` `(` $v `:` type($v) `)`
    `k_cache` `(` $k_cache `:` type($k_cache) `)`
    `v_cache` `(` $v_cache `:` type($v_cache) `)`
    `slot_mapping` `(` $slot_mapping `:` type($slot_mapping) `)`
    `layout` `(` $layout `)` attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// MLA
//===----------------------------------------------------------------------===//

def Tessel_MLADecodeOp : Tessel_Op<"mla_decode", [AttrSizedOperandSegments]> {
  let summary = "absorbed multi-head latent attention decode";
  let description = [{
    DeepSeek-style MLA decode with the projections absorbed: q `[B, H, L+R]`
    (latent L, rope R) against one latent KV head in a paged cache
    `[NB, BS, L+R]`. Keys are the whole 576-wide rows; values are their first
    `L` dims; out is `[B, H, L]`; lse `[H, B]`. With a window, only cached
    tokens `[window_start, window_start + window_len)` are read (split-KV).
    Split form (split-KV in one kernel): out `[P, B, H, L]` and lse
    `[P, H, B]` hold P partials, partial `p` over the window `[p * W,
    (p + 1) * W)`, `W = ceil(MB / P) * BS`, as in `tessel.paged_attention`;
    it takes no window and needs lse.

    Example (DeepSeek-V3):

    ```mlir
    tessel.mla_decode q(%q : memref<?x128x576xbf16>)
        kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>)
        seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>)
        scale(%scale)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$q, Tessel_Buffer:$kv_cache,
                   Tessel_Buffer:$block_table, Tessel_Buffer:$seq_lens,
                   Tessel_OutBuffer:$out, Tessel_OptOutBuffer:$lse,
                   Optional<Index>:$window_start, Optional<Index>:$window_len,
                   F32:$scale);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `kv_cache` `(` $kv_cache `:` type($kv_cache) `)`
    `block_table` `(` $block_table `:` type($block_table) `)`
    `seq_lens` `(` $seq_lens `:` type($seq_lens) `)`
    `out` `(` $out `:` type($out) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`window` `(` $window_start^ `,` $window_len `)`)?
    `scale` `(` $scale `)` attr-dict
  }];
  let extraClassDeclaration = [{
    /// `out` [P, B, H, L] and `lse` [P, H, B]: split-KV partials.
    bool isSplit() {
      return ::llvm::cast<::mlir::MemRefType>(getOut().getType()).getRank() == 4;
    }
  }];
}

//===----------------------------------------------------------------------===//
// LSE merge
//===----------------------------------------------------------------------===//

def Tessel_LseMergeOp : Tessel_Op<"lse_merge"> {
  let summary = "merge two partial attention results by log-sum-exp";
  let description = [{
    For each token `t` and head `h`, with `a = lse_a[h,t]`, `b = lse_b[h,t]`
    (an LSE of `+inf` counts as `-inf`, an empty partial):
    `m = max(a, b)`, `wa = exp(a - m)`, `wb = exp(b - m)`,
    `out = (o_a * wa + o_b * wb) / (wa + wb)`, `lse_out = m + log(wa + wb)`.
    When both are `-inf`, `out = o_a` and `lse_out = -inf`: never NaN. The
    output of an empty partial is never read into the result, so it may hold
    anything (a kernel may skip writing it).
    `out` and `lse_out` may alias `o_a` and `lse_a` (an in-place merge).

    Shapes: o_a, o_b, out `[T, H, D]`; lse_a, lse_b, lse_out `[H, T]` f32.

    Example:

    ```mlir
    tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
        b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
        out(%o : memref<?x32x128xbf16>)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$o_a, Tessel_Buffer:$lse_a,
                   Tessel_Buffer:$o_b, Tessel_Buffer:$lse_b,
                   Tessel_OutBuffer:$out, Tessel_OptOutBuffer:$lse_out);
  let assemblyFormat = [{
    `a` `(` $o_a `:` type($o_a) `,` $lse_a `:` type($lse_a) `)`
    `b` `(` $o_b `:` type($o_b) `,` $lse_b `:` type($lse_b) `)`
    `out` `(` $out `:` type($out) `)`
    (`lse_out` `(` $lse_out^ `:` type($lse_out) `)`)? attr-dict
  }];
}

def Tessel_LseMergeNOp : Tessel_Op<"lse_merge_n"> {
  let summary = "merge N partial attention results by log-sum-exp";
  let description = [{
    The N-way form of `tessel.lse_merge` used by split-KV:
    `m = max_p lse[p,h,t]`, `w_p = exp(lse[p,h,t] - m)`,
    `out = sum_p w_p o[p] / sum_p w_p`, `lse_out = m + log(sum_p w_p)`, with the
    same infinity rules (all partials empty: `out = 0`, `lse_out = -inf`;
    an empty partial's output is ignored, whatever it holds).

    Shapes: partials `[P, T, H, D]`, partial_lse `[P, H, T]` f32,
    out `[T, H, D]`, lse_out `[H, T]` f32.

    Example:

    ```mlir
    tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>,
                                %pl : memref<?x32x?xf32>)
        out(%o : memref<?x32x128xbf16>)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$partials, Tessel_Buffer:$partial_lse,
                   Tessel_OutBuffer:$out, Tessel_OptOutBuffer:$lse_out);
  let assemblyFormat = [{
    `partials` `(` $partials `:` type($partials) `,`
                   $partial_lse `:` type($partial_lse) `)`
    `out` `(` $out `:` type($out) `)`
    (`lse_out` `(` $lse_out^ `:` type($lse_out) `)`)? attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// Ragged grouped matmul
//===----------------------------------------------------------------------===//

def Tessel_GroupedMatmulOp : Tessel_Op<"grouped_matmul",
                                       [AttrSizedOperandSegments]> {
  let summary = "ragged-M grouped matmul (MoE forward and dgrad)";
  let description = [{
    Group `g` owns rows `[group_offsets[g-1], group_offsets[g])` of `a` and
    `c` (`group_offsets` are int32 cumulative ends, `group_offsets[-1] = 0`):
    `c[rows_g] = a[rows_g] . op(b[g])`, accumulated in fp32. Rows past the
    last offset are set to zero. Offsets are clamped to `[previous end, T]`.

    `b` is stacked, `[G, N, K]` with `trans_b` (an `nn.Linear` weight) or
    `[G, K, N]` without; or a pointer table `[G]` of i64 addresses of
    per-expert matrices of shape `b_shape` (`[N, K]` with `trans_b`, else
    `[K, N]`) with the element type of `a`, read in place.

    Shapes: a `[T, K]`, group_offsets `[G]` i32, c `[T, N]`.

    With `a_rows` (i32 `[T]`), the rows of the product are gathered: row `t`
    reads row `a_rows[t] / a_rows_divisor` of `a` `[S, K]` (an entry outside
    `[0, S * a_rows_divisor)` reads as zeros). The MoE forward passes its tokens `x` with
    `expert_sort`'s sorted (token, slot) rows and the top-k as the divisor,
    so the expert-ordered copy of `x` is never written.

    With `act` (`[T, N / 2]`, c's element type; stacked `b` with
    `trans_b`), each group's N rows of `b` are an MoE expert's gate rows
    then its up rows, and the SiLU-gated product is written as well:
    `act[t, n] = silu(c[t, n]) * c[t, N / 2 + n]`, computed in fp32 from
    c's rounded elements and rounded once, as `tessel.swiglu` on c
    computes it (the MoE forward's gate/up projection, with the
    activation in its epilogue).

    Example:

    ```mlir
    tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
        b(%b : memref<128x512x2048xbf16>) group_offsets(%g : memref<128xi32>)
        c(%c : memref<?x512xbf16>) {trans_b}
    tessel.grouped_matmul a(%x : memref<?x2048xbf16>)
        a_rows(%sorted_rows : memref<?xi32>)
        b(%b : memref<128x512x2048xbf16>) group_offsets(%g : memref<128xi32>)
        c(%c : memref<?x512xbf16>) {a_rows_divisor = 8, trans_b}
    tessel.grouped_matmul a(%x : memref<?x2048xbf16>)
        a_rows(%sorted_rows : memref<?xi32>)
        b(%w_gate_up : memref<128x1024x2048xbf16>)
        group_offsets(%g : memref<128xi32>)
        c(%h : memref<?x1024xbf16>) act(%act : memref<?x512xbf16>)
        {a_rows_divisor = 8, trans_b}
    ```
  }];
  let arguments = (ins Tessel_Buffer:$a, Tessel_Buffer:$b,
                   Tessel_Buffer:$group_offsets, Tessel_OutBuffer:$c,
                   Arg<Optional<AnyMemRef>, "", [MemRead]>:$a_rows,
                   Tessel_OptOutBuffer:$act,
                   UnitAttr:$trans_b, OptionalAttr<DenseI64ArrayAttr>:$b_shape,
                   OptionalAttr<I64Attr>:$a_rows_divisor);
  let assemblyFormat = [{
    `a` `(` $a `:` type($a) `)`
    (`a_rows` `(` $a_rows^ `:` type($a_rows) `)`)?
    `b` `(` $b `:` type($b) `)`
    `group_offsets` `(` $group_offsets `:` type($group_offsets) `)`
    `c` `(` $c `:` type($c) `)`
    (`act` `(` $act^ `:` type($act) `)`)? attr-dict
  }];
  let extraClassDeclaration = [{
    /// The divisor of `a_rows` entries (1 when not given).
    int64_t getRowsDivisorOrOne() { return getARowsDivisor().value_or(1); }
    /// True when `b` is a table of per-group pointers.
    bool isPointerTable();
    /// N and K of every group's B matrix.
    int64_t getN();
    int64_t getK();
  }];
}

def Tessel_GroupedMatmulWgradOp : Tessel_Op<"grouped_matmul_wgrad",
                                            [AttrSizedOperandSegments]> {
  let summary = "ragged-K grouped matmul (MoE weight gradient)";
  let description = [{
    `c[g] = a[rows_g]^T . b[rows_g]` accumulated in fp32, with rows as in
    `tessel.grouped_matmul`; an empty group writes zeros.

    Shapes: a `[T, M]`, b `[T, N]`, group_offsets `[G]` i32, c `[G, M, N]`.

    With `a_rows` (i32 `[T]`), row `t` of a is gathered: it is row
    `a_rows[t] / rows_divisor` of `a` `[S, M]` (an entry outside
    `[0, S * rows_divisor)` reads as zeros); `b_rows` likewise for b. The
    MoE backward gathers the upstream gradient (down projection) or x
    (gate/up projection) through `expert_sort`'s sorted rows, so neither
    is permuted into a copy first.

    Example:

    ```mlir
    tessel.grouped_matmul_wgrad a(%dy : memref<?x512xbf16>)
        b(%x : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
        c(%dw : memref<128x512x2048xf32>)
    tessel.grouped_matmul_wgrad a(%dh : memref<?x512xbf16>)
        b(%x : memref<?x2048xbf16>) b_rows(%sorted_rows : memref<?xi32>)
        group_offsets(%g : memref<128xi32>) c(%dw : memref<128x512x2048xf32>)
        {rows_divisor = 8}
    ```
  }];
  let arguments = (ins Tessel_Buffer:$a, Tessel_Buffer:$b,
                   Tessel_Buffer:$group_offsets, Tessel_OutBuffer:$c,
                   Arg<Optional<AnyMemRef>, "", [MemRead]>:$a_rows,
                   Arg<Optional<AnyMemRef>, "", [MemRead]>:$b_rows,
                   OptionalAttr<I64Attr>:$rows_divisor);
  let assemblyFormat = [{
    `a` `(` $a `:` type($a) `)`
    (`a_rows` `(` $a_rows^ `:` type($a_rows) `)`)?
    `b` `(` $b `:` type($b) `)`
    (`b_rows` `(` $b_rows^ `:` type($b_rows) `)`)?
    `group_offsets` `(` $group_offsets `:` type($group_offsets) `)`
    `c` `(` $c `:` type($c) `)` attr-dict
  }];
  let extraClassDeclaration = [{
    /// The divisor of `a_rows` and `b_rows` entries (1 when not given).
    int64_t getRowsDivisorOrOne() { return getRowsDivisor().value_or(1); }
  }];
}

//===----------------------------------------------------------------------===//
// MoE glue
//===----------------------------------------------------------------------===//

def Tessel_ExpertHistogramOp : Tessel_Op<"expert_histogram"> {
  let summary = "tokens per expert and their cumulative ends";
  let description = [{
    `counts[e]` is the number of entries of `topk_ids` equal to `e`;
    `group_offsets[e] = counts[0] + ... + counts[e]`. Ids outside `[0, E)`
    (dropped tokens) are not counted.

    Shapes: topk_ids `[T, k]` i32, counts `[E]` i32, group_offsets `[E]` i32.

    Example:

    ```mlir
    tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
        counts(%n : memref<128xi32>) group_offsets(%g : memref<128xi32>)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$topk_ids, Tessel_OutBuffer:$counts,
                   Tessel_OutBuffer:$group_offsets);
  let assemblyFormat = [{
    `topk_ids` `(` $topk_ids `:` type($topk_ids) `)`
    `counts` `(` $counts `:` type($counts) `)`
    `group_offsets` `(` $group_offsets `:` type($group_offsets) `)` attr-dict
  }];
}

def Tessel_ExpertSortOp : Tessel_Op<"expert_sort"> {
  let summary = "stable expert-sorted order of the (token, slot) rows";
  let description = [{
    Row `r = t * k + j` stands for slot `j` of token `t`. `sorted_rows[p]` is
    the row at position `p` of the expert-sorted order: rows of expert `e`
    occupy `[group_offsets[e-1], group_offsets[e])`, in increasing row order
    (stable). `row_positions[t, j]` is the inverse: the position of row
    `t * k + j`, or -1 if its id is outside `[0, E)`; such rows are not
    placed and the tail of `sorted_rows` is filled with -1.

    Shapes: topk_ids `[T, k]` i32, group_offsets `[E]` i32 (from
    `tessel.expert_histogram`), sorted_rows `[T * k]` i32,
    row_positions `[T, k]` i32.

    Example:

    ```mlir
    tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
        group_offsets(%g : memref<128xi32>)
        sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$topk_ids, Tessel_Buffer:$group_offsets,
                   Tessel_OutBuffer:$sorted_rows,
                   Tessel_OutBuffer:$row_positions);
  let assemblyFormat = [{
    `topk_ids` `(` $topk_ids `:` type($topk_ids) `)`
    `group_offsets` `(` $group_offsets `:` type($group_offsets) `)`
    `sorted_rows` `(` $sorted_rows `:` type($sorted_rows) `)`
    `row_positions` `(` $row_positions `:` type($row_positions) `)` attr-dict
  }];
}

def Tessel_MoePermuteOp : Tessel_Op<"moe_permute"> {
  let summary = "gather token rows into expert order";
  let description = [{
    `out[p] = x[sorted_rows[p] / topk]`; a negative or out-of-range entry
    gives a zero row.

    Shapes: x `[T, H]`, sorted_rows `[R]` i32, out `[R, H]`.

    Example:

    ```mlir
    tessel.moe_permute x(%x : memref<?x2048xbf16>)
        sorted_rows(%s : memref<?xi32>) out(%o : memref<?x2048xbf16>)
        {topk = 8 : i64}
    ```
  }];
  let arguments = (ins Tessel_Buffer:$x, Tessel_Buffer:$sorted_rows,
                   Tessel_OutBuffer:$out, I64Attr:$topk);
  let assemblyFormat = [{
    `x` `(` $x `:` type($x) `)`
    `sorted_rows` `(` $sorted_rows `:` type($sorted_rows) `)`
    `out` `(` $out `:` type($out) `)` attr-dict
  }];
}

def Tessel_MoeUnpermuteOp : Tessel_Op<"moe_unpermute"> {
  let summary = "weighted combine of each token's expert rows";
  let description = [{
    `out[t] = sum_{j < k} weights[t, j] * y[row_positions[t, j]]`, summed in
    fp32 in the order `j = 0..k-1` (deterministic, no atomics); a negative or
    out-of-range position contributes nothing.

    Shapes: y `[R, H]`, row_positions `[T, k]` i32, weights `[T, k]` (f32 or
    the element type of y), out `[T, H]`.

    Example:

    ```mlir
    tessel.moe_unpermute y(%y : memref<?x2048xbf16>)
        row_positions(%p : memref<?x8xi32>) weights(%w : memref<?x8xf32>)
        out(%o : memref<?x2048xbf16>)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$y, Tessel_Buffer:$row_positions,
                   Tessel_Buffer:$weights, Tessel_OutBuffer:$out);
  let assemblyFormat = [{
    `y` `(` $y `:` type($y) `)`
    `row_positions` `(` $row_positions `:` type($row_positions) `)`
    `weights` `(` $weights `:` type($weights) `)`
    `out` `(` $out `:` type($out) `)` attr-dict
  }];
}

def Tessel_SwigluOp : Tessel_Op<"swiglu"> {
  let summary = "SiLU-gated product of an MoE expert's gate and up rows";
  let description = [{
    `act[p, n] = silu(gate[p, n]) * up[p, n]` with `silu(x) = x / (1 +
    e^-x)`, computed in fp32 and rounded once to the element type. `h` holds
    gate and up either as the two column halves of `[R, 2I]` (gate first, as
    a fused gate/up grouped matmul writes them) or as `[2, R, I]` (gate,
    then up: two launches).

    Shapes: h `[R, 2I]` or `[2, R, I]`, act `[R, I]`, one element type.

    Example:

    ```mlir
    tessel.swiglu h(%h : memref<?x1024xbf16>) act(%a : memref<?x512xbf16>)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$h, Tessel_OutBuffer:$act);
  let assemblyFormat = [{
    `h` `(` $h `:` type($h) `)` `act` `(` $act `:` type($act) `)` attr-dict
  }];
}

def Tessel_SwigluBackwardOp : Tessel_Op<"swiglu_backward"> {
  let summary = "backward of the routing-weighted SwiGLU of expert-sorted rows";
  let description = [{
    The backward of `y[p] = w_p * down(act[p])` with `act = swiglu(h)` for
    the expert-sorted rows `p` of `tessel.expert_sort`, given `grad[p] =
    dL/d(down input)` of the unweighted row (the down projection's dgrad
    of the permuted upstream gradient). Row `p` has the routing weight
    `w_p = topk_weights.flat[sorted_rows[p]]`, or `w_p = 0` when
    `sorted_rows[p]` is outside `[0, T * k)` (the unplaced tail: its rows of
    `dh` and `act_weighted` are zero). With `s = sigmoid(gate)`, in fp32:

    - `dh` (laid out as `h`): `d gate = grad * w_p * up * s * (1 + gate * (1
      - s))`, `d up = grad * w_p * gate * s`;
    - `act_weighted[p] = w_p * act[p]` (the down weight gradient's operand);
    - `d_topk_weights.flat[sorted_rows[p]] = sum_n grad[p, n] * act[p, n]`,
      summed in a fixed order (deterministic, no atomics); entries whose
      `row_positions` is outside `[0, R)` (dropped slots) are zero.

    `sorted_rows` and `row_positions` must be inverses, as
    `tessel.expert_sort` writes them: every entry of `d_topk_weights` is
    then written once.

    Shapes: grad `[R, I]`, h `[R, 2I]` or `[2, R, I]`, topk_weights
    `[T, k]` (f32 or the element type), sorted_rows `[R]` i32,
    row_positions `[T, k]` i32, dh like h, act_weighted `[R, I]`,
    d_topk_weights `[T, k]` f32.

    Example:

    ```mlir
    tessel.swiglu_backward grad(%g : memref<?x512xbf16>)
        h(%h : memref<?x1024xbf16>) topk_weights(%w : memref<?x8xf32>)
        sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>)
        dh(%dh : memref<?x1024xbf16>) act_weighted(%aw : memref<?x512xbf16>)
        d_topk_weights(%dw : memref<?x8xf32>)
    ```
  }];
  let arguments = (ins Tessel_Buffer:$grad, Tessel_Buffer:$h,
                   Tessel_Buffer:$topk_weights, Tessel_Buffer:$sorted_rows,
                   Tessel_Buffer:$row_positions, Tessel_OutBuffer:$dh,
                   Tessel_OutBuffer:$act_weighted,
                   Tessel_OutBuffer:$d_topk_weights);
  let assemblyFormat = [{
    `grad` `(` $grad `:` type($grad) `)` `h` `(` $h `:` type($h) `)`
    `topk_weights` `(` $topk_weights `:` type($topk_weights) `)`
    `sorted_rows` `(` $sorted_rows `:` type($sorted_rows) `)`
    `row_positions` `(` $row_positions `:` type($row_positions) `)`
    `dh` `(` $dh `:` type($dh) `)`
    `act_weighted` `(` $act_weighted `:` type($act_weighted) `)`
    `d_topk_weights` `(` $d_topk_weights `:` type($d_topk_weights) `)`
    attr-dict
  }];
}

#endif // TESSEL_OPS_TD
