// RUN: tessel-opt %s --tessel-to-host | FileCheck %s

// The host lowering of the attention ops: per query row, an fp32 two-pass
// softmax over spans of keys; every index read from device memory is clamped.

// Prefill, causal, GQA (4 query heads on 2 KV heads). Scratch is allocated
// once per op: the widened query row, the output accumulator, the scores.
// CHECK-LABEL: func.func @prefill_causal_gqa
// CHECK-SAME:    (%[[Q:[^:]+]]: memref<?x4x64xbf16>, %[[K:[^:]+]]: memref<?x2x64xbf16>, %[[V:[^:]+]]: memref<?x2x64xbf16>, %[[CU:[^:]+]]: memref<?xi32>, %[[O:[^:]+]]: memref<?x4x64xbf16>, %[[LSE:[^:]+]]: memref<4x?xf32>, %[[SCALE:[^:]+]]: f32)
// CHECK:         %[[QROW:.+]] = memref.alloc() : memref<64xf32>
// CHECK:         %[[ACC:.+]] = memref.alloc() : memref<64xf32>
// CHECK:         %[[S:.+]] = memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:         scf.for %[[REQ:[^ ]+]] =
// CHECK:           memref.load %[[CU]][%[[REQ]]] : memref<?xi32>
// CHECK:           arith.maxsi
// CHECK:           %[[START:.+]] = arith.minsi
// CHECK:           memref.load %[[CU]]
// CHECK:           scf.for %[[TOK:[^ ]+]] = %[[START]] to
// Causal: token i sees keys [start, i].
// CHECK:             %[[LAST:.+]] = arith.addi %[[TOK]], %{{.+}} : index
// CHECK:             %[[COUNT:.+]] = arith.subi %[[LAST]], %[[START]] : index
// CHECK:             scf.for %[[HEAD:[^ ]+]] = %{{.+}} to %c4
// CHECK:               %[[KVH:.+]] = arith.divui %[[HEAD]], %c2 : index
// CHECK:               scf.for %[[D:[^ ]+]] =
// CHECK:                 memref.load %[[Q]][%[[TOK]], %[[HEAD]], %[[D]]]
// CHECK:                 memref.store %{{.+}}, %[[QROW]][%[[D]]]
// Pass 1: the scores and their running max, from -inf; the dot product
// along the head dim may be reassociated.
// CHECK:               %[[MAX:.+]] = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step %{{.+}} iter_args(%{{.+}} = %cst) -> (f32)
// CHECK:                 scf.for {{.+}} iter_args
// CHECK:                   memref.load %[[QROW]]
// CHECK:                   memref.load %[[K]][%{{.+}}, %[[KVH]], %{{.+}}] : memref<?x2x64xbf16>
// CHECK:                   arith.mulf {{.+}} fastmath<reassoc,contract> : f32
// CHECK:                   arith.addf {{.+}} fastmath<reassoc,contract> : f32
// CHECK:                 %[[SCORE:.+]] = arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK:                 memref.store %[[SCORE]], %[[S]]
// CHECK:                 arith.maximumf
// Pass 2: the exponentials, their sum and the weighted values.
// CHECK:               %[[L:.+]] = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step
// CHECK:                 memref.load %[[S]]
// CHECK:                 arith.subf %{{.+}}, %[[MAX]] : f32
// CHECK:                 math.exp
// CHECK:                 scf.for
// CHECK:                   memref.load %[[ACC]]
// CHECK:                   memref.load %[[V]][%{{.+}}, %[[KVH]], %{{.+}}] : memref<?x2x64xbf16>
// CHECK:                   memref.store %{{.+}}, %[[ACC]]
// A row that sees no key: divide by 1 (out = 0) and lse = -inf.
// CHECK:               %[[EMPTY:.+]] = arith.cmpi eq
// CHECK:               %[[DIVISOR:.+]] = arith.select %[[EMPTY]], %{{.+}}, %[[L]] : f32
// CHECK:               scf.for %[[D2:[^ ]+]] =
// CHECK:                 arith.divf %{{.+}}, %[[DIVISOR]] : f32
// CHECK:                 arith.truncf %{{.+}} : f32 to bf16
// CHECK:                 memref.store %{{.+}}, %[[O]][%[[TOK]], %[[HEAD]], %[[D2]]]
// CHECK:               %[[LOG:.+]] = math.log %[[L]] : f32
// CHECK:               %[[LSEV:.+]] = arith.addf %[[MAX]], %[[LOG]] : f32
// CHECK:               %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:               %[[LSESEL:.+]] = arith.select %[[EMPTY]], %[[NEGINF]], %[[LSEV]] : f32
// CHECK:               memref.store %[[LSESEL]], %[[LSE]][%[[HEAD]], %[[TOK]]]
// CHECK:         memref.dealloc %[[QROW]]
// CHECK:         memref.dealloc %[[ACC]]
// CHECK:         memref.dealloc %[[S]]
func.func @prefill_causal_gqa(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>,
    %v: memref<?x2x64xbf16>, %cu: memref<?xi32>, %o: memref<?x4x64xbf16>,
    %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xbf16>)
      k(%k : memref<?x2x64xbf16>) v(%v : memref<?x2x64xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x4x64xbf16>)
      lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}

