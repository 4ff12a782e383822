//===- host/host_object.h - Loading a kernel's host shared object -*- C++
//-*-===//
//
// Host kernels and interpreted GPU kernels (emulator/) are both ELF shared
// objects for this CPU; only their entries' signatures differ. This is how
// both backends turn a bundle kernel's binary into a callable entry: refuse
// an x86-64 level this CPU lacks (x86_level.h), load the bytes (they only
// exist in memory) and look the entry symbol up.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_HOST_HOST_OBJECT_H
#define TESSEL_RUNTIME_HOST_HOST_OBJECT_H

#include "../core/backend.h"
#include "../core/status.h"

#include "tessel/bundle.hpp"

#include <memory>
#include <string>

namespace tessel::runtime {

/// A loaded kernel object; destroying it unloads it. The backends launch
/// it by calling `entry` with their kernels' signature.
class HostObject final : public LoadedKernel {
public:
  /// The loader's handle and the file it was loaded from: an open memfd or
  /// a temporary file's path, kept until dlclose (see host_object.cpp).
  HostObject(void *library, void *entry, int fd, std::string path)
      : entry(entry), library(library), fd(fd), path(std::move(path)) {}
  ~HostObject() override;
  HostObject(const HostObject &) = delete;
  HostObject &operator=(const HostObject &) = delete;

  /// The kernel's entry symbol; the caller knows its type.
  void *const entry;

private:
  void *const library;
  const int fd;
  const std::string path;
};

/// Loads `binary`, the shared object of `kernel`, and resolves
/// kernel.entry; `out` is then a HostObject. Fails with TESSEL_UNSUPPORTED when
/// the kernel's `x86_64_level` parameter names a level this CPU lacks,
/// TESSEL_UNAVAILABLE when the object cannot be loaded (with every
/// attempt's error) and TESSEL_CORRUPT_BUNDLE when it lacks the entry.
tessel_status loadHostObject(const bundle::Kernel &kernel,
                             bundle::ByteSpan binary,
                             std::unique_ptr<LoadedKernel> &out);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_HOST_HOST_OBJECT_H
