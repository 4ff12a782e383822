// RUN: tessel-opt %s --tessel-to-host | FileCheck %s

// The host lowering of the ragged grouped matmuls: groups walked in order,
// each end clamped to [previous end, rows]; f32 accumulation with the
// innermost loop over contiguous memory and reassociable reduction adds.

// Stacked B with trans_b, [G, N, K]: a dot product along K per output.
// CHECK-LABEL: func.func @grouped_matmul_trans_b
// CHECK-SAME:    (%[[A:[^:]+]]: memref<?x64xbf16>, %[[B:[^:]+]]: memref<8x32x64xbf16>, %[[G:[^:]+]]: memref<8xi32>, %[[C:[^:]+]]: memref<?x32xbf16>)
// CHECK:         %[[ROWS:.+]] = arith.minsi
// CHECK:         %[[LAST:.+]] = scf.for %[[GRP:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[BEGIN:.+]] = %{{.+}}) -> (index)
// CHECK:           %[[OFF:.+]] = memref.load %[[G]][%[[GRP]]] : memref<8xi32>
// CHECK:           %[[OFFI:.+]] = arith.index_cast %[[OFF]] : i32 to index
// CHECK:           %[[LO:.+]] = arith.maxsi %[[OFFI]], %[[BEGIN]] : index
// CHECK:           %[[END:.+]] = arith.minsi %[[LO]], %[[ROWS]] : index
// CHECK:           scf.for %[[T:[^ ]+]] = %[[BEGIN]] to %[[END]]
// CHECK:             scf.for %[[J:[^ ]+]] = %{{.+}} to %c32
// CHECK:               %[[DOT:.+]] = scf.for %[[I:[^ ]+]] = %{{.+}} to %c64 step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}) -> (f32)
// CHECK:                 memref.load %[[A]][%[[T]], %[[I]]] : memref<?x64xbf16>
// CHECK:                 arith.extf
// CHECK:                 memref.load %[[B]][%[[GRP]], %[[J]], %[[I]]] : memref<8x32x64xbf16>
// CHECK:                 arith.extf
// CHECK:                 %[[P:.+]] = arith.mulf %{{.+}}, %{{.+}} fastmath<reassoc,contract> : f32
// CHECK:                 %[[S2:.+]] = arith.addf %[[S]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK:                 scf.yield %[[S2]] : f32
// CHECK:               %[[DOT16:.+]] = arith.truncf %[[DOT]] : f32 to bf16
// CHECK:               memref.store %[[DOT16]], %[[C]][%[[T]], %[[J]]]
// CHECK:           scf.yield %[[END]] : index
// Rows past the last group are zero.
// CHECK:         scf.for %[[T:[^ ]+]] = %[[LAST]] to %[[ROWS]]
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.+}} to %c32
// CHECK:             memref.store %{{.+}}, %[[C]][%[[T]], %[[J]]]
func.func @grouped_matmul_trans_b(%a: memref<?x64xbf16>,
                                  %b: memref<8x32x64xbf16>,
                                  %g: memref<8xi32>,
                                  %c: memref<?x32xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>)
      b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<?x32xbf16>) {trans_b}
  return
}

// Stacked B without trans_b, [G, K, N]: rows of B scaled by a[t, i] are
// added into an f32 row, contiguous along N, then stored.
// CHECK-LABEL: func.func @grouped_matmul
// CHECK-SAME:    (%[[A:[^:]+]]: memref<?x64xbf16>, %[[B:[^:]+]]: memref<8x64x32xbf16>, %[[G:[^:]+]]: memref<8xi32>, %[[C:[^:]+]]: memref<?x32xf32>)
// CHECK:         %[[ACC:.+]] = memref.alloc() : memref<32xf32>
// CHECK:         scf.for %[[GRP:[^ ]+]] =
// CHECK:           scf.for %[[T:[^ ]+]] =
// CHECK:             scf.for %[[J0:[^ ]+]] =
// CHECK:               memref.store %{{.+}}, %[[ACC]][%[[J0]]]
// CHECK:             scf.for %[[I:[^ ]+]] = %{{.+}} to %c64
// CHECK:               memref.load %[[A]][%[[T]], %[[I]]]
// CHECK:               %[[X:.+]] = arith.extf
// CHECK:               scf.for %[[J:[^ ]+]] = %{{.+}} to %c32
// CHECK:                 %[[OLD:.+]] = memref.load %[[ACC]][%[[J]]]
// CHECK:                 memref.load %[[B]][%[[GRP]], %[[I]], %[[J]]] : memref<8x64x32xbf16>
// CHECK:                 %[[Y:.+]] = arith.extf
// CHECK:                 %[[P:.+]] = arith.mulf %[[X]], %[[Y]] fastmath<reassoc,contract> : f32
// CHECK:                 %[[NEW:.+]] = arith.addf %[[OLD]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK:                 memref.store %[[NEW]], %[[ACC]][%[[J]]]
// CHECK:             scf.for %[[J:[^ ]+]] = %{{.+}} to %c32
// CHECK:               %[[V:.+]] = memref.load %[[ACC]][%[[J]]]
// CHECK:               memref.store %[[V]], %[[C]][%[[T]], %[[J]]] : memref<?x32xf32>
// CHECK:         memref.dealloc %[[ACC]]
func.func @grouped_matmul(%a: memref<?x64xbf16>, %b: memref<8x64x32xbf16>,
                          %g: memref<8xi32>, %c: memref<?x32xf32>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>)
      b(%b : memref<8x64x32xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<?x32xf32>)
  return
}

