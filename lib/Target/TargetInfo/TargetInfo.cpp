//===- TargetInfo.cpp - Choosing a GPU target by chip name ----------------===//

#include "tessel/Target/TargetInfo.h"

using namespace mlir;
using namespace mlir::tessel;

TargetInfo::~TargetInfo() = default;

FailureOr<std::unique_ptr<TargetInfo>>
TargetInfo::get(StringRef chip,
                llvm::function_ref<InFlightDiagnostic()> emitError) {
  if (std::unique_ptr<TargetInfo> nvidia = createNVIDIATargetInfo(chip))
    return nvidia;
  if (std::unique_ptr<TargetInfo> amd = createAMDTargetInfo(chip))
    return amd;
  return emitError() << "unknown GPU chip '" << chip
                     << "'; known chips: sm80 (sm_80), sm90a (sm_90a), gfx942, "
                        "gfx950";
}
