//===- core/device.cpp - Opening devices ----------------------------------===//
//
// The backend table: every backend name the API accepts, and how to open it.
// Every backend is always built in: the GPU ones dlopen their driver when a
// device is opened, so a machine without one only fails that open; the
// emulated GPUs need nothing but the CPU.
//
//===----------------------------------------------------------------------===//

#include "handles.h"
#include "status.h"

#include <cstring>

using namespace tessel::runtime;

namespace {

struct BackendEntry {
  const char *name;
  BackendFactory create;
};

constexpr BackendEntry kBackends[] = {
    {"host", createHostBackend},
    {"cuda", createCudaBackend},
    {"hip", createHipBackend},
    {"emu-gfx942", createEmuGfx942Backend},
    {"emu-gfx950", createEmuGfx950Backend},
    {"emu-sm80", createEmuSm80Backend},
};

std::string backendNames() {
  std::string out;
  for (const BackendEntry &entry : kBackends) {
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

namespace {

tessel_status openDevice(const char *backend, int ordinal,
                         tessel_device *out_device) {
  if (!out_device)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "out_device is null");
  *out_device = nullptr;
  if (!backend)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "backend name is null; valid backends: %s",
                       backendNames().c_str());
  if (ordinal < 0)
    return makeStatusf(TESSEL_INVALID_ARGUMENT, "device ordinal %d is negative",
                       ordinal);
  for (const BackendEntry &entry : kBackends) {
    if (std::strcmp(entry.name, backend) != 0)
      continue;
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
                     backendNames().c_str());
}

} // namespace

extern "C" {

tessel_status tessel_device_open(const char *backend, int ordinal,
                                 tessel_device *out_device) {
  return guard("opening a device",
               [&] { return openDevice(backend, ordinal, out_device); });
}

void tessel_device_release(tessel_device device) {
  // acq_rel: the last releaser must see every other thread's use of the
  // device before it destroys it.
  if (device && device->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete device;
}

const char *tessel_device_target(tessel_device device) {
  return device ? device->backend->targets().front().c_str() : "";
}

const char *tessel_device_target_at(tessel_device device, size_t index) {
  if (!device || index >= device->backend->targets().size())
    return nullptr;
  return device->backend->targets()[index].c_str();
}

} // extern "C"
