// MoE routing glue kernels checked and timed by moe_glue_check.py (which
// reads each kernel's op and shapes from the bundle; the names are for
// people and for the script's pairing of the four ops per MoE shape):
//   hist_e<E>:                 tessel.expert_histogram, top-8 ids;
//   sort_e<E>:                 tessel.expert_sort;
//   permute_h<H>:              tessel.moe_permute, bf16 rows, topk 8;
//   unpermute_h<H>[_wbf16]:    tessel.moe_unpermute, bf16 rows, f32 (or
//                              bf16) weights.
//   swiglu[_backward]_i<I>[_parts]: tessel.swiglu / swiglu_backward, bf16,
//                              h [R, 2I] (or [2, R, I] with _parts),
//                              top-8, f32 routing weights.
// E = 128 with H = 2048 (and I = 512) is the reference MoE shape, E = 256
// with H = 7168 (I = 2048) DeepSeek-V3's routed experts. Token and row
// counts are dynamic.
//
//   tessel-aot bench/moe_glue_kernels.mlir --targets=sm80,sm90 -o moe.tsb

func.func @hist_e128(%ids: memref<?x8xi32>, %counts: memref<128xi32>, %offsets: memref<128xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>) counts(%counts : memref<128xi32>) group_offsets(%offsets : memref<128xi32>)
  return
}

func.func @hist_e256(%ids: memref<?x8xi32>, %counts: memref<256xi32>, %offsets: memref<256xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>) counts(%counts : memref<256xi32>) group_offsets(%offsets : memref<256xi32>)
  return
}

func.func @sort_e128(%ids: memref<?x8xi32>, %offsets: memref<128xi32>, %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>) group_offsets(%offsets : memref<128xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}

func.func @sort_e256(%ids: memref<?x8xi32>, %offsets: memref<256xi32>, %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>) group_offsets(%offsets : memref<256xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}

func.func @permute_h2048(%x: memref<?x2048xbf16>, %sorted: memref<?xi32>, %out: memref<?x2048xbf16>) {
  tessel.moe_permute x(%x : memref<?x2048xbf16>) sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x2048xbf16>) {topk = 8 : i64}
  return
}

func.func @permute_h7168(%x: memref<?x7168xbf16>, %sorted: memref<?xi32>, %out: memref<?x7168xbf16>) {
  tessel.moe_permute x(%x : memref<?x7168xbf16>) sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x7168xbf16>) {topk = 8 : i64}
  return
}

func.func @unpermute_h2048(%y: memref<?x2048xbf16>, %pos: memref<?x8xi32>, %w: memref<?x8xf32>, %out: memref<?x2048xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x2048xbf16>) row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>) out(%out : memref<?x2048xbf16>)
  return
}

func.func @unpermute_h7168(%y: memref<?x7168xbf16>, %pos: memref<?x8xi32>, %w: memref<?x8xf32>, %out: memref<?x7168xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x7168xbf16>) row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>) out(%out : memref<?x7168xbf16>)
  return
}

func.func @unpermute_h2048_wbf16(%y: memref<?x2048xbf16>, %pos: memref<?x8xi32>, %w: memref<?x8xbf16>, %out: memref<?x2048xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x2048xbf16>) row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xbf16>) out(%out : memref<?x2048xbf16>)
  return
}
func.func @swiglu_i512(%h: memref<?x1024xbf16>, %a: memref<?x512xbf16>) {
  tessel.swiglu h(%h : memref<?x1024xbf16>) act(%a : memref<?x512xbf16>)
  return
}
func.func @swiglu_backward_i512(%g: memref<?x512xbf16>, %h: memref<?x1024xbf16>, %w: memref<?x8xf32>, %s: memref<?xi32>, %p: memref<?x8xi32>, %dh: memref<?x1024xbf16>, %aw: memref<?x512xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x512xbf16>) h(%h : memref<?x1024xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>) dh(%dh : memref<?x1024xbf16>) act_weighted(%aw : memref<?x512xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
func.func @swiglu_i2048_parts(%h: memref<2x?x2048xbf16>, %a: memref<?x2048xbf16>) {
  tessel.swiglu h(%h : memref<2x?x2048xbf16>) act(%a : memref<?x2048xbf16>)
  return
}
func.func @swiglu_backward_i2048_parts(%g: memref<?x2048xbf16>, %h: memref<2x?x2048xbf16>, %w: memref<?x8xf32>, %s: memref<?xi32>, %p: memref<?x8xi32>, %dh: memref<2x?x2048xbf16>, %aw: memref<?x2048xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x2048xbf16>) h(%h : memref<2x?x2048xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>) dh(%dh : memref<2x?x2048xbf16>) act_weighted(%aw : memref<?x2048xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
