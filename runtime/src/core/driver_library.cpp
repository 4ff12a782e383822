//===- core/driver_library.cpp - dlopen'ed GPU drivers --------------------===//

#include "driver_library.h"

#include "status.h"

#include "../support/format.h"

#include <cstdlib>
#include <dlfcn.h>

namespace tessel::runtime {

namespace {

/// dlopens `path`; on failure appends "dlopen(path): error" to `log`.
void *tryOpen(const char *path, std::string &log) {
  void *handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *error = ::dlerror();
    log += format("%sdlopen(%s): %s", log.empty() ? "" : "; ", path,
                  error ? error : "unknown error");
  }
  return handle;
}

} // namespace

tessel_status openDriverLibrary(const DriverSpec &spec, DriverLibrary &out) {
  std::string log;
  const char *fromEnv = std::getenv(spec.envVar);
  if (fromEnv && *fromEnv) {
    if ((out.handle = tryOpen(fromEnv, log))) {
      out.path = fromEnv;
      return nullptr;
    }
    return makeStatusf(TESSEL_UNAVAILABLE, "cannot load the %s named by %s: %s",
                       spec.what, spec.envVar, log.c_str());
  }
  for (const char *name : spec.names) {
    if (!name)
      break;
    if ((out.handle = tryOpen(name, log))) {
      out.path = name;
      return nullptr;
    }
  }
  return makeStatusf(TESSEL_UNAVAILABLE, "cannot load the %s (%s): %s",
                     spec.what, spec.hint, log.c_str());
}

void *SymbolResolver::lookup(const char *name, bool required) {
  void *symbol = ::dlsym(library.handle, name);
  if (!symbol && required)
    missing += format("%s%s", missing.empty() ? "" : ", ", name);
  return symbol;
}

tessel_status SymbolResolver::finish(const DriverSpec &spec) const {
  if (missing.empty())
    return nullptr;
  return makeStatusf(TESSEL_UNAVAILABLE,
                     "the %s %s lacks required functions: %s (is it too old, "
                     "or not a %s?)",
                     spec.what, library.path.c_str(), missing.c_str(),
                     spec.what);
}

} // namespace tessel::runtime
