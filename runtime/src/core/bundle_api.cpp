//===- core/bundle_api.cpp - Loading bundles and looking kernels up -------===//
//
// A bundle is validated as a whole (every target's kernels) before any kernel
// is loaded, so a corrupt file is reported as corrupt on every device, not
// only on the one whose kernels happen to be damaged. Then, per kernel name,
// only the kernel of the device's most preferred target is handed to the
// backend.
//
//===----------------------------------------------------------------------===//

#include "dtype.h"
#include "handles.h"
#include "status.h"

#include "../support/format.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

using namespace tessel;
using namespace tessel::runtime;

namespace {

/// Lookup failures list at most this many candidates.
constexpr size_t kMaxListed = 8;

void destroyBundle(tessel_bundle bundle) {
  tessel_device device = bundle->device;
  // Kernels first: unloading them may still need the device's backend.
  delete bundle;
  tessel_device_release(device);
}

/// Owns a bundle under construction, so that an early return or an
/// exception (caught by guard) releases it and its device reference.
struct BundleDestroyer {
  void operator()(tessel_bundle bundle) const { destroyBundle(bundle); }
};
using BundleOwner = std::unique_ptr<tessel_bundle_t, BundleDestroyer>;

/// "target 'host'" or "targets 'sm90' or 'sm80'": how messages name what a
/// device runs.
std::string describeTargets(const Backend &backend) {
  const std::vector<std::string> &targets = backend.targets();
  std::string out = targets.size() == 1 ? "target " : "targets ";
  for (size_t i = 0; i < targets.size(); ++i) {
    if (i)
      out += i + 1 == targets.size() ? " or " : ", ";
    out += "'" + targets[i] + "'";
  }
  return out;
}

/// Where `target` is in the device's preference order; npos if the device
/// does not run it.
size_t preferenceOf(const Backend &backend, const std::string &target) {
  const std::vector<std::string> &targets = backend.targets();
  auto it = std::find(targets.begin(), targets.end(), target);
  return it == targets.end() ? std::string::npos
                             : static_cast<size_t>(it - targets.begin());
}

tessel_status loadBundle(tessel_device device, const uint8_t *data, size_t size,
                         tessel_bundle *out) {
  std::vector<bundle::Kernel> kernels;
  bundle::ParseError kind = bundle::ParseError::None;
  std::string error = bundle::parseBundle(data, size, kernels, &kind);
  if (!error.empty())
    return makeStatus(kind == bundle::ParseError::Unsupported
                          ? TESSEL_UNSUPPORTED
                          : TESSEL_CORRUPT_BUNDLE,
                      "invalid bundle: " + error);

  // Per kernel name, the most preferred of the device's targets that the
  // bundle has it for: an sm90 cubin beats the sm80 PTX of the same kernel.
  Backend &backend = *device->backend;
  std::vector<size_t> preference(kernels.size());
  std::unordered_map<std::string, size_t> best;
  for (size_t i = 0; i < kernels.size(); ++i) {
    preference[i] = preferenceOf(backend, kernels[i].target);
    if (preference[i] == std::string::npos)
      continue;
    auto inserted = best.emplace(kernels[i].name, preference[i]);
    if (!inserted.second)
      inserted.first->second = std::min(inserted.first->second, preference[i]);
  }

  BundleOwner result(new tessel_bundle_t);
  result->device = device;
  retainDevice(device);
  std::vector<std::string> targets; // of the other kernels, first-seen order
  for (size_t i = 0; i < kernels.size(); ++i) {
    bundle::Kernel &meta = kernels[i];
    if (preference[i] == std::string::npos ||
        best[meta.name] != preference[i]) {
      if (std::find(targets.begin(), targets.end(), meta.target) ==
          targets.end())
        targets.push_back(meta.target);
      result->otherTargets.emplace_back(meta.name, meta.target);
      continue;
    }
    auto kernel = std::make_unique<tessel_kernel_t>();
    // The binary is a view into `data`: the backend copies what it must
    // keep, so loading holds at most one binary besides the bundle bytes.
    if (tessel_status status = backend.loadKernel(
            meta, bundle::binaryBytes(meta, data), kernel->loaded))
      return annotate(status, format("kernel '%s'", meta.name.c_str()));
    kernel->meta = std::move(meta);
    kernel->backend = &backend;
    result->kernels.push_back(std::move(kernel));
  }
  if (result->kernels.empty())
    return makeStatusf(
        TESSEL_UNSUPPORTED, "bundle has no kernels for %s (%s)",
        describeTargets(backend).c_str(),
        targets.empty()
            ? "it has no kernels"
            : ("it has: " +
               joinLimited(targets, kMaxListed, [](const std::string &t) {
                 return t;
               })).c_str());
  *out = result.release();
  return nullptr;
}

tessel_status checkLoadArgs(tessel_device device, tessel_bundle *out) {
  if (!out)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "out_bundle is null");
  *out = nullptr;
  if (!device)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "device is null");
  return nullptr;
}

