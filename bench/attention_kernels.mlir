// Attention-side kernels checked by attention_check.py and timed by
// attention_bench.py (which read each kernel's op, operand types and shapes
// from the bundle; the names are for people):
//   merge_<partials>_h<H>_d<D>_<out>[_lse]:   tessel.lse_merge (with lse_out
//                                          it can run in place when the types
//                                          agree);
//   merge_n_<partials>_h<H>_d<D>_<out>[_lse]: tessel.lse_merge_n (split-KV;
//                                          paged_decode_bench.py merges the
//                                          decode splits with the one without
//                                          lse_out);
//   rc_<layout>_<type>_h<Hkv>_d<Dk>[_<Dv>]_bs<BS>: tessel.reshape_and_cache.
// Token counts, partial counts and cache blocks are dynamic.
//
//   tessel-aot bench/attention_kernels.mlir --targets=sm80,sm90 -o attn.tsb

// --- LSE merges. Llama-3 8B's extend merge (f32 partials, bf16 out), the
// same with bf16 partials, f32 in place, and MLA's 512-wide rows.

func.func @merge_f32_h32_d128_bf16_lse(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>,
    %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>,
    %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}

func.func @merge_bf16_h32_d128_bf16_lse(%oa: memref<?x32x128xbf16>, %la: memref<32x?xf32>,
    %ob: memref<?x32x128xbf16>, %lb: memref<32x?xf32>,
    %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x32x128xbf16>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xbf16>, %lb : memref<32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}

func.func @merge_f32_h8_d64_f32_lse(%oa: memref<?x8x64xf32>, %la: memref<8x?xf32>,
    %ob: memref<?x8x64xf32>, %lb: memref<8x?xf32>,
    %out: memref<?x8x64xf32>, %lse: memref<8x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x8x64xf32>, %la : memref<8x?xf32>)
      b(%ob : memref<?x8x64xf32>, %lb : memref<8x?xf32>)
      out(%out : memref<?x8x64xf32>) lse_out(%lse : memref<8x?xf32>)
  return
}

func.func @merge_bf16_h16_d512_bf16_lse(%oa: memref<?x16x512xbf16>, %la: memref<16x?xf32>,
    %ob: memref<?x16x512xbf16>, %lb: memref<16x?xf32>,
    %out: memref<?x16x512xbf16>, %lse: memref<16x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x16x512xbf16>, %la : memref<16x?xf32>)
      b(%ob : memref<?x16x512xbf16>, %lb : memref<16x?xf32>)
      out(%out : memref<?x16x512xbf16>) lse_out(%lse : memref<16x?xf32>)
  return
}

// --- Split-KV merges: Llama-3 8B decode (f32 partials, with and without
// lse_out), MLA (bf16, 512).

func.func @merge_n_f32_h32_d128_bf16(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>,
    %out: memref<?x32x128xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>, %pl : memref<?x32x?xf32>)
      out(%out : memref<?x32x128xbf16>)
  return
}

func.func @merge_n_f32_h32_d128_bf16_lse(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>,
    %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>, %pl : memref<?x32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}

func.func @merge_n_bf16_h16_d512_bf16_lse(%p: memref<?x?x16x512xbf16>, %pl: memref<?x16x?xf32>,
    %out: memref<?x16x512xbf16>, %lse: memref<16x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x16x512xbf16>, %pl : memref<?x16x?xf32>)
      out(%out : memref<?x16x512xbf16>) lse_out(%lse : memref<16x?xf32>)
  return
}

// --- reshape_and_cache: Llama-3 8B in both layouts (8 KV heads of 128,
// block size 16); f16 with distinct K and V dims (MLA non-absorbed: 192 /
// 128) and block size 32; f32 (x = 4).

func.func @rc_nhd_bf16_h8_d128_bs16(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
    %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>)
      slot_mapping(%s : memref<?xi32>) layout(nhd)
  return
}

func.func @rc_shuffled_bf16_h8_d128_bs16(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
    %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x2x128x8xbf16>, %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      k_cache(%kc : memref<?x8x16x16x8xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>)
      slot_mapping(%s : memref<?xi32>) layout(shuffled)
  return
}

func.func @rc_shuffled_f16_h4_d192_128_bs32(%k: memref<?x4x192xf16>, %v: memref<?x4x128xf16>,
    %kc: memref<?x4x24x32x8xf16>, %vc: memref<?x4x4x128x8xf16>, %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x4x192xf16>) v(%v : memref<?x4x128xf16>)
      k_cache(%kc : memref<?x4x24x32x8xf16>) v_cache(%vc : memref<?x4x4x128x8xf16>)
      slot_mapping(%s : memref<?xi32>) layout(shuffled)
  return
}

func.func @rc_nhd_f16_h4_d192_128_bs32(%k: memref<?x4x192xf16>, %v: memref<?x4x128xf16>,
    %kc: memref<?x32x4x192xf16>, %vc: memref<?x32x4x128xf16>, %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x4x192xf16>) v(%v : memref<?x4x128xf16>)
      k_cache(%kc : memref<?x32x4x192xf16>) v_cache(%vc : memref<?x32x4x128xf16>)
      slot_mapping(%s : memref<?xi32>) layout(nhd)
  return
}

func.func @rc_shuffled_f32_h2_d64_bs16(%k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>,
    %kc: memref<?x2x16x16x4xf32>, %vc: memref<?x2x4x64x4xf32>, %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x2x64xf32>) v(%v : memref<?x2x64xf32>)
      k_cache(%kc : memref<?x2x16x16x4xf32>) v_cache(%vc : memref<?x2x4x64x4xf32>)
      slot_mapping(%s : memref<?xi32>) layout(shuffled)
  return
}
