//===- Linker.cpp - Shared objects linked by ld.lld -----------------------===//

#include "tessel/Target/Linker.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

StringRef mlir::tessel::getDefaultLld() {
  return TESSEL_LLVM_TOOLS_DIR "/ld.lld";
}

FailureOr<std::vector<uint8_t>> mlir::tessel::linkSharedObject(
    function_ref<InFlightDiagnostic()> emitError, StringRef what,
    StringRef lld, ArrayRef<char> object, ArrayRef<std::string> extraInputs) {
  if (lld.empty())
    lld = getDefaultLld();
  SmallString<128> objectPath, sharedPath, logPath;
  for (auto [suffix, path] : {std::make_pair("o", &objectPath),
                              std::make_pair("so", &sharedPath),
                              std::make_pair("log", &logPath)})
    if (llvm::sys::fs::createTemporaryFile("tessel", suffix, *path))
      return emitError() << "cannot create temporary files for linking";
  llvm::FileRemover removeObject(objectPath), removeShared(sharedPath),
      removeLog(logPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(objectPath, ec);
    if (ec)
      return emitError() << "cannot write " << objectPath << ": "
                         << ec.message();
    out.write(object.data(), object.size());
  }
  SmallVector<StringRef> args = {lld,        "-shared",  "--no-undefined-version",
                                 "-o",       sharedPath, objectPath};
  for (const std::string &input : extraInputs)
    args.push_back(input);
  std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                          logPath.str()};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(lld, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/120, 0, &execError);
  if (rc != 0) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    return emitError() << "linking " << what << " with '" << lld << "' failed ("
                       << (execError.empty()
                               ? "exit code " + std::to_string(rc)
                               : execError)
                       << "): " << (log ? (*log)->getBuffer().trim() : "");
  }
  auto bytes = llvm::MemoryBuffer::getFile(sharedPath, /*IsText=*/false);
  if (!bytes)
    return emitError() << "cannot read the linked object " << sharedPath;
  StringRef data = (*bytes)->getBuffer();
  return std::vector<uint8_t>(data.begin(), data.end());
}
