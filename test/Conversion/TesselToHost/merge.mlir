// RUN: tessel-opt %s --tessel-to-host | FileCheck %s

// The host lowering of the LSE merges: per (token, head), weights from the
// LSEs (+inf read as -inf; the exponents shifted by 0 when every partial is
// empty, so no NaN), then one loop over the head dim.

// Two-way merge, mixed input types, 16-bit output.
// CHECK-LABEL: func.func @lse_merge
// CHECK-SAME:    (%[[OA:[^:]+]]: memref<?x4x64xf32>, %[[LA:[^:]+]]: memref<4x?xf32>, %[[OB:[^:]+]]: memref<?x4x64xbf16>, %[[LB:[^:]+]]: memref<4x?xf32>, %[[O:[^:]+]]: memref<?x4x64xbf16>, %[[LO:[^:]+]]: memref<4x?xf32>)
// The token loop stays inside every token count.
// CHECK:         arith.minsi
// CHECK:         arith.minsi
// CHECK:         arith.minsi
// CHECK:         arith.minsi
// CHECK:         %[[T_END:.+]] = arith.minsi
// CHECK:         scf.for %[[T:[^ ]+]] = %{{.+}} to %[[T_END]]
// CHECK:           scf.for %[[H:[^ ]+]] = %{{.+}} to %c4
// CHECK:             %[[A_RAW:.+]] = memref.load %[[LA]][%[[H]], %[[T]]]
// CHECK:             %[[A_INF:.+]] = arith.cmpf oeq, %[[A_RAW]], %{{.+}} : f32
// CHECK:             %[[A:.+]] = arith.select %[[A_INF]], %{{.+}}, %[[A_RAW]] : f32
// CHECK:             %[[B_RAW:.+]] = memref.load %[[LB]][%[[H]], %[[T]]]
// CHECK:             %[[B_INF:.+]] = arith.cmpf oeq, %[[B_RAW]], %{{.+}} : f32
// CHECK:             %[[B:.+]] = arith.select %[[B_INF]], %{{.+}}, %[[B_RAW]] : f32
// CHECK:             %[[MAX:.+]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK:             %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:             %[[EMPTY:.+]] = arith.cmpf oeq, %[[MAX]], %[[NEG_INF]] : f32
// CHECK:             %[[SHIFT:.+]] = arith.select %[[EMPTY]], %{{.+}}, %[[MAX]] : f32
// CHECK:             %[[DA:.+]] = arith.subf %[[A]], %[[SHIFT]] : f32
// CHECK:             %[[WA:.+]] = math.exp %[[DA]] : f32
// CHECK:             %[[DB:.+]] = arith.subf %[[B]], %[[SHIFT]] : f32
// CHECK:             %[[WB:.+]] = math.exp %[[DB]] : f32
// CHECK:             %[[SUM:.+]] = arith.addf %[[WA]], %[[WB]] : f32
// CHECK:             scf.for %[[D:[^ ]+]] = %{{.+}} to %c64
// CHECK:               %[[XA:.+]] = memref.load %[[OA]][%[[T]], %[[H]], %[[D]]] : memref<?x4x64xf32>
// CHECK:               %[[XB16:.+]] = memref.load %[[OB]][%[[T]], %[[H]], %[[D]]] : memref<?x4x64xbf16>
// CHECK:               %[[XB:.+]] = arith.extf %[[XB16]] : bf16 to f32
// An empty partial contributes 0, not 0 * (whatever its output holds).
// CHECK:               %[[ZA:.+]] = arith.cmpf oeq, %[[WA]], %{{.+}} : f32
// CHECK:               %[[MA:.+]] = arith.mulf %[[XA]], %[[WA]] : f32
// CHECK:               %[[PA:.+]] = arith.select %[[ZA]], %{{.+}}, %[[MA]] : f32
// CHECK:               %[[ZB:.+]] = arith.cmpf oeq, %[[WB]], %{{.+}} : f32
// CHECK:               %[[MB:.+]] = arith.mulf %[[XB]], %[[WB]] : f32
// CHECK:               %[[PB:.+]] = arith.select %[[ZB]], %{{.+}}, %[[MB]] : f32
// CHECK:               %[[NUM:.+]] = arith.addf %[[PA]], %[[PB]] : f32
// CHECK:               %[[MERGED:.+]] = arith.divf %[[NUM]], %[[SUM]] : f32
// Both partials empty: out = o_a.
// CHECK:               %[[OUT:.+]] = arith.select %[[EMPTY]], %[[XA]], %[[MERGED]] : f32
// CHECK:               %[[OUT16:.+]] = arith.truncf %[[OUT]] : f32 to bf16
// CHECK:               memref.store %[[OUT16]], %[[O]][%[[T]], %[[H]], %[[D]]]
// Both empty: 0 + log(0) = -inf.
// CHECK:             %[[LOG:.+]] = math.log %[[SUM]] : f32
// CHECK:             %[[LSE:.+]] = arith.addf %[[SHIFT]], %[[LOG]] : f32
// CHECK:             memref.store %[[LSE]], %[[LO]][%[[H]], %[[T]]]
func.func @lse_merge(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>,
                     %ob: memref<?x4x64xbf16>, %lb: memref<4x?xf32>,
                     %o: memref<?x4x64xbf16>, %lo: memref<4x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>)
      b(%ob : memref<?x4x64xbf16>, %lb : memref<4x?xf32>)
      out(%o : memref<?x4x64xbf16>) lse_out(%lo : memref<4x?xf32>)
  return
}

