//===- tessel-aot.cpp - Ahead-of-time kernel bundle compiler --------------===//
//
// Compiles a kernel spec (an .mlir file whose public functions are kernels:
// one tessel op each) — or, with no input, the embedded default kernel set —
// for each requested target, and writes one kernel bundle.
//
//   tessel-aot [spec.mlir] -o kernels.tsb --targets=host
//
//===----------------------------------------------------------------------===//

#include "tessel/Conversion/Utils/KernelParams.h"
#include "tessel/Dialect/Tessel/IR/KernelSignature.h"
#include "tessel/Dialect/Tessel/IR/TesselOps.h"
#include "tessel/Pipelines/Pipelines.h"
#include "tessel/Target/HostObject.h"
#include "tessel/Target/Passes.h"
#include "tessel/bundle.hpp"
#include "tessel/emulator_abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tessel;
namespace cl = llvm::cl;
namespace bundle = ::tessel::bundle;

/// The embedded default kernel set (tools/tessel-aot/DefaultKernels.mlir).
static const char kDefaultKernels[] =
#include "DefaultKernels.inc"
    ;

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[kernel spec .mlir]"),
                                      cl::init(""));
static cl::opt<std::string> outputFile("o", cl::desc("Bundle to write"),
                                       cl::value_desc("file"),
                                       cl::init("tessel-kernels.tsb"));
static cl::opt<std::string>
    targetList("targets",
               cl::desc("Comma-separated targets (host; sm80: "
                        "PTX for every sm80+ GPU; sm90: the same "
                        "code as an sm_90 cubin, needs ptxas; "
                        "sm90a: Hopper's wgmma/TMA main loops "
                        "where a template has one, an sm_90a "
                        "cubin for compute capability 9.0, needs "
                        "ptxas; gfx942, gfx950: hsaco; "
                        "emu-gfx942, emu-gfx950, emu-sm80: "
                        "that chip's kernels as host code the "
                        "runtime's emulator runs lane by lane)"),
               cl::init("host"));
static cl::opt<int64_t> chunkTokens(
    "chunk-tokens", cl::desc("Extend: cached-context tokens per chunk"),
    cl::init(32768));
static cl::opt<int64_t>
    splitKvTokens("split-kv-tokens",
                  cl::desc("Decode: context tokens per split-KV partial (0: "
                           "no split)"),
                  cl::init(16384));
static cl::opt<bool> noDecompose("no-decompose",
                                 cl::desc("Lower extend and decode directly"),
                                 cl::init(false));
static cl::opt<std::string>
    hostCpu("host-cpu",
            cl::desc("x86-64 level of host code: x86-64, x86-64-v2, "
                     "x86-64-v3 (default) or x86-64-v4"),
            cl::init("x86-64-v3"));
static cl::opt<std::string> lldPath("lld", cl::desc("ld.lld to link host "
                                                    "kernels and hsaco with"),
                                    cl::init(""));
static cl::opt<std::string>
    cudaToolkit("cuda-toolkit", cl::desc("CUDA toolkit folder (its bin/ptxas "
                                         "builds sm90 and sm90a cubins)"),
                cl::init(""));
static cl::opt<bool> quiet("quiet",
                           cl::desc("Print no kernel table and no notes"),
                           cl::init(false));
static cl::opt<bool> skipUnsupported(
    "skip-unsupported",
    cl::desc("Leave out, with a note, the GPU kernels of a spec that have no "
             "template for a target (f32 attention, say) instead of failing "
             "(the embedded set always does)"),
    cl::init(false));

