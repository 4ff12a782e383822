// RUN: tessel-opt %s --tessel-to-host | FileCheck %s

// The host lowering of the MoE routing glue: sequential reference loops over
// the (token, slot) rows; every id, position and row read from a device
// buffer is checked against the buffer it indexes before it is used.

// Counts of in-range ids, then their inclusive scan.
// CHECK-LABEL: func.func @expert_histogram
// CHECK-SAME:    (%[[IDS:[^:]+]]: memref<?x2xi32>, %[[N:[^:]+]]: memref<8xi32>, %[[G:[^:]+]]: memref<8xi32>)
// CHECK:         %[[E:.+]] = arith.minsi
// CHECK:         scf.for %[[E0:[^ ]+]] =
// CHECK:           memref.store %{{.+}}, %[[N]][%[[E0]]]
// CHECK:         scf.for %[[T:[^ ]+]] =
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.+}} to %c2
// CHECK:             %[[ID32:.+]] = memref.load %[[IDS]][%[[T]], %[[J]]]
// CHECK:             %[[ID:.+]] = arith.index_cast %[[ID32]] : i32 to index
// CHECK:             %[[GE:.+]] = arith.cmpi sge, %[[ID]], %{{.+}} : index
// CHECK:             %[[LT:.+]] = arith.cmpi slt, %[[ID]], %[[E]] : index
// CHECK:             %[[OK:.+]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK:             scf.if %[[OK]] {
// CHECK:               memref.load %[[N]][%[[ID]]]
// CHECK:               arith.addi
// CHECK:               memref.store %{{.+}}, %[[N]][%[[ID]]]
// CHECK:         scf.for %[[E1:[^ ]+]] = %{{.+}} to %[[E]] step %{{.+}} iter_args(%[[SUM:.+]] = %{{.+}}) -> (index)
// CHECK:           memref.load %[[N]][%[[E1]]]
// CHECK:           %[[END:.+]] = arith.addi %[[SUM]], %{{.+}} : index
// CHECK:           %[[END32:.+]] = arith.index_cast %[[END]] : index to i32
// CHECK:           memref.store %[[END32]], %[[G]][%[[E1]]]
// CHECK:           scf.yield %[[END]] : index
func.func @expert_histogram(%ids: memref<?x2xi32>, %n: memref<8xi32>,
                            %g: memref<8xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>)
      counts(%n : memref<8xi32>) group_offsets(%g : memref<8xi32>)
  return
}

