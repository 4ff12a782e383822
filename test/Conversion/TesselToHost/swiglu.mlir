// RUN: tessel-opt %s --tessel-to-host | FileCheck %s

// The host reference of the SwiGLU ops: loops in f32 over the rows.

// act = gate * sigmoid(gate) * up, gate and up the column halves of h.
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME:    (%[[H:[^:]+]]: memref<?x32xf32>, %[[A:[^:]+]]: memref<?x16xf32>)
// CHECK:         scf.for %[[P:[^ ]+]] =
// CHECK:           scf.for %[[N:[^ ]+]] =
// CHECK:             %[[GATE:.+]] = memref.load %[[H]][%[[P]], %[[N]]]
// CHECK:             %[[UPCOL:.+]] = arith.addi %[[N]], %c16
// CHECK:             %[[UP:.+]] = memref.load %[[H]][%[[P]], %[[UPCOL]]]
// CHECK:             math.exp
// CHECK:             %[[S:.+]] = arith.divf
// CHECK:             %[[SILU:.+]] = arith.mulf %[[GATE]], %[[S]]
// CHECK:             %[[ACT:.+]] = arith.mulf %[[SILU]], %[[UP]]
// CHECK:             memref.store %[[ACT]], %[[A]][%[[P]], %[[N]]]
func.func @swiglu(%h: memref<?x32xf32>, %a: memref<?x16xf32>) {
  tessel.swiglu h(%h : memref<?x32xf32>) act(%a : memref<?x16xf32>)
  return
}

// First every dropped slot (position outside [0, R)) gets a zero weight
// gradient; then each sorted row: its weight from sorted_rows (checked
// against T * k), the gradients and <grad, act> summed n = 0..I-1, stored at
// the row's (token, slot); the unplaced tail's rows are zeroed.
// CHECK-LABEL: func.func @swiglu_backward
// CHECK-SAME:    (%[[G:[^:]+]]: memref<?x16xf32>, %[[H:[^:]+]]: memref<2x?x16xf32>, %[[W:[^:]+]]: memref<?x2xf32>, %[[S:[^:]+]]: memref<?xi32>, %[[POS:[^:]+]]: memref<?x2xi32>, %[[DH:[^:]+]]: memref<2x?x16xf32>, %[[AW:[^:]+]]: memref<?x16xf32>, %[[DW:[^:]+]]: memref<?x2xf32>)
// CHECK:         scf.for %[[T:[^ ]+]] =
// CHECK:           scf.for %[[J:[^ ]+]] =
// CHECK:             memref.load %[[POS]][%[[T]], %[[J]]]
// CHECK:             scf.if
// CHECK-NEXT:        } else {
// CHECK:               memref.store %{{.+}}, %[[DW]][%[[T]], %[[J]]]
// CHECK:         scf.for %[[P:[^ ]+]] =
// CHECK:           %[[R:.+]] = memref.load %[[S]][%[[P]]]
// CHECK:           scf.if
// CHECK:             %[[WT:.+]] = memref.load %[[W]]
// CHECK:             %[[DOT:.+]] = scf.for {{.*}} iter_args
// CHECK:               memref.store %{{.+}}, %[[DH]][%c0{{.*}}, %[[P]],
// CHECK:               memref.store %{{.+}}, %[[DH]][%c1{{.*}}, %[[P]],
// CHECK:               memref.store %{{.+}}, %[[AW]][%[[P]],
// CHECK:               scf.yield
// CHECK:             memref.store %[[DOT]], %[[DW]]
// CHECK:           } else {
// CHECK:             memref.store %{{.+}}, %[[DH]][%c0{{.*}}, %[[P]],
// CHECK:             memref.store %{{.+}}, %[[AW]][%[[P]],
func.func @swiglu_backward(%g: memref<?x16xf32>, %h: memref<2x?x16xf32>, %w: memref<?x2xf32>, %s: memref<?xi32>, %p: memref<?x2xi32>, %dh: memref<2x?x16xf32>, %aw: memref<?x16xf32>, %dw: memref<?x2xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x16xf32>) h(%h : memref<2x?x16xf32>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x2xi32>) dh(%dh : memref<2x?x16xf32>) act_weighted(%aw : memref<?x16xf32>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}