// Decode, NHD: one query per request; cached token j is at block
// block_table[b, j / 16] (clamped to [0, NB - 1]), offset j % 16. Context
// lengths are clamped to MB * BS, or 0 when the cache has no block. No lse.
// CHECK-LABEL: func.func @decode_nhd
// CHECK-SAME:    (%[[Q:[^:]+]]: memref<?x8x128xbf16>, %[[KC:[^:]+]]: memref<?x16x2x128xbf16>, %[[VC:[^:]+]]: memref<?x16x2x128xbf16>, %[[BT:[^:]+]]: memref<?x?xi32>, %[[SL:[^:]+]]: memref<?xi32>, %[[O:[^:]+]]: memref<?x8x128xf32>, %[[SCALE:[^:]+]]: f32)
// CHECK:         %[[NBK:.+]] = memref.dim %[[KC]], %{{.+}}
// CHECK:         %[[NBV:.+]] = memref.dim %[[VC]], %{{.+}}
// CHECK:         %[[NB:.+]] = arith.minsi %[[NBK]], %[[NBV]]
// CHECK:         %[[MB:.+]] = memref.dim %[[BT]], %c1
// CHECK:         %[[CAP0:.+]] = arith.muli %[[MB]], %c16
// CHECK:         %[[HASBLOCKS:.+]] = arith.cmpi sgt, %[[NB]]
// CHECK:         %[[CAP:.+]] = arith.select %[[HASBLOCKS]], %[[CAP0]]
// CHECK:         memref.alloc(%[[CAP]]) : memref<?xf32>
// CHECK:         scf.for %[[B:[^ ]+]] =
// CHECK:           memref.load %[[SL]][%[[B]]]
// CHECK:           arith.maxsi
// CHECK:           %[[LEN:.+]] = arith.minsi %{{.+}}, %[[CAP]]
// CHECK:           %[[B1:.+]] = arith.addi %[[B]], %{{.+}}
// CHECK:           scf.for %[[TOK:[^ ]+]] = %[[B]] to %[[B1]]
// CHECK:             scf.for %[[HEAD:[^ ]+]] = %{{.+}} to %c8
// CHECK:               %[[KVH:.+]] = arith.divui %[[HEAD]], %c4
// CHECK:               scf.for %{{.+}} = %{{.+}} to %[[LEN]] {{.+}} -> (f32)
// CHECK:                 %[[J:.+]] = arith.addi
// CHECK:                 %[[COL:.+]] = arith.divui %[[J]], %c16
// CHECK:                 %[[ID:.+]] = memref.load %[[BT]][%[[B]], %[[COL]]] : memref<?x?xi32>
// CHECK:                 %[[IDX:.+]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:                 %[[LASTBLK:.+]] = arith.subi %[[NB]], %{{.+}}
// CHECK:                 %[[BLK0:.+]] = arith.maxsi %[[IDX]]
// CHECK:                 %[[BLK:.+]] = arith.minsi %[[BLK0]], %[[LASTBLK]]
// CHECK:                 %[[OFF:.+]] = arith.remui %[[J]], %c16
// CHECK:                 scf.for %[[D:[^ ]+]] = {{.+}} iter_args
// CHECK:                   memref.load %[[KC]][%[[BLK]], %[[OFF]], %[[KVH]], %[[D]]]
// CHECK:               scf.for %{{.+}} = %{{.+}} to %[[LEN]] {{.+}} -> (f32)
// CHECK:                 math.exp
// CHECK:                 memref.load %[[BT]]
// CHECK:                 scf.for %[[D:[^ ]+]] =
// CHECK:                   memref.load %[[VC]][%{{.+}}, %{{.+}}, %[[KVH]], %[[D]]]
// CHECK:                 memref.store %{{.+}}, %[[O]]
// CHECK-NOT:           math.log
// CHECK:         memref.dealloc
func.func @decode_nhd(%q: memref<?x8x128xbf16>, %kc: memref<?x16x2x128xbf16>,
    %vc: memref<?x16x2x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>,
    %o: memref<?x8x128xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x128xbf16>)
      k_cache(%kc : memref<?x16x2x128xbf16>)
      v_cache(%vc : memref<?x16x2x128xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%o : memref<?x8x128xf32>) layout(nhd)
      scale(%scale)
  return
}