// A cursor and a clamped limit per expert, then the rows in order (stable):
// row t * k + j goes to its expert's cursor while there is room.
// CHECK-LABEL: func.func @expert_sort
// CHECK-SAME:    (%[[IDS:[^:]+]]: memref<?x2xi32>, %[[G:[^:]+]]: memref<8xi32>, %[[S:[^:]+]]: memref<?xi32>, %[[P:[^:]+]]: memref<?x2xi32>)
// Unfilled tail: -1.
// CHECK:         scf.for %[[R:[^ ]+]] =
// CHECK:           %[[NONE:.+]] = arith.index_cast %c-1 : index to i32
// CHECK:           memref.store %[[NONE]], %[[S]][%[[R]]]
// CHECK:         %[[CURSOR:.+]] = memref.alloc(%{{.+}}) : memref<?xi32>
// CHECK:         %[[LIMIT:.+]] = memref.alloc(%{{.+}}) : memref<?xi32>
// CHECK:         %[[NR:.+]] = memref.dim %[[S]]
// CHECK:         scf.for %[[E:[^ ]+]] = %{{.+}} to %c8 step %{{.+}} iter_args(%[[BEGIN:.+]] = %{{.+}}) -> (index)
// CHECK:           memref.load %[[G]][%[[E]]]
// CHECK:           %[[END:.+]] = arith.minsi %{{.+}}, %[[NR]] : index
// CHECK:           %[[BEGIN32:.+]] = arith.index_cast %[[BEGIN]] : index to i32
// CHECK:           memref.store %[[BEGIN32]], %[[CURSOR]][%[[E]]]
// CHECK:           %[[END32:.+]] = arith.index_cast %[[END]] : index to i32
// CHECK:           memref.store %[[END32]], %[[LIMIT]][%[[E]]]
// CHECK:         scf.for %[[T:[^ ]+]] =
// CHECK:           scf.for %[[J:[^ ]+]] =
// CHECK:             %[[ID32:.+]] = memref.load %[[IDS]][%[[T]], %[[J]]]
// CHECK:             %[[ID:.+]] = arith.index_cast %[[ID32]] : i32 to index
// CHECK:             memref.store %{{.+}}, %[[P]][%[[T]], %[[J]]]
// CHECK:             %[[LT:.+]] = arith.cmpi slt, %[[ID]], %c8 : index
// CHECK:             %[[OK:.+]] = arith.andi %{{.+}}, %[[LT]] : i1
// CHECK:             scf.if %[[OK]] {
// CHECK:               %[[POS32:.+]] = memref.load %[[CURSOR]][%[[ID]]]
// CHECK:               %[[POS:.+]] = arith.index_cast %[[POS32]] : i32 to index
// CHECK:               %[[LIM32:.+]] = memref.load %[[LIMIT]][%[[ID]]]
// CHECK:               %[[LIM:.+]] = arith.index_cast %[[LIM32]] : i32 to index
// CHECK:               %[[ROOM:.+]] = arith.cmpi slt, %[[POS]], %[[LIM]] : index
// CHECK:               scf.if %[[ROOM]] {
// CHECK:                 %[[TK:.+]] = arith.muli %[[T]], %c2 : index
// CHECK:                 %[[ROW:.+]] = arith.addi %[[TK]], %[[J]] : index
// CHECK:                 %[[ROW32:.+]] = arith.index_cast %[[ROW]] : index to i32
// CHECK:                 memref.store %[[ROW32]], %[[S]][%[[POS]]]
// CHECK:                 %[[POSOUT:.+]] = arith.index_cast %[[POS]] : index to i32
// CHECK:                 memref.store %[[POSOUT]], %[[P]][%[[T]], %[[J]]]
// CHECK:                 %[[NEXT:.+]] = arith.addi %[[POS]], %{{.+}} : index
// CHECK:                 %[[NEXT32:.+]] = arith.index_cast %[[NEXT]] : index to i32
// CHECK:                 memref.store %[[NEXT32]], %[[CURSOR]][%[[ID]]]
// CHECK:         memref.dealloc %[[CURSOR]]
// CHECK:         memref.dealloc %[[LIMIT]]
func.func @expert_sort(%ids: memref<?x2xi32>, %g: memref<8xi32>,
                       %s: memref<?xi32>, %p: memref<?x2xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x2xi32>)
      group_offsets(%g : memref<8xi32>) sorted_rows(%s : memref<?xi32>)
      row_positions(%p : memref<?x2xi32>)
  return
}

// A row in [0, T * topk) copies token row / topk (no conversion); any other
// entry gives a zero row.
// CHECK-LABEL: func.func @moe_permute
// CHECK-SAME:    (%[[X:[^:]+]]: memref<?x64xbf16>, %[[S:[^:]+]]: memref<?xi32>, %[[O:[^:]+]]: memref<?x64xbf16>)
// CHECK:         %[[T:.+]] = memref.dim %[[X]]
// CHECK:         %[[NROWS:.+]] = arith.muli %[[T]], %c2 : index
// CHECK:         scf.for %[[P:[^ ]+]] =
// CHECK:           %[[ROW32:.+]] = memref.load %[[S]][%[[P]]]
// CHECK:           %[[ROW:.+]] = arith.index_cast %[[ROW32]] : i32 to index
// CHECK:           %[[GE:.+]] = arith.cmpi sge, %[[ROW]], %{{.+}} : index
// CHECK:           %[[LT:.+]] = arith.cmpi slt, %[[ROW]], %[[NROWS]] : index
// CHECK:           %[[OK:.+]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK:           scf.if %[[OK]] {
// CHECK:             %[[TOK:.+]] = arith.divui %[[ROW]], %c2 : index
// CHECK:             scf.for %[[H:[^ ]+]] = %{{.+}} to %c64
// CHECK-NEXT:          %[[V:.+]] = memref.load %[[X]][%[[TOK]], %[[H]]] : memref<?x64xbf16>
// CHECK-NEXT:          memref.store %[[V]], %[[O]][%[[P]], %[[H]]] : memref<?x64xbf16>
// CHECK:           } else {
// CHECK:             scf.for %[[H:[^ ]+]] = %{{.+}} to %c64
// CHECK:               memref.store %{{.+}}, %[[O]][%[[P]], %[[H]]]
func.func @moe_permute(%x: memref<?x64xbf16>, %s: memref<?xi32>,
                       %o: memref<?x64xbf16>) {
  tessel.moe_permute x(%x : memref<?x64xbf16>) sorted_rows(%s : memref<?xi32>)
      out(%o : memref<?x64xbf16>) {topk = 2 : i64}
  return
}