// In place: each element of o_a is read before the same element is
// written, and lse_a is written after both LSEs were read.
// CHECK-LABEL: func.func @lse_merge_in_place
// CHECK-SAME:    (%[[OA:[^:]+]]: memref<?x4x64xf32>, %[[LA:[^:]+]]: memref<4x?xf32>,
// CHECK:         scf.for %[[T:[^ ]+]] =
// CHECK:           scf.for %[[H:[^ ]+]] =
// CHECK:             memref.load %[[LA]][%[[H]], %[[T]]]
// CHECK:             memref.load
// CHECK:             scf.for %[[D:[^ ]+]] =
// CHECK:               memref.load %[[OA]][%[[T]], %[[H]], %[[D]]]
// CHECK:               memref.load
// CHECK:               memref.store %{{.+}}, %[[OA]][%[[T]], %[[H]], %[[D]]]
// CHECK-NEXT:        }
// CHECK:             memref.store %{{.+}}, %[[LA]][%[[H]], %[[T]]]
func.func @lse_merge_in_place(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>,
                              %ob: memref<?x4x64xf32>, %lb: memref<4x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>)
      b(%ob : memref<?x4x64xf32>, %lb : memref<4x?xf32>)
      out(%oa : memref<?x4x64xf32>) lse_out(%la : memref<4x?xf32>)
  return
}

// Without lse_out no LSE is computed.
// CHECK-LABEL: func.func @lse_merge_no_lse_out
// CHECK:         arith.divf
// CHECK-NOT:     math.log
// CHECK:         return
func.func @lse_merge_no_lse_out(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>,
                                %ob: memref<?x4x64xf32>, %lb: memref<4x?xf32>,
                                %o: memref<?x4x64xf32>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>)
      b(%ob : memref<?x4x64xf32>, %lb : memref<4x?xf32>)
      out(%o : memref<?x4x64xf32>)
  return
}