namespace {

tessel_dtype toBundleDtype(Type t) {
  if (t.isF32())
    return TESSEL_DTYPE_F32;
  if (t.isF16())
    return TESSEL_DTYPE_F16;
  if (t.isBF16())
    return TESSEL_DTYPE_BF16;
  if (t.isSignlessInteger(32))
    return TESSEL_DTYPE_I32;
  if (t.isSignlessInteger(64))
    return TESSEL_DTYPE_I64;
  return TESSEL_DTYPE_INVALID;
}

/// The bundle record of a kernel, without its binary.
bundle::Kernel describeKernel(StringRef name, const KernelSignature &sig,
                              StringRef target) {
  bundle::Kernel k;
  k.name = name.str();
  k.op = sig.op->getName().getStringRef().str();
  k.target = target.str();
  k.entry = name.str();
  for (const KernelArg &arg : sig.args) {
    bundle::Arg a;
    a.name = arg.name;
    a.dtype = toBundleDtype(arg.elementType());
    a.isOutput = arg.isOutput;
    a.elementwise = arg.elementwise;
    for (const KernelDim &d : arg.dims)
      a.dims.push_back(d.symbol < 0
                           ? bundle::Dim::constant(d.constant)
                           : bundle::Dim::symbol(d.symbol, d.mul, d.add));
    // The kernel's dtype is that of its first float operand.
    if (k.dtype == TESSEL_DTYPE_INVALID && !arg.isScalar() &&
        isa<FloatType>(arg.elementType()))
      k.dtype = a.dtype;
    k.args.push_back(std::move(a));
  }
  if (k.dtype == TESSEL_DTYPE_INVALID)
    k.dtype = k.args.front().dtype;
  k.symbols.assign(sig.symbols.begin(), sig.symbols.end());
  k.params.assign(sig.params.begin(), sig.params.end());
  return k;
}

/// Compiles one kernel function for the host.
FailureOr<std::vector<uint8_t>> compileForHost(func::FuncOp func) {
  OpBuilder b(func.getContext());
  OwningOpRef<ModuleOp> module = ModuleOp::create(func.getLoc());
  b.setInsertionPointToStart(module->getBody());
  b.clone(*func);

  PassManager pm(func.getContext());
  HostPipelineOptions options;
  options.decompose = !noDecompose;
  options.chunkTokens = chunkTokens;
  options.splitKvTokens = splitKvTokens;
  buildHostPipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();
  HostObjectOptions objectOptions;
  objectOptions.cpu = hostCpu;
  objectOptions.lldPath = lldPath;
  return emitHostSharedObject(*module, objectOptions);
}

/// A GPU kernel: its launch geometry, tensor maps and binaries (NVIDIA:
/// sm80 PTX and the sm_90 cubin ptxas made of it when asked for, or the
/// sm_90a cubin; AMD: the hsaco; emulated: the host shared object).
struct GPUKernel {
  std::array<bundle::Dim, 3> grid;
  std::array<uint32_t, 3> gridDiv = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<bundle::TensorMap> tensorMaps;
  std::vector<uint8_t> assembly, binary;
};

/// How a bundle target is compiled: "nvidia" (sm80 PTX, plus an sm_90
/// cubin of it: the targets sm80 and sm90), "sm90a", an AMD chip, or an
/// emulated target (its own name).
StringRef compilationOf(StringRef target) {
  return target == "sm80" || target == "sm90" ? StringRef("nvidia") : target;
}

/// The chip an emulated target runs the kernels of ("" for other targets).
StringRef emulatedChip(StringRef target) {
  return llvm::StringSwitch<StringRef>(target)
      .Case("emu-gfx942", "gfx942")
      .Case("emu-gfx950", "gfx950")
      .Case("emu-sm80", "sm_80")
      .Default("");
}

/// Compiles one kernel function for a compilation of compilationOf. With
/// `unsupported` set, diagnostics are collected there instead of printed:
/// the default set holds kernels whose GPU templates do not exist yet.
FailureOr<GPUKernel> compileForGPU(func::FuncOp func, StringRef compilation,
                                   bool cubin, std::string *unsupported) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(func.getLoc());
  b.setInsertionPointToStart(module->getBody());
  b.clone(*func);