// Decode, CDNA-shuffled bf16 caches (x = 8): K[blk, kvh, d / 8, off, d % 8],
// V[blk, kvh, off / 8, d, off % 8].
// CHECK-LABEL: func.func @decode_shuffled
// CHECK-SAME:    (%{{[^:]+}}: memref<?x8x128xbf16>, %[[KC:[^:]+]]: memref<?x2x16x16x8xbf16>, %[[VC:[^:]+]]: memref<?x2x2x128x8xbf16>, %[[BT:[^:]+]]: memref<?x?xi32>
// CHECK:         scf.for %[[HEAD:[^ ]+]] = %{{.+}} to %c8
// CHECK:           %[[KVH:.+]] = arith.divui %[[HEAD]], %c4
// CHECK:           memref.load %[[BT]]
// CHECK:           %[[BLK:.+]] = arith.minsi
// CHECK:           %[[OFF:.+]] = arith.remui %{{.+}}, %c16
// CHECK:           scf.for %[[D:[^ ]+]] = {{.+}} iter_args
// CHECK:             %[[DHI:.+]] = arith.divui %[[D]], %c8
// CHECK:             %[[DLO:.+]] = arith.remui %[[D]], %c8
// CHECK:             memref.load %[[KC]][%[[BLK]], %[[KVH]], %[[DHI]], %[[OFF]], %[[DLO]]] : memref<?x2x16x16x8xbf16>
// CHECK:           math.exp
// CHECK:           memref.load %[[BT]]
// CHECK:           %[[VBLK:.+]] = arith.minsi
// CHECK:           %[[VOFF:.+]] = arith.remui %{{.+}}, %c16
// CHECK:           scf.for %[[D:[^ ]+]] =
// CHECK:             %[[OHI:.+]] = arith.divui %[[VOFF]], %c8
// CHECK:             %[[OLO:.+]] = arith.remui %[[VOFF]], %c8
// CHECK:             memref.load %[[VC]][%[[VBLK]], %[[KVH]], %[[OHI]], %[[D]], %[[OLO]]] : memref<?x2x2x128x8xbf16>
// CHECK:           arith.truncf %{{.+}} : f32 to bf16
func.func @decode_shuffled(%q: memref<?x8x128xbf16>,
    %kc: memref<?x2x16x16x8xbf16>, %vc: memref<?x2x2x128x8xbf16>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x8x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x128xbf16>)
      k_cache(%kc : memref<?x2x16x16x8xbf16>)
      v_cache(%vc : memref<?x2x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%o : memref<?x8x128xbf16>)
      layout(shuffled) scale(%scale)
  return
}