// N-way: max over partials, then one pass accumulating the weighted
// partial rows into an f32 row, then out = acc / sum (0 when all empty).
// CHECK-LABEL: func.func @lse_merge_n
// CHECK-SAME:    (%[[P:[^:]+]]: memref<?x?x4x64xf32>, %[[PL:[^:]+]]: memref<?x4x?xf32>, %[[O:[^:]+]]: memref<?x4x64xbf16>, %[[LO:[^:]+]]: memref<4x?xf32>)
// CHECK:         %[[NP:.+]] = arith.minsi
// CHECK:         %[[ACC:.+]] = memref.alloc() : memref<64xf32>
// CHECK:         scf.for %[[T:[^ ]+]] =
// CHECK:           scf.for %[[H:[^ ]+]] = %{{.+}} to %c4
// CHECK:             %[[MAX:.+]] = scf.for %[[I:[^ ]+]] = %{{.+}} to %[[NP]] step %{{.+}} iter_args(%[[M:.+]] = %{{.+}}) -> (f32)
// CHECK:               memref.load %[[PL]][%[[I]], %[[H]], %[[T]]]
// CHECK:               %[[NEXT:.+]] = arith.maximumf %[[M]], %{{.+}} : f32
// CHECK:               scf.yield %[[NEXT]] : f32
// CHECK:             %[[EMPTY:.+]] = arith.cmpf oeq, %[[MAX]], %{{.+}} : f32
// CHECK:             %[[SHIFT:.+]] = arith.select %[[EMPTY]], %{{.+}}, %[[MAX]] : f32
// CHECK:             scf.for %[[D0:[^ ]+]] = %{{.+}} to %c64
// CHECK:               memref.store %{{.+}}, %[[ACC]][%[[D0]]]
// CHECK:             %[[SUM:.+]] = scf.for %[[I:[^ ]+]] = %{{.+}} to %[[NP]] step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}) -> (f32)
// CHECK:               memref.load %[[PL]][%[[I]], %[[H]], %[[T]]]
// CHECK:               %[[DIFF:.+]] = arith.subf %{{.+}}, %[[SHIFT]] : f32
// CHECK:               %[[W:.+]] = math.exp %[[DIFF]] : f32
// An empty partial is skipped, whatever its output holds.
// CHECK:               %[[NONEMPTY:.+]] = arith.cmpf ogt, %[[W]], %{{.+}} : f32
// CHECK:               scf.if %[[NONEMPTY]]
// CHECK:                 scf.for %[[D:[^ ]+]] = %{{.+}} to %c64
// CHECK:                   %[[X:.+]] = memref.load %[[P]][%[[I]], %[[T]], %[[H]], %[[D]]]
// CHECK:                   %[[WX:.+]] = arith.mulf %[[W]], %[[X]] : f32
// CHECK:                   %[[OLD:.+]] = memref.load %[[ACC]][%[[D]]]
// CHECK:                   %[[NEW:.+]] = arith.addf %[[OLD]], %[[WX]] : f32
// CHECK:                   memref.store %[[NEW]], %[[ACC]][%[[D]]]
// CHECK:               %[[S2:.+]] = arith.addf %[[S]], %[[W]] : f32
// CHECK:               scf.yield %[[S2]] : f32
// CHECK:             scf.for %[[D:[^ ]+]] = %{{.+}} to %c64
// CHECK:               %[[A:.+]] = memref.load %[[ACC]][%[[D]]]
// CHECK:               %[[MERGED:.+]] = arith.divf %[[A]], %[[SUM]] : f32
// CHECK:               %[[OUT:.+]] = arith.select %[[EMPTY]], %{{.+}}, %[[MERGED]] : f32
// CHECK:               arith.truncf %[[OUT]] : f32 to bf16
// CHECK:               memref.store %{{.+}}, %[[O]][%[[T]], %[[H]], %[[D]]]
// CHECK:             %[[LOG:.+]] = math.log %[[SUM]] : f32
// CHECK:             %[[LSE:.+]] = arith.addf %[[SHIFT]], %[[LOG]] : f32
// CHECK:             memref.store %[[LSE]], %[[LO]][%[[H]], %[[T]]]
// CHECK:         memref.dealloc %[[ACC]]
func.func @lse_merge_n(%p: memref<?x?x4x64xf32>, %pl: memref<?x4x?xf32>,
                       %o: memref<?x4x64xbf16>, %lo: memref<4x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x4x64xf32>,
                              %pl : memref<?x4x?xf32>)
      out(%o : memref<?x4x64xbf16>) lse_out(%lo : memref<4x?xf32>)
  return
}