// Each token's row summed in f32, slots j = 0..k-1 in order, with no
// fastmath (the order is defined); out-of-range positions are skipped.
// CHECK-LABEL: func.func @moe_unpermute
// CHECK-SAME:    (%[[Y:[^:]+]]: memref<?x64xbf16>, %[[P:[^:]+]]: memref<?x2xi32>, %[[W:[^:]+]]: memref<?x2xf32>, %[[O:[^:]+]]: memref<?x64xbf16>)
// CHECK:         %[[R:.+]] = memref.dim %[[Y]]
// CHECK:         %[[ACC:.+]] = memref.alloc() : memref<64xf32>
// CHECK:         scf.for %[[T:[^ ]+]] =
// CHECK:           scf.for %[[H0:[^ ]+]] =
// CHECK:             memref.store %{{.+}}, %[[ACC]][%[[H0]]]
// CHECK:           scf.for %[[J:[^ ]+]] =
// CHECK:             %[[ROW32:.+]] = memref.load %[[P]][%[[T]], %[[J]]]
// CHECK:             %[[ROW:.+]] = arith.index_cast %[[ROW32]] : i32 to index
// CHECK:             %[[LT:.+]] = arith.cmpi slt, %[[ROW]], %[[R]] : index
// CHECK:             %[[OK:.+]] = arith.andi %{{.+}}, %[[LT]] : i1
// CHECK:             scf.if %[[OK]] {
// CHECK:               %[[WT:.+]] = memref.load %[[W]][%[[T]], %[[J]]] : memref<?x2xf32>
// CHECK:               scf.for %[[H:[^ ]+]] = %{{.+}} to %c64
// CHECK:                 %[[OLD:.+]] = memref.load %[[ACC]][%[[H]]]
// CHECK:                 %[[Y16:.+]] = memref.load %[[Y]][%[[ROW]], %[[H]]]
// CHECK:                 %[[YV:.+]] = arith.extf %[[Y16]] : bf16 to f32
// CHECK:                 %[[PROD:.+]] = arith.mulf %[[WT]], %[[YV]] : f32
// CHECK:                 %[[NEW:.+]] = arith.addf %[[OLD]], %[[PROD]] : f32
// CHECK:                 memref.store %[[NEW]], %[[ACC]][%[[H]]]
// CHECK:           scf.for %[[H:[^ ]+]] = %{{.+}} to %c64
// CHECK:             %[[V:.+]] = memref.load %[[ACC]][%[[H]]]
// CHECK:             %[[V16:.+]] = arith.truncf %[[V]] : f32 to bf16
// CHECK:             memref.store %[[V16]], %[[O]][%[[T]], %[[H]]]
// CHECK:         memref.dealloc %[[ACC]]
func.func @moe_unpermute(%y: memref<?x64xbf16>, %p: memref<?x2xi32>,
                         %w: memref<?x2xf32>, %o: memref<?x64xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x64xbf16>)
      row_positions(%p : memref<?x2xi32>) weights(%w : memref<?x2xf32>)
      out(%o : memref<?x64xbf16>)
  return
}

// 16-bit weights are widened like the rows.
// CHECK-LABEL: func.func @moe_unpermute_bf16_weights
// CHECK:         %[[W16:.+]] = memref.load %{{.+}} : memref<?x2xbf16>
// CHECK:         %[[WT:.+]] = arith.extf %[[W16]] : bf16 to f32
// CHECK:         arith.mulf %[[WT]], %{{.+}} : f32
func.func @moe_unpermute_bf16_weights(%y: memref<?x64xbf16>,
                                      %p: memref<?x2xi32>,
                                      %w: memref<?x2xbf16>,
                                      %o: memref<?x64xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x64xbf16>)
      row_positions(%p : memref<?x2xi32>) weights(%w : memref<?x2xbf16>)
      out(%o : memref<?x64xbf16>)
  return
}
