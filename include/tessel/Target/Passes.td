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

def TesselTensorMapParams : Pass<"tessel-tensor-map-params", "ModuleOp"> {
  let summary = "Pass the TMA tensor maps of sm_90a kernels by value";
  let description = [{
    Runs after `convert-gpu-to-nvvm`. A kernel that lists tensor maps
    (`tessel.tensor_maps`, written by the sm_90a templates) takes them as its
    last parameters, generic pointers until here; this pass makes each one a
    128-byte, 64-byte aligned by-value parameter in the kernel parameter
    space (`llvm.byval`, `nvvm.grid_constant`): what CUDA's
    `const __grid_constant__ CUtensorMap` is, and what TMA copies read from.
    A gpu.func cannot carry these attributes, and byval without
    grid_constant would copy the map to local memory, where TMA cannot read
    it.

    Post-condition: every tensor-map parameter is a grid-constant byval
    parameter of 128 bytes.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def TesselAMDGPUNoIEEE : Pass<"tessel-amdgpu-no-ieee", "ModuleOp"> {
  let summary = "Run the AMD kernels with the IEEE mode bit off";
  let description = [{
    Runs after `convert-gpu-to-rocdl`: every `rocdl.kernel` gets the LLVM
    function attribute `"amdgpu-ieee"="false"`. In IEEE mode (the default
    for compute kernels) min and max must quiet signaling NaNs, so the back
    end puts a `v_max_f32 x, x` before every operand it cannot prove
    canonical (a loaded score, a DPP move's result), and a DPP move whose
    result is so canonicalized cannot fold into the max that uses it. No
    Tessel kernel depends on signaling-NaN quieting; maxnum keeps its
    meaning for every other input (AMDGPU usage guide, "IEEE mode").

    Post-condition: every AMD kernel has `amdgpu-ieee` = `false` among its
    passthrough attributes.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TesselLoopAnnotations : Pass<"tessel-loop-annotations", "ModuleOp"> {
  let summary = "Turn scf.for loop annotations into LLVM loop metadata";
  let description = [{
    Runs after the conversion to the LLVM dialect. `convert-scf-to-cf`
    copies an `scf.for`'s `llvm.loop_annotation` attribute to the loop's
    back edge as a discardable attribute, which the translation to LLVM IR
    ignores; this pass makes it the branch's own `loop_annotation`, so it
    becomes the loop's `!llvm.loop` metadata. The kernels' tile loops carry
    `unroll = <disable = true>`: on CDNA a short constant trip count (the
    MoE down projection's K = 512 is 4 pairs of tiles) was otherwise
    unrolled whole. In the ROCDL pipeline only: NVPTX would write the
    annotation as `.pragma "nounroll"`, taking the choice from ptxas.

    Post-condition: no operation has a discardable `llvm.loop_annotation`;
    every such annotation of an `llvm.br` / `llvm.cond_br` is its
    `loop_annotation`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TesselLoadsToSharedScopes
    : Pass<"tessel-loads-to-shared-scopes", "ModuleOp"> {
  let summary = "Tell the AMD back end that LDS reads do not alias the "
                "loads to LDS";
  let description = [{
    Runs after the conversion to the LLVM dialect. In every function with
    loads to LDS (`rocdl.raw.ptr.buffer.load.lds`, gfx950's 16-byte global
    loads into shared memory), those loads get one alias scope and every
    LDS read (`llvm.load` from address space 3, `rocdl.ds.read.tr*`) is
    `noalias` with it. The back end does not order those loads against
    reads by their data, only by the memory they may touch: without the
    scopes it waited for every load to LDS in flight (`s_waitcnt
    vmcnt(0)`) before the next read of any stage, so a tile's loads could
    not overlap the compute of the tile before it. What keeps a read after
    the loads into its stage is the kernel's own wait (`s_waitcnt vmcnt`)
    and workgroup barrier between them, which stay fences for the back end;
    in the barrier interval in which a stage is loaded no wave reads it.
    LDS writes keep their ordering against the loads.

    Post-condition: every `rocdl.raw.ptr.buffer.load.lds` of a function
    has the function's alias scope; every LDS read of that function has it
    among its `noalias` scopes.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TesselHsaco : Pass<"tessel-hsaco", "ModuleOp"> {
  let summary = "Add an hsaco built from the AMDGCN assembly of every "
                "gpu.binary";
  let description = [{
    Runs after `gpu-module-to-binary{format=isa}` on ROCDL gpu.modules. For
    every `gpu.binary` with a `#rocdl.target` assembly object, assembles the
    AMDGCN text in-process (LLVM MC) and links it with `ld.lld -shared` into
    a code object (hsaco) that the HIP module API loads, appended as a
    second object of format `bin`. The assembly stays, for inspection (the
    lit checks read it; the bundle holds only the hsaco).

    `lld` names the linker; empty means the ld.lld of the LLVM install this
    build used (lld-22). Unlike the ROCm toolchain's own serialization, no
    ROCm installation is needed.

    Post-condition: every ROCDL assembly gpu.binary also holds an hsaco.
  }];
  let options = [
    Option<"lld", "lld", "std::string", /*default=*/"\"\"",
           "ld.lld to link with (empty: the LLVM install's)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::ROCDL::ROCDLDialect"];
}

def TesselEmulateGPU : Pass<"tessel-emulate-gpu", "ModuleOp"> {
  let summary = "Turn GPU kernels into host code that the runtime's emulator "
                "runs lane by lane";
  let description = [{
    Runs where the GPU pipelines would serialize: on gpu.modules whose
    kernels are LLVM-dialect functions with ROCDL (gfx942, gfx950) or NVVM
    (sm80) ops, the IR the AMDGPU and NVPTX back ends would compile. Each
    kernel leaves its gpu.module as a host function run once per work-item
    by the runtime's emulator (runtime/src/emulator; the contract is
    runtime/include/tessel/emulator_abi.h):

    - `@<kernel>(params: !llvm.ptr, lane: !llvm.ptr)` loads the parameters
      as host kernels do and calls the kernel's body with the lane;
    - work-item and workgroup ids are read from the lane; the workgroup
      memory (LDS / shared) global becomes the lane's `shared` buffer, and
      every pointer loses its address space;
    - every intrinsic that involves other lanes or hardware state (barriers,
      ds_swizzle, ds_bpermute, permlane swaps, ballots, mbcnt,
      readfirstlane, wave barriers, raw buffer loads (the resource a slot
      of the lane's frame), MFMA,
      shfl.sync, vote, mma.sync, ldmatrix, cp.async and its groups) becomes
      a call through the lane's op table with an I/O record;
    - the hardware exp2/log2 approximations become LLVM's exact exp2/log2;
      s_waitcnt and s_sched_barrier become nothing.

    Any other target op is an error naming it: an intrinsic the emulator
    does not model is never skipped.

    Post-condition: no gpu.module, no ROCDL/NVVM op, no non-zero address
    space; the module is ready for the host object emitter.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TESSEL_TARGET_PASSES_TD