// Paged attention with cu_seqlens and a window: the window is clamped into
// the request's clamped context, [first, first + count).
// CHECK-LABEL: func.func @paged_window
// CHECK-SAME:    %[[KC:[^:]+]]: memref<?x16x2x128xbf16>, %{{[^:]+}}: memref<?x16x2x128xbf16>, %[[BT:[^:]+]]: memref<?x?xi32>, %[[CU:[^:]+]]: memref<?xi32>, %[[CL:[^:]+]]: memref<?xi32>, %[[O:[^:]+]]: memref<?x8x128xf32>, %[[LSE:[^:]+]]: memref<8x?xf32>, %[[WS:[^:]+]]: index, %[[WL:[^:]+]]: index, %[[SCALE:[^:]+]]: f32)
// CHECK:         scf.for %[[B:[^ ]+]] =
// CHECK:           memref.load %[[CL]][%[[B]]]
// CHECK:           %[[LEN:.+]] = arith.minsi
// CHECK:           %[[WS0:.+]] = arith.maxsi %[[WS]]
// CHECK:           %[[FIRST:.+]] = arith.minsi %[[WS0]], %[[LEN]]
// CHECK:           %[[REST:.+]] = arith.subi %[[LEN]], %[[FIRST]]
// CHECK:           %[[WL0:.+]] = arith.maxsi %[[WL]]
// CHECK:           %[[COUNT:.+]] = arith.minsi %[[WL0]], %[[REST]]
// CHECK:           memref.load %[[CU]][%[[B]]]
// CHECK:           %[[START:.+]] = arith.minsi
// CHECK:           memref.load %[[CU]]
// CHECK:           %[[END:.+]] = arith.minsi
// CHECK:           scf.for %[[TOK:[^ ]+]] = %[[START]] to %[[END]]
// CHECK:             scf.for %[[HEAD:[^ ]+]] =
// CHECK:               scf.for %[[J:[^ ]+]] = %{{.+}} to %[[COUNT]] {{.+}} -> (f32)
// CHECK:                 %[[T:.+]] = arith.addi %[[FIRST]], %[[J]]
// CHECK:                 arith.divui %[[T]], %c16
// CHECK:                 memref.load %[[BT]][%[[B]], %{{.+}}]
// CHECK:                 memref.load %[[KC]]
// CHECK:               math.exp
// CHECK:               memref.store %{{.+}}, %[[O]][%[[TOK]], %[[HEAD]], %{{.+}}] : memref<?x8x128xf32>
// CHECK:               math.log
// CHECK:               arith.constant 0xFF800000 : f32
// CHECK:               memref.store %{{.+}}, %[[LSE]][%[[HEAD]], %[[TOK]]]
func.func @paged_window(%q: memref<?x8x128xbf16>, %kc: memref<?x16x2x128xbf16>,
    %vc: memref<?x16x2x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>,
    %cl: memref<?xi32>, %o: memref<?x8x128xf32>, %l: memref<8x?xf32>,
    %start: index, %len: index, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x8x128xbf16>)
      k_cache(%kc : memref<?x16x2x128xbf16>)
      v_cache(%vc : memref<?x16x2x128xbf16>) block_table(%bt : memref<?x?xi32>)
      cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>)
      out(%o : memref<?x8x128xf32>) lse(%l : memref<8x?xf32>)
      window(%start, %len) layout(nhd) scale(%scale)
  return
}

// Extend: each new token sees two spans of keys, one after the other in the
// scores: the whole cached context (through the block table), then the new
// tokens of its request up to itself (from the k/v operands).
// CHECK-LABEL: func.func @extend_nhd
// CHECK-SAME:    (%{{[^:]+}}: memref<?x8x128xbf16>, %[[K:[^:]+]]: memref<?x2x128xbf16>, %[[V:[^:]+]]: memref<?x2x128xbf16>, %[[KC:[^:]+]]: memref<?x16x2x128xbf16>, %[[VC:[^:]+]]: memref<?x16x2x128xbf16>, %[[BT:[^:]+]]: memref<?x?xi32>, %[[CU:[^:]+]]: memref<?xi32>, %[[CL:[^:]+]]: memref<?xi32>
// CHECK:         scf.for %[[B:[^ ]+]] =
// CHECK:           memref.load %[[CL]][%[[B]]]
// CHECK:           %[[LEN:.+]] = arith.minsi
// CHECK:           memref.load %[[CU]][%[[B]]]
// CHECK:           %[[START:.+]] = arith.minsi
// CHECK:           scf.for %[[TOK:[^ ]+]] = %[[START]] to
// CHECK:             %[[REL:.+]] = arith.subi %[[TOK]], %[[START]]
// CHECK:             %[[NEW:.+]] = arith.addi %[[REL]], %{{.+}}
// CHECK:             scf.for %[[HEAD:[^ ]+]] =
// CHECK:               %[[M0:.+]] = scf.for %{{.+}} = %{{.+}} to %[[LEN]] {{.+}} -> (f32)
// CHECK:                 memref.load %[[BT]]
// CHECK:                 memref.load %[[KC]]
// CHECK:               %[[M1:.+]] = scf.for %{{.+}} = %{{.+}} to %[[NEW]] {{.+}} iter_args(%{{.+}} = %[[M0]]) -> (f32)
// CHECK:                 memref.load %[[K]]
// CHECK:               %[[L0:.+]] = scf.for %{{.+}} = %{{.+}} to %[[LEN]] {{.+}} -> (f32)
// CHECK:                 arith.subf %{{.+}}, %[[M1]]
// CHECK:                 math.exp
// CHECK:                 memref.load %[[VC]]
// CHECK:               %[[L1:.+]] = scf.for %{{.+}} = %{{.+}} to %[[NEW]] {{.+}} iter_args(%{{.+}} = %[[L0]]) -> (f32)
// CHECK:                 math.exp
// CHECK:                 memref.load %[[V]]
// CHECK:               arith.select %{{.+}}, %{{.+}}, %[[L1]] : f32
// CHECK:               math.log %[[L1]]
func.func @extend_nhd(%q: memref<?x8x128xbf16>, %k: memref<?x2x128xbf16>,
    %v: memref<?x2x128xbf16>, %kc: memref<?x16x2x128xbf16>,
    %vc: memref<?x16x2x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>,
    %cl: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<8x?xf32>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x8x128xbf16>)
      k(%k : memref<?x2x128xbf16>) v(%v : memref<?x2x128xbf16>)
      k_cache(%kc : memref<?x16x2x128xbf16>)
      v_cache(%vc : memref<?x16x2x128xbf16>) block_table(%bt : memref<?x?xi32>)
      cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>)
      out(%o : memref<?x8x128xbf16>) lse(%l : memref<8x?xf32>) layout(nhd)
      scale(%scale)
  return
}