  std::optional<ScopedDiagnosticHandler> capture;
  if (unsupported)
    capture.emplace(ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error &&
          unsupported->empty())
        *unsupported = diag.str();
      return success();
    });

  PassManager kernels(ctx), serialize(ctx);
  StringRef emulated = emulatedChip(compilation);
  if (!emulated.empty()) {
    EmulatorPipelineOptions options;
    options.chip = emulated.str();
    buildEmulatorKernelPipeline(kernels, options);
    buildEmulatorSerializePipeline(serialize, options);
  } else if (compilation == "nvidia" || compilation == "sm90a") {
    NVVMPipelineOptions options;
    // sm_90a code is architecture-specific: its cubin is all it ships.
    bool hopper = compilation == "sm90a";
    if (hopper)
      options.chip = "sm_90a";
    cubin |= hopper;
    options.cubinArch = !cubin ? "" : hopper ? "sm_90a" : "sm_90";
    options.ptxasRequired = cubin;
    options.toolkit = cudaToolkit;
    buildNVVMKernelPipeline(kernels, options);
    buildNVVMSerializePipeline(serialize, options);
  } else {
    ROCDLPipelineOptions options;
    options.chip = compilation.str();
    options.lld = lldPath;
    buildROCDLKernelPipeline(kernels, options);
    buildROCDLSerializePipeline(serialize, options);
  }
  if (failed(kernels.run(*module)))
    return failure();

  // The launch geometry the template chose, recorded on the gpu.func.
  GPUKernel out;
  gpu::GPUFuncOp kernel;
  module->walk([&](gpu::GPUFuncOp f) { kernel = f; });
  auto grid = kernel->getAttrOfType<ArrayAttr>("tessel.grid");
  auto shared = kernel->getAttrOfType<IntegerAttr>("tessel.shared_bytes");
  std::optional<DenseI32ArrayAttr> block = kernel.getKnownBlockSizeAttr();
  if (!grid || grid.size() != 3 || !block || !shared)
    return kernel.emitError("GPU kernel without launch geometry");
  out.sharedBytes = shared.getInt();
  FailureOr<SmallVector<TensorMapSpec>> maps = readTensorMaps(kernel);
  if (failed(maps))
    return failure();
  for (const TensorMapSpec &m : *maps) {
    bundle::TensorMap map;
    map.arg = m.arg;
    map.dims.assign(m.dims.begin(), m.dims.end());
    map.box.assign(m.box.begin(), m.box.end());
    map.swizzle = static_cast<uint8_t>(m.swizzle);
    out.tensorMaps.push_back(std::move(map));
  }
  for (auto [i, attr] : llvm::enumerate(grid)) {
    ArrayRef<int64_t> d = cast<DenseI64ArrayAttr>(attr).asArrayRef();
    out.grid[i] = d[0] < 0 ? bundle::Dim::constant(d[2])
                           : bundle::Dim::symbol(d[0], d[1], d[2]);
    out.gridDiv[i] = d[3];
    out.block[i] = (*block)[i];
  }

  if (failed(serialize.run(*module)))
    return failure();
  if (!emulated.empty()) {
    HostObjectOptions objectOptions;
    objectOptions.cpu = hostCpu;
    objectOptions.lldPath = lldPath;
    FailureOr<std::vector<uint8_t>> object =
        emitHostSharedObject(*module, objectOptions);
    if (failed(object))
      return failure();
    out.binary = std::move(*object);
    return out;
  }
  module->walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      StringRef bytes = object.getObject().getValue();
      if (object.getFormat() == gpu::CompilationTarget::Assembly)
        // The bundle holds PTX as text without the trailing NUL.
        out.assembly.assign(bytes.begin(),
                            bytes.rtrim(StringRef("\0", 1)).end());
      else if (object.getFormat() == gpu::CompilationTarget::Binary)
        out.binary.assign(bytes.begin(), bytes.end());
    }
  });
  return out;
}

/// The x86-64 microarchitecture level (1-4) of a --host-cpu name.
std::optional<int64_t> x86Level(StringRef cpu) {
  return llvm::StringSwitch<std::optional<int64_t>>(cpu)
      .Case("x86-64", 1)
      .Case("x86-64-v2", 2)
      .Case("x86-64-v3", 3)
      .Case("x86-64-v4", 4)
      .Default(std::nullopt);
}

/// Checks --targets: known names, and only those this build can generate.
FailureOr<SmallVector<std::string>> parseTargets() {
  SmallVector<StringRef> names;
  StringRef(targetList).split(names, ',', -1, /*KeepEmpty=*/false);
  SmallVector<std::string> targets;
  for (StringRef raw : names) {
    StringRef name = raw.trim();
    if (name == "host") {
      targets.push_back(name.str());
      continue;
    }
    if (name == "sm80" || name == "sm90" || name == "sm90a" ||
        name == "gfx942" || name == "gfx950" || !emulatedChip(name).empty()) {
      targets.push_back(name.str());
      continue;
    }
    llvm::errs() << "tessel-aot: error: unknown target '" << name
                 << "'; known targets: host, sm80, sm90, sm90a, gfx942, "
                    "gfx950, emu-gfx942, emu-gfx950, emu-sm80\n";
    return failure();
  }
  if (targets.empty()) {
    llvm::errs() << "tessel-aot: error: --targets is empty\n";
    return failure();
  }
  return targets;
}

