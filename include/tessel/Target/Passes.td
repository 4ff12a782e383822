//===- Passes.td - Tessel target (serialization) passes ----*- tablegen -*-===//
#ifndef TESSEL_TARGET_PASSES_TD
#define TESSEL_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def TesselPtxas : Pass<"tessel-ptxas", "ModuleOp"> {
  let summary = "Add a cubin built by ptxas to every gpu.binary holding PTX";
  let description = [{
    Runs after `gpu-module-to-binary{format=isa}`. For every `gpu.binary`
    with an NVVM PTX object, assembles that PTX with ptxas for `arch` and
    appends the cubin as a second object (`#nvvm.target<chip = arch>`,
    format `bin`), so one binary carries the PTX (JIT on any newer GPU) and
    the cubin (no JIT on `arch`). sm_80 cubins do not run on sm_90, hence
    the default.

    ptxas is looked up in `toolkit`/bin, `$CUDA_HOME`/bin, `$CUDA_ROOT`/bin,
    /usr/local/cuda/bin, then PATH. When none is found the pass warns and
    leaves the binaries alone, unless `required` is set. With `verbose`,
    ptxas's resource report (registers, spills, shared memory) is attached
    to each binary as a remark.

    Post-condition: every PTX gpu.binary also holds an `arch` cubin (when
    ptxas was found).
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"",
           "ptxas -arch (the GPU the cubin is for)">,
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "CUDA toolkit folder whose bin/ holds ptxas">,
    Option<"required", "required", "bool", /*default=*/"false",
           "Fail when ptxas is not found instead of skipping">,
    Option<"verbose", "verbose", "bool", /*default=*/"false",
           "Report ptxas -v resource usage as remarks">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // TESSEL_TARGET_PASSES_TD