// MLA decode: one latent KV head; keys are whole 576-wide cache rows, values
// their first 512 dims, from the same cache.
// CHECK-LABEL: func.func @mla_decode
// CHECK-SAME:    (%[[Q:[^:]+]]: memref<?x16x576xbf16>, %[[C:[^:]+]]: memref<?x16x576xbf16>, %[[BT:[^:]+]]: memref<?x?xi32>
// CHECK:         memref.alloc() : memref<576xf32>
// CHECK:         memref.alloc() : memref<512xf32>
// CHECK:         scf.for
// CHECK:           scf.for %{{.+}} = %{{.+}} to %c576
// CHECK:             memref.load %[[Q]]
// CHECK:           scf.for {{.+}} -> (f32)
// CHECK:             memref.load %[[BT]]
// CHECK:             %[[BLK:.+]] = arith.minsi
// CHECK:             %[[OFF:.+]] = arith.remui %{{.+}}, %c16
// CHECK:             scf.for %[[D:[^ ]+]] = %{{.+}} to %c576{{.*}} iter_args
// CHECK:               memref.load %[[C]][%[[BLK]], %[[OFF]], %[[D]]] : memref<?x16x576xbf16>
// CHECK:           scf.for {{.+}} -> (f32)
// CHECK:             math.exp
// CHECK:             %[[VBLK:.+]] = arith.minsi
// CHECK:             %[[VOFF:.+]] = arith.remui %{{.+}}, %c16
// CHECK:             scf.for %[[D:[^ ]+]] = %{{.+}} to %c512
// CHECK:               memref.load %[[C]][%[[VBLK]], %[[VOFF]], %[[D]]] : memref<?x16x576xbf16>
// CHECK:           math.log
func.func @mla_decode(%q: memref<?x16x576xbf16>, %c: memref<?x16x576xbf16>,
    %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x16x512xbf16>,
    %l: memref<16x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x16x576xbf16>)
      kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%o : memref<?x16x512xbf16>)
      lse(%l : memref<16x?xf32>) scale(%scale)
  return
}