void printTable(ArrayRef<bundle::Kernel> kernels) {
  llvm::outs() << llvm::formatv("{0,-40} {1,-30} {2,-7} {3,-5} {4,10}\n",
                                "kernel", "op", "target", "dtype", "bytes");
  for (const bundle::Kernel &k : kernels)
    llvm::outs() << llvm::formatv("{0,-40} {1,-30} {2,-7} {3,-5} {4,10}\n",
                                  k.name, k.op, k.target,
                                  bundle::dtypeName(k.dtype), k.binary.size());
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Tessel ahead-of-time compiler: kernel spec -> kernel bundle\n\n"
      "With no input, compiles the embedded default kernel set (Llama-3-8B, "
      "Qwen3-235B-A22B, DeepSeek-V3 MLA and MoE, the reference MoE shape).\n");

  FailureOr<SmallVector<std::string>> targets = parseTargets();
  if (failed(targets))
    return 1;
  std::optional<int64_t> hostLevel = x86Level(hostCpu);
  if (!hostLevel) {
    llvm::errs() << "tessel-aot: error: unknown --host-cpu '" << hostCpu
                 << "'; use x86-64, x86-64-v2, x86-64-v3 or x86-64-v4\n";
    return 1;
  }

  DialectRegistry registry;
  registry.insert<TesselDialect, func::FuncDialect, arith::ArithDialect,
                  memref::MemRefDialect, scf::SCFDialect, math::MathDialect,
                  LLVM::LLVMDialect>();
  registerHostTranslations(registry);
  registerNVVMPipelineDependencies(registry);
  registerROCDLPipelineDependencies(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> spec;
  if (inputFile.empty()) {
    spec = parseSourceString<ModuleOp>(kDefaultKernels,
                                       ParserConfig(&context),
                                       "DefaultKernels.mlir");
  } else {
    std::string error;
    auto file = openInputFile(inputFile, &error);
    if (!file) {
      llvm::errs() << "tessel-aot: error: " << error << "\n";
      return 1;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    spec = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  }
  if (!spec)
    return 1;

  bool wantsCubin = llvm::is_contained(*targets, "sm90");
  std::vector<bundle::Kernel> kernels;
  for (auto func : spec->getOps<func::FuncOp>()) {
    if (!func.isPublic())
      continue;
    FailureOr<KernelSignature> sig = analyzeKernel(func);
    if (failed(sig))
      return 1;
    // sm80 and sm90 come out of one compilation; sm90a and each AMD chip
    // have their own. Keyed by "nvidia" or the chip; nullopt: no template.
    llvm::StringMap<std::optional<GPUKernel>> compiled;
    for (const std::string &target : *targets) {
      bundle::Kernel kernel = describeKernel(func.getName(), *sig, target);
      if (target == "host") {
        FailureOr<std::vector<uint8_t>> binary = compileForHost(func);
        if (failed(binary))
          return 1;
        kernel.binary = std::move(*binary);
        // The runtime refuses host code this CPU cannot run (no SIGILL).
        kernel.params.push_back({"x86_64_level", *hostLevel});
        kernels.push_back(std::move(kernel));
        continue;
      }
      StringRef key = compilationOf(target);
      if (!compiled.contains(key)) {
        // Kernels of the embedded set without a GPU template yet are
        // skipped, loudly; in a spec given on the command line they are
        // errors unless --skip-unsupported.
        std::string unsupported;
        bool skip = inputFile.empty() || skipUnsupported;
        FailureOr<GPUKernel> gpuKernel =
            compileForGPU(func, key, wantsCubin, skip ? &unsupported : nullptr);
        if (failed(gpuKernel)) {
          if (unsupported.empty())
            return 1;
          if (!quiet)
            llvm::errs() << "tessel-aot: note: no "
                         << (key == "nvidia" ? StringRef("sm80/sm90") : key)
                         << " kernel for '" << func.getName()
                         << "': " << unsupported << "\n";
          compiled[key] = std::nullopt;
        } else {
          compiled[key] = std::move(*gpuKernel);
        }
      }
      const std::optional<GPUKernel> &gpu = compiled[key];
      if (!gpu)
        continue;
      kernel.grid = gpu->grid;
      kernel.gridDiv = gpu->gridDiv;
      kernel.block = gpu->block;
      kernel.sharedBytes = gpu->sharedBytes;
      kernel.tensorMaps = gpu->tensorMaps;
      // sm80: the PTX; sm90, sm90a: the cubin; gfx*: the hsaco; emu-*: the
      // host shared object, which the runtime refuses on a CPU below its
      // x86-64 level or with another emulator ABI.
      kernel.binary = target == "sm80" ? gpu->assembly : gpu->binary;
      if (!emulatedChip(target).empty()) {
        kernel.params.push_back({"x86_64_level", *hostLevel});
        kernel.params.push_back({"emulator_abi", TESSEL_EMU_ABI_VERSION});
      }
      kernels.push_back(std::move(kernel));
    }
  }
  if (kernels.empty()) {
    llvm::errs() << "tessel-aot: error: the spec has no public kernel "
                    "function\n";
    return 1;
  }

  std::vector<uint8_t> bytes;
  if (std::string error = bundle::serializeBundle(kernels, bytes);
      !error.empty()) {
    llvm::errs() << "tessel-aot: error: " << error << "\n";
    return 1;
  }
  std::string error;
  auto out = openOutputFile(outputFile, &error);
  if (!out) {
    llvm::errs() << "tessel-aot: error: " << error << "\n";
    return 1;
  }
  out->os().write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  out->os().close();
  if (out->os().has_error()) {
    llvm::errs() << "tessel-aot: error: cannot write " << outputFile << ": "
                 << out->os().error().message() << "\n";
    out->os().clear_error();
    return 1;
  }
  out->keep();

  if (!quiet)
    printTable(kernels);
  llvm::outs() << "wrote " << kernels.size() << " kernels for "
               << llvm::join(*targets, ",") << " to " << outputFile << " ("
               << bytes.size() << " bytes)\n";
  return 0;
}