/// Reads a whole file. On failure returns a status naming the path.
tessel_status readFile(const char *path, std::vector<uint8_t> &bytes) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return makeStatusf(err == ENOENT || err == ENOTDIR
                           ? TESSEL_NOT_FOUND
                           : TESSEL_INVALID_ARGUMENT,
                       "cannot open bundle '%s': %s", path, std::strerror(err));
  }
  struct stat st;
  const char *problem = nullptr;
  if (::fstat(fd, &st) != 0)
    problem = std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    problem = "not a regular file";
  else if (static_cast<uint64_t>(st.st_size) > TESSEL_BUNDLE_MAX_SIZE) {
    // Checked before the buffer is allocated: a huge file is a clear error,
    // not an allocation failure.
    ::close(fd);
    return makeStatusf(TESSEL_CORRUPT_BUNDLE,
                       "bundle '%s' is %lld bytes, more than the limit of "
                       "%llu bytes (4 GiB)",
                       path, static_cast<long long>(st.st_size),
                       static_cast<unsigned long long>(TESSEL_BUNDLE_MAX_SIZE));
  }
  if (problem) {
    ::close(fd);
    return makeStatusf(TESSEL_INVALID_ARGUMENT, "cannot read bundle '%s': %s",
                       path, problem);
  }
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      return makeStatusf(
          TESSEL_INVALID_ARGUMENT, "cannot read bundle '%s': %s", path,
          err ? std::strerror(err) : "the file shrank while it was read");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return nullptr;
}

using ParamList = std::vector<std::pair<std::string, int64_t>>;

/// "{num_q_heads=32, head_dim=128}"
std::string describeParams(const ParamList &params) {
  std::string out = "{";
  for (size_t i = 0; i < params.size(); ++i)
    out += format("%s%s=%lld", i ? ", " : "", params[i].first.c_str(),
                  static_cast<long long>(params[i].second));
  return out + "}";
}

bool hasParams(const bundle::Kernel &kernel, const tessel_param *params,
               size_t count) {
  for (size_t i = 0; i < count; ++i) {
    bool found = false;
    for (const auto &param : kernel.params)
      if (param.first == params[i].key) {
        found = param.second == params[i].value;
        break;
      }
    if (!found)
      return false;
  }
  return true;
}

tessel_status loadFile(tessel_device device, const char *path,
                       tessel_bundle *out_bundle) {
  if (tessel_status status = checkLoadArgs(device, out_bundle))
    return status;
  if (!path)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "path is null");
  std::vector<uint8_t> bytes;
  if (tessel_status status = readFile(path, bytes))
    return status;
  return annotate(loadBundle(device, bytes.data(), bytes.size(), out_bundle),
                  path);
}

tessel_status loadMemory(tessel_device device, const void *data, size_t size,
                         tessel_bundle *out_bundle) {
  if (tessel_status status = checkLoadArgs(device, out_bundle))
    return status;
  if (!data)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "data is null");
  return loadBundle(device, static_cast<const uint8_t *>(data), size,
                    out_bundle);
}