// Pointer table: each group's matrix is read in place through a memref
// built from its address (an LLVM descriptor with the static b_shape).
// The group count is bounded by both the table and the offsets.
// CHECK-LABEL: func.func @grouped_matmul_table
// CHECK-SAME:    (%[[A:[^:]+]]: memref<?x64xbf16>, %[[TABLE:[^:]+]]: memref<?xi64>, %[[G:[^:]+]]: memref<?xi32>, %[[C:[^:]+]]: memref<?x32xbf16>)
// CHECK:         %[[NG_OFF:.+]] = memref.dim %[[G]]
// CHECK:         %[[NG_TABLE:.+]] = memref.dim %[[TABLE]]
// CHECK:         %[[NG:.+]] = arith.minsi %[[NG_OFF]], %[[NG_TABLE]] : index
// CHECK:         scf.for %[[GRP:[^ ]+]] = %{{.+}} to %[[NG]]
// CHECK:           %[[ADDR:.+]] = memref.load %[[TABLE]][%[[GRP]]] : memref<?xi64>
// CHECK:           %[[PTR:.+]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr
// CHECK:           llvm.insertvalue %[[PTR]], %{{.+}}[0]
// CHECK:           llvm.insertvalue %[[PTR]], %{{.+}}[1]
// CHECK:           %[[DESC:.+]] = llvm.insertvalue %{{.+}}[4, 1]
// CHECK:           %[[BG:.+]] = builtin.unrealized_conversion_cast %[[DESC]] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<32x64xbf16>
// CHECK:           scf.for %[[T:[^ ]+]] =
// CHECK:             scf.for %[[J:[^ ]+]] = %{{.+}} to %c32
// CHECK:               scf.for %[[I:[^ ]+]] = %{{.+}} to %c64
// CHECK:                 memref.load %[[A]][%[[T]], %[[I]]]
// CHECK:                 memref.load %[[BG]][%[[J]], %[[I]]] : memref<32x64xbf16>
func.func @grouped_matmul_table(%a: memref<?x64xbf16>, %table: memref<?xi64>,
                                %g: memref<?xi32>, %c: memref<?x32xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%table : memref<?xi64>)
      group_offsets(%g : memref<?xi32>) c(%c : memref<?x32xbf16>)
      {b_shape = array<i64: 32, 64>, trans_b}
  return
}

// Without trans_b the table's matrices are [K, N].
// CHECK-LABEL: func.func @grouped_matmul_table_kn
// CHECK:         builtin.unrealized_conversion_cast %{{.+}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<64x32xf16>
func.func @grouped_matmul_table_kn(%a: memref<?x64xf16>, %table: memref<4xi64>,
                                   %g: memref<4xi32>, %c: memref<?x32xf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xf16>) b(%table : memref<4xi64>)
      group_offsets(%g : memref<4xi32>) c(%c : memref<?x32xf16>)
      {b_shape = array<i64: 64, 32>}
  return
}

// Ragged K: c[g] = sum over the group's rows of a[t]^T b[t], in an f32
// [M, N] accumulator zeroed per group (an empty group writes zeros).
// CHECK-LABEL: func.func @grouped_matmul_wgrad
// CHECK-SAME:    (%[[A:[^:]+]]: memref<?x16xbf16>, %[[B:[^:]+]]: memref<?x32xbf16>, %[[G:[^:]+]]: memref<?xi32>, %[[C:[^:]+]]: memref<?x16x32xf32>)
// CHECK:         %[[ROWS:.+]] = arith.minsi
// CHECK:         %[[NG:.+]] = arith.minsi
// CHECK:         %[[ACC:.+]] = memref.alloc() : memref<16x32xf32>
// CHECK:         scf.for %[[GRP:[^ ]+]] = %{{.+}} to %[[NG]] step %{{.+}} iter_args(%[[BEGIN:.+]] = %{{.+}}) -> (index)
// CHECK:           %[[END:.+]] = arith.minsi %{{.+}}, %[[ROWS]] : index
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               memref.store %{{.+}}, %[[ACC]]
// CHECK:           scf.for %[[T:[^ ]+]] = %[[BEGIN]] to %[[END]]
// CHECK:             scf.for %[[I:[^ ]+]] = %{{.+}} to %c16
// CHECK:               memref.load %[[A]][%[[T]], %[[I]]]
// CHECK:               scf.for %[[J:[^ ]+]] = %{{.+}} to %c32
// CHECK:                 memref.load %[[ACC]][%[[I]], %[[J]]]
// CHECK:                 memref.load %[[B]][%[[T]], %[[J]]]
// CHECK:                 arith.mulf {{.+}} fastmath<reassoc,contract> : f32
// CHECK:                 arith.addf {{.+}} fastmath<reassoc,contract> : f32
// CHECK:                 memref.store %{{.+}}, %[[ACC]][%[[I]], %[[J]]]
// CHECK:           scf.for %[[I:[^ ]+]] = %{{.+}} to %c16
// CHECK:             scf.for %[[J:[^ ]+]] = %{{.+}} to %c32
// CHECK:               %[[V:.+]] = memref.load %[[ACC]][%[[I]], %[[J]]]
// CHECK:               memref.store %[[V]], %[[C]][%[[GRP]], %[[I]], %[[J]]]
// CHECK:         memref.dealloc %[[ACC]]
func.func @grouped_matmul_wgrad(%a: memref<?x16xbf16>, %b: memref<?x32xbf16>,
                                %g: memref<?xi32>, %c: memref<?x16x32xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x16xbf16>)
      b(%b : memref<?x32xbf16>) group_offsets(%g : memref<?xi32>)
      c(%c : memref<?x16x32xf32>)
  return
}
