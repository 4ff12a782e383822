//===- core/device.cpp - Opening devices ----------------------------------===//
//
// The backend table: every backend name the API accepts, and how to open it.
// A backend that is not built in yet still has a row, so that asking for it
// says "not built yet" rather than "unknown backend".
//
//===----------------------------------------------------------------------===//

#include "handles.h"
#include "status.h"

#include <cstring>

using namespace tessel::runtime;

namespace {

struct BackendEntry {
  const char *name;
  /// Opens a device; null while the backend is not built.
  BackendFactory create;
  /// Why `create` is null, for the TESSEL_UNAVAILABLE message.
  const char *notBuilt;
};

constexpr BackendEntry kBackends[] = {
    {"host", createHostBackend, nullptr},
    {"cuda", nullptr,
     "the cuda backend is not built yet; a later issue adds it (CUDA driver "
     "API through a dlopen'ed libcuda.so.1)"},
    {"hip", nullptr,
     "the hip backend is not built yet; a later issue adds it (HIP module API "
     "through a dlopen'ed libamdhip64.so)"},
};

std::string backendNames(bool onlyBuilt) {
  std::string out;
  for (const BackendEntry &entry : kBackends) {
    if (onlyBuilt && !entry.create)
      continue;
    if (!out.empty())
      out += ", ";
    out += entry.name;
  }
  return out;
}

} // namespace

void tessel::runtime::retainDevice(tessel_device device) {
  device->refs.fetch_add(1, std::memory_order_relaxed);
}

extern "C" {

tessel_status tessel_device_open(const char *backend, int ordinal,
                                 tessel_device *out_device) {
  if (!out_device)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "out_device is null");
  *out_device = nullptr;
  if (!backend)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "backend name is null; valid backends: %s",
                       backendNames(false).c_str());
  if (ordinal < 0)
    return makeStatusf(TESSEL_INVALID_ARGUMENT, "device ordinal %d is negative",
                       ordinal);
  for (const BackendEntry &entry : kBackends) {
    if (std::strcmp(entry.name, backend) != 0)
      continue;
    if (!entry.create)
      return makeStatusf(TESSEL_UNAVAILABLE, "%s (backends built: %s)",
                         entry.notBuilt, backendNames(true).c_str());
    std::unique_ptr<Backend> impl;
    if (tessel_status status = entry.create(ordinal, impl))
      return status;
    auto *device = new tessel_device_t;
    device->backend = std::move(impl);
    *out_device = device;
    return nullptr;
  }
  return makeStatusf(TESSEL_NOT_FOUND,
                     "unknown backend '%s'; valid backends: %s", backend,
                     backendNames(false).c_str());
}

void tessel_device_release(tessel_device device) {
  // acq_rel: the last releaser must see every other thread's use of the
  // device before it destroys it.
  if (device && device->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete device;
}

const char *tessel_device_target(tessel_device device) {
  return device ? device->backend->target() : "";
}

} // extern "C"