tessel_status findKernel(tessel_bundle bundle, const char *name,
                         tessel_kernel *out_kernel) {
  if (!out_kernel)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "out_kernel is null");
  *out_kernel = nullptr;
  if (!bundle || !name)
    return makeStatus(TESSEL_INVALID_ARGUMENT,
                      bundle ? "kernel name is null" : "bundle is null");
  for (const auto &kernel : bundle->kernels)
    if (kernel->meta.name == name) {
      *out_kernel = kernel.get();
      return nullptr;
    }
  const std::string targets = describeTargets(*bundle->device->backend);
  std::vector<std::string> elsewhere;
  for (const auto &other : bundle->otherTargets)
    if (other.first == name)
      elsewhere.push_back(other.second);
  if (!elsewhere.empty())
    return makeStatusf(
        TESSEL_NOT_FOUND,
        "kernel '%s' is not built for %s (the bundle has it for: %s)", name,
        targets.c_str(),
        joinLimited(elsewhere, kMaxListed, [](const std::string &t) {
          return t;
        }).c_str());
  return makeStatusf(TESSEL_NOT_FOUND,
                     "no kernel '%s' for %s in this bundle; it has: %s", name,
                     targets.c_str(),
                     joinLimited(bundle->kernels, kMaxListed,
                                 [](const std::unique_ptr<tessel_kernel_t> &k) {
                                   return k->meta.name;
                                 })
                         .c_str());
}

tessel_status findKernelByParams(tessel_bundle bundle, const char *op,
                                 tessel_dtype dtype,
                                 const tessel_param *params,
                                 size_t num_params,
                                 tessel_kernel *out_kernel) {
  if (!out_kernel)
    return makeStatus(TESSEL_INVALID_ARGUMENT, "out_kernel is null");
  *out_kernel = nullptr;
  if (!bundle || !op)
    return makeStatus(TESSEL_INVALID_ARGUMENT,
                      bundle ? "op is null" : "bundle is null");
  if (num_params && !params)
    return makeStatusf(TESSEL_INVALID_ARGUMENT,
                       "params is null but num_params is %zu", num_params);
  for (size_t i = 0; i < num_params; ++i)
    if (!params[i].key)
      return makeStatusf(TESSEL_INVALID_ARGUMENT, "params[%zu].key is null", i);

  const DtypeValue wantedDtype = dtypeValue(dtype);
  std::vector<const bundle::Kernel *> sameOp;
  for (const auto &kernel : bundle->kernels) {
    const bundle::Kernel &meta = kernel->meta;
    if (meta.op != op)
      continue;
    if (wantedDtype == TESSEL_DTYPE_INVALID ||
        static_cast<DtypeValue>(meta.dtype) == wantedDtype) {
      if (hasParams(meta, params, num_params)) {
        *out_kernel = kernel.get();
        return nullptr;
      }
    }
    sameOp.push_back(&meta);
  }
  ParamList requested;
  for (size_t i = 0; i < num_params; ++i)
    requested.emplace_back(params[i].key, params[i].value);
  std::string wanted = format(
      "op '%s', dtype %s, params %s", op,
      wantedDtype == TESSEL_DTYPE_INVALID ? "any" : dtypeValueName(wantedDtype),
      describeParams(requested).c_str());
  if (sameOp.empty())
    return makeStatusf(TESSEL_NOT_FOUND,
                       "no kernel matches %s: the bundle has no kernel of "
                       "op '%s' for %s",
                       wanted.c_str(), op,
                       describeTargets(*bundle->device->backend).c_str());
  return makeStatusf(
      TESSEL_NOT_FOUND, "no kernel matches %s; kernels of this op: %s",
      wanted.c_str(),
      joinLimited(sameOp, kMaxListed, [](const bundle::Kernel *k) {
        return format("%s (%s, %s)", k->name.c_str(),
                      bundle::dtypeName(k->dtype),
                      describeParams(k->params).c_str());
      }).c_str());
}

} // namespace

