// The LSE merges the attention benchmarks time (hand-written; token and
// partial counts are dynamic):
//   merge_<partials>_h<H>_d<D>_<out>_lse: tessel.lse_merge with the merged
//       LSE (lse_out), Llama-3 8B's extend merge with f32 and with bf16
//       partials, bf16 out (attention_bench.py);
//   merge_n_f32_h32_d128_bf16: tessel.lse_merge_n of Llama-3 8B's split-KV
//       decode partials (paged_decode_bench.py).
// scripts/prepare-gpu-bundles.sh compiles it into attention.tsb.

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

// --- The split-KV merge of Llama-3 8B decode (f32 partials).

func.func @merge_n_f32_h32_d128_bf16(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>,
    %out: memref<?x32x128xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>, %pl : memref<?x32x?xf32>)
      out(%out : memref<?x32x128xbf16>)
  return
}