// reshape_and_cache: slots outside [0, NB * BS) (padding, garbage) are
// skipped; the rest are copied element for element into (slot / BS,
// slot % BS).
// CHECK-LABEL: func.func @reshape_and_cache_nhd
// CHECK-SAME:    (%[[K:[^:]+]]: memref<?x2x128xbf16>, %[[V:[^:]+]]: memref<?x2x128xbf16>, %[[KC:[^:]+]]: memref<?x16x2x128xbf16>, %[[VC:[^:]+]]: memref<?x16x2x128xbf16>, %[[SM:[^:]+]]: memref<?xi32>)
// CHECK:         %[[NB:.+]] = arith.minsi
// CHECK:         %[[NSLOTS:.+]] = arith.muli %[[NB]], %c16
// CHECK:         scf.for %[[T:[^ ]+]] =
// CHECK:           %[[S32:.+]] = memref.load %[[SM]][%[[T]]]
// CHECK:           %[[S:.+]] = arith.index_cast %[[S32]] : i32 to index
// CHECK-DAG:       %[[GE:.+]] = arith.cmpi sge, %[[S]]
// CHECK-DAG:       %[[LT:.+]] = arith.cmpi slt, %[[S]], %[[NSLOTS]]
// CHECK:           %[[OK:.+]] = arith.andi %[[GE]], %[[LT]]
// CHECK:           scf.if %[[OK]]
// CHECK:             %[[BLK:.+]] = arith.divui %[[S]], %c16
// CHECK:             %[[OFF:.+]] = arith.remui %[[S]], %c16
// CHECK:             scf.for %[[H:[^ ]+]] = %{{.+}} to %c2
// CHECK:               scf.for %[[D:[^ ]+]] =
// CHECK:                 %[[KE:.+]] = memref.load %[[K]][%[[T]], %[[H]], %[[D]]]
// CHECK:                 memref.store %[[KE]], %[[KC]][%[[BLK]], %[[OFF]], %[[H]], %[[D]]]
// CHECK:               scf.for %[[D:[^ ]+]] =
// CHECK:                 %[[VE:.+]] = memref.load %[[V]][%[[T]], %[[H]], %[[D]]]
// CHECK:                 memref.store %[[VE]], %[[VC]][%[[BLK]], %[[OFF]], %[[H]], %[[D]]]
func.func @reshape_and_cache_nhd(%k: memref<?x2x128xbf16>,
    %v: memref<?x2x128xbf16>, %kc: memref<?x16x2x128xbf16>,
    %vc: memref<?x16x2x128xbf16>, %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x2x128xbf16>)
      v(%v : memref<?x2x128xbf16>) k_cache(%kc : memref<?x16x2x128xbf16>)
      v_cache(%vc : memref<?x16x2x128xbf16>) slot_mapping(%s : memref<?xi32>)
      layout(nhd)
  return
}

// CHECK-LABEL: func.func @reshape_and_cache_shuffled
// CHECK-SAME:    (%[[K:[^:]+]]: memref<?x2x128xf16>, %[[V:[^:]+]]: memref<?x2x128xf16>, %[[KC:[^:]+]]: memref<?x2x16x16x8xf16>, %[[VC:[^:]+]]: memref<?x2x2x128x8xf16>, %{{[^:]+}}: memref<?xi32>)
// CHECK:           scf.if
// CHECK:             %[[BLK:.+]] = arith.divui %{{.+}}, %c16
// CHECK:             %[[OFF:.+]] = arith.remui %{{.+}}, %c16
// CHECK:             scf.for %[[H:[^ ]+]] =
// CHECK:               scf.for %[[D:[^ ]+]] =
// CHECK:                 %[[KE:.+]] = memref.load %[[K]]
// CHECK:                 %[[DHI:.+]] = arith.divui %[[D]], %c8
// CHECK:                 %[[DLO:.+]] = arith.remui %[[D]], %c8
// CHECK:                 memref.store %[[KE]], %[[KC]][%[[BLK]], %[[H]], %[[DHI]], %[[OFF]], %[[DLO]]]
// CHECK:               scf.for %[[D:[^ ]+]] =
// CHECK:                 %[[VE:.+]] = memref.load %[[V]]
// CHECK:                 %[[OHI:.+]] = arith.divui %[[OFF]], %c8
// CHECK:                 %[[OLO:.+]] = arith.remui %[[OFF]], %c8
// CHECK:                 memref.store %[[VE]], %[[VC]][%[[BLK]], %[[H]], %[[OHI]], %[[D]], %[[OLO]]]
func.func @reshape_and_cache_shuffled(%k: memref<?x2x128xf16>,
    %v: memref<?x2x128xf16>, %kc: memref<?x2x16x16x8xf16>,
    %vc: memref<?x2x2x128x8xf16>, %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x2x128xf16>)
      v(%v : memref<?x2x128xf16>) k_cache(%kc : memref<?x2x16x16x8xf16>)
      v_cache(%vc : memref<?x2x2x128x8xf16>) slot_mapping(%s : memref<?xi32>)
      layout(shuffled)
  return
}
