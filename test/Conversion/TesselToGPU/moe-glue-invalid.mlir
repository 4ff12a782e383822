// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-to-gpu=chip=gfx942

// The routing kernels are one block whose shared memory is sized by the
// expert count, with a thread per expert in their scans.
func.func @histogram_dynamic_experts(%ids: memref<?x8xi32>, %n: memref<?xi32>,
                                     %g: memref<?xi32>) {
  // expected-error@+1 {{GPU template: the expert count must be static (one block sizes its shared memory by it)}}
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
      counts(%n : memref<?xi32>) group_offsets(%g : memref<?xi32>)
  return
}

// -----

func.func @histogram_too_many_experts(%ids: memref<?x8xi32>,
                                      %n: memref<2048xi32>,
                                      %g: memref<2048xi32>) {
  // expected-error@+1 {{GPU template: 2048 experts; one block of 1024 threads routes 1 to 1024 experts}}
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
      counts(%n : memref<2048xi32>) group_offsets(%g : memref<2048xi32>)
  return
}

// -----

func.func @sort_dynamic_experts(%ids: memref<?x8xi32>, %g: memref<?xi32>,
                                %s: memref<?xi32>, %p: memref<?x8xi32>) {
  // expected-error@+1 {{GPU template: the expert count must be static}}
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%g : memref<?xi32>) sorted_rows(%s : memref<?xi32>)
      row_positions(%p : memref<?x8xi32>)
  return
}

// -----

func.func @sort_too_many_experts(%ids: memref<?x8xi32>, %g: memref<1025xi32>,
                                 %s: memref<?xi32>, %p: memref<?x8xi32>) {
  // expected-error@+1 {{GPU template: 1025 experts; one block of 1024 threads routes 1 to 1024 experts}}
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%g : memref<1025xi32>) sorted_rows(%s : memref<?xi32>)
      row_positions(%p : memref<?x8xi32>)
  return
}

// -----

// The sort keeps a counter per wave and expert: (16 + 1) * 1000 * 4 bytes
// plus the scan's 16 words do not fit gfx942's 64 KB of LDS (they fit
// sm80's 163 KB and gfx950's 160 KB).
func.func @sort_lds(%ids: memref<?x8xi32>, %g: memref<1000xi32>,
                    %s: memref<?xi32>, %p: memref<?x8xi32>) {
  // expected-error@+1 {{GPU template: sorting over 1000 experts needs 72064 bytes of shared memory (a counter per warp and expert, two more per expert), more than the 65536 of gfx942}}
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%g : memref<1000xi32>) sorted_rows(%s : memref<?xi32>)
      row_positions(%p : memref<?x8xi32>)
  return
}

// -----

// The copies move rows as 16-byte chunks.
func.func @permute_hidden(%x: memref<?x100xbf16>, %s: memref<?xi32>,
                          %out: memref<?x100xbf16>) {
  // expected-error@+1 {{GPU template: hidden size (100) must be a multiple of 8 for 'bf16', so that every row is made of 16-byte chunks}}
  tessel.moe_permute x(%x : memref<?x100xbf16>) sorted_rows(%s : memref<?xi32>)
      out(%out : memref<?x100xbf16>) {topk = 8 : i64}
  return
}

// -----

func.func @unpermute_hidden(%y: memref<?x6xf32>, %p: memref<?x8xi32>,
                            %w: memref<?x8xf32>, %out: memref<?x6xf32>) {
  // expected-error@+1 {{GPU template: hidden size (6) must be a multiple of 4 for 'f32', so that every row is made of 16-byte chunks}}
  tessel.moe_unpermute y(%y : memref<?x6xf32>) row_positions(%p : memref<?x8xi32>)
      weights(%w : memref<?x8xf32>) out(%out : memref<?x6xf32>)
  return
}
