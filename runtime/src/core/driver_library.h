//===- core/driver_library.h - dlopen'ed GPU drivers ------------*- C++ -*-===//
//
// The CUDA and HIP backends reach their drivers only through dlopen/dlsym, so
// libtessel_runtime loads on machines without a GPU driver and fails only
// when a GPU device is opened. The helpers here give both backends the same
// behaviour: an environment variable may name the library; otherwise a list
// of names is tried in order; every failed attempt, with its dlerror text, is
// in the message; and the driver's functions are resolved through a table
// that says which are required and which optional, naming every required one
// that is missing.
//
// A driver that loaded and resolved is never dlclose'd: drivers start
// threads and register exit handlers that must not outlive their code, and
// CUDA's and HIP's own runtimes never unload them either.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CORE_DRIVER_LIBRARY_H
#define TESSEL_RUNTIME_CORE_DRIVER_LIBRARY_H

#include "tessel/runtime.h"

#include <string>

namespace tessel::runtime {

/// Which driver to load and how to talk about it.
struct DriverSpec {
  /// For messages: "CUDA driver", "HIP runtime".
  const char *what;
  /// When set and non-empty, the only path tried.
  const char *envVar;
  /// Names tried in order otherwise (through the dynamic linker's search);
  /// unused entries are null.
  const char *names[6];
  /// Appended to the message when none of `names` loads.
  const char *hint;
};

/// A loaded driver library.
struct DriverLibrary {
  void *handle = nullptr;
  /// The path or name that loaded, for messages.
  std::string path;
};

/// dlopens the driver of `spec`. On failure returns TESSEL_UNAVAILABLE
/// listing each path tried with dlerror's text.
tessel_status openDriverLibrary(const DriverSpec &spec, DriverLibrary &out);

/// Fills a driver's function table from `library`. Each slot is declared
/// required or optional; optional slots that are missing stay null.
class SymbolResolver {
public:
  explicit SymbolResolver(const DriverLibrary &library) : library(library) {}

  template <typename Fn> void required(Fn &slot, const char *name) {
    slot = reinterpret_cast<Fn>(lookup(name, /*required=*/true));
  }
  template <typename Fn> void optional(Fn &slot, const char *name) {
    slot = reinterpret_cast<Fn>(lookup(name, /*required=*/false));
  }

  /// Null if every required symbol was found; else TESSEL_UNAVAILABLE naming
  /// each missing one. The caller then dlcloses the library.
  tessel_status finish(const DriverSpec &spec) const;

private:
  void *lookup(const char *name, bool required);

  const DriverLibrary &library;
  std::string missing;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CORE_DRIVER_LIBRARY_H