extern "C" {

tessel_status tessel_bundle_load_file(tessel_device device, const char *path,
                                      tessel_bundle *out_bundle) {
  return guard("loading a bundle",
               [&] { return loadFile(device, path, out_bundle); });
}

tessel_status tessel_bundle_load_memory(tessel_device device, const void *data,
                                        size_t size,
                                        tessel_bundle *out_bundle) {
  return guard("loading a bundle",
               [&] { return loadMemory(device, data, size, out_bundle); });
}

void tessel_bundle_release(tessel_bundle bundle) {
  if (bundle)
    destroyBundle(bundle);
}

size_t tessel_bundle_kernel_count(tessel_bundle bundle) {
  return bundle ? bundle->kernels.size() : 0;
}

tessel_kernel tessel_bundle_kernel_at(tessel_bundle bundle, size_t index) {
  if (!bundle || index >= bundle->kernels.size())
    return nullptr;
  return bundle->kernels[index].get();
}

tessel_status tessel_bundle_find_kernel(tessel_bundle bundle, const char *name,
                                        tessel_kernel *out_kernel) {
  return guard("looking up a kernel",
               [&] { return findKernel(bundle, name, out_kernel); });
}

tessel_status tessel_bundle_find_kernel_by_params(
    tessel_bundle bundle, const char *op, tessel_dtype dtype,
    const tessel_param *params, size_t num_params, tessel_kernel *out_kernel) {
  return guard("looking up a kernel", [&] {
    return findKernelByParams(bundle, op, dtype, params, num_params,
                              out_kernel);
  });
}


const char *tessel_kernel_name(tessel_kernel kernel) {
  return kernel ? kernel->meta.name.c_str() : "";
}

const char *tessel_kernel_op(tessel_kernel kernel) {
  return kernel ? kernel->meta.op.c_str() : "";
}

const char *tessel_kernel_target(tessel_kernel kernel) {
  return kernel ? kernel->meta.target.c_str() : "";
}

tessel_dtype tessel_kernel_dtype(tessel_kernel kernel) {
  return kernel ? kernel->meta.dtype : TESSEL_DTYPE_INVALID;
}

size_t tessel_kernel_num_args(tessel_kernel kernel) {
  return kernel ? kernel->meta.args.size() : 0;
}

const char *tessel_kernel_arg_name(tessel_kernel kernel, size_t index) {
  if (!kernel || index >= kernel->meta.args.size())
    return nullptr;
  return kernel->meta.args[index].name.c_str();
}

int tessel_kernel_arg_is_output(tessel_kernel kernel, size_t index) {
  if (!kernel || index >= kernel->meta.args.size())
    return 0;
  return kernel->meta.args[index].isOutput ? 1 : 0;
}

int tessel_kernel_arg_is_elementwise(tessel_kernel kernel, size_t index) {
  if (!kernel || index >= kernel->meta.args.size())
    return 0;
  return kernel->meta.args[index].elementwise ? 1 : 0;
}

int tessel_kernel_arg_is_scalar(tessel_kernel kernel, size_t index) {
  if (!kernel || index >= kernel->meta.args.size())
    return 0;
  return kernel->meta.args[index].isScalar() ? 1 : 0;
}

int tessel_kernel_param(tessel_kernel kernel, const char *key, int64_t *value) {
  if (!kernel || !key)
    return -1;
  for (const auto &param : kernel->meta.params)
    if (param.first == key) {
      if (value)
        *value = param.second;
      return 0;
    }
  return -1;
}

size_t tessel_kernel_num_params(tessel_kernel kernel) {
  return kernel ? kernel->meta.params.size() : 0;
}

const char *tessel_kernel_param_at(tessel_kernel kernel, size_t index,
                                   int64_t *value) {
  if (!kernel || index >= kernel->meta.params.size())
    return nullptr;
  const auto &param = kernel->meta.params[index];
  if (value)
    *value = param.second;
  return param.first.c_str();
}

} // extern "C"
