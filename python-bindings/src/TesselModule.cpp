//===- TesselModule.cpp - The tessel._tessel extension module -------------===//
//
// Python handles over the runtime's C API (tessel/runtime.h): devices,
// bundles, kernels and launches on raw buffers, the attention dispatcher and
// its plans, plus the two things Python
// cannot do without C structs: reading a DLPack capsule and writing bundle
// bytes with the shared writer (tessel/bundle.hpp). The public API is the
// `tessel` package (tessel/*.py), which turns torch tensors, numpy arrays and
// DLPack objects into the (pointer, dtype, shape) buffers launched here.
//
// Every failed tessel_status becomes a tessel.Error carrying the status's
// code and message verbatim. Loads and launches release the GIL: host
// kernels run on the calling thread, and a bundle load may dlopen many.
//
//===----------------------------------------------------------------------===//

#include "tessel/bundle.hpp"
#include "tessel/runtime.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// tessel.Error, created at import. A borrowed-forever reference: the module
/// keeps it alive, and a static py::object would be destroyed after the
/// interpreter.
PyObject *errorType = nullptr;

/// Raises tessel.Error for a failed status (and frees it), or returns for
/// success. The exception's `code` is the StatusCode, `message` and str()
/// the runtime's message, unchanged.
void check(tessel_status status) {
  if (!status)
    return;
  tessel_status_code code = tessel_status_get_code(status);
  std::string message = tessel_status_message(status);
  tessel_status_free(status);
  py::object error = py::reinterpret_borrow<py::object>(errorType)(message);
  error.attr("code") = py::cast(code);
  error.attr("message") = message;
  PyErr_SetObject(errorType, error.ptr());
  throw py::error_already_set();
}

//===----------------------------------------------------------------------===//
// Handles
//===----------------------------------------------------------------------===//

/// One (data pointer, tessel_dtype, shape) launch buffer, as Kernel::launch
/// takes them.
using RawBuffer = std::tuple<uintptr_t, int, std::vector<int64_t>>;

tessel_tensor toTensor(const RawBuffer &buffer) {
  const auto &[data, dtype, shape] = buffer;
  tessel_tensor t = {};
  t.data = reinterpret_cast<void *>(data);
  t.dtype = static_cast<tessel_dtype>(dtype);
  // The runtime refuses a rank past the maximum before it reads a dim.
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size() && d < TESSEL_BUNDLE_MAX_RANK; ++d)
    t.shape[d] = shape[d];
  return t;
}

using DevicePtr = std::shared_ptr<tessel_device_t>;
using BundlePtr = std::shared_ptr<tessel_bundle_t>;

struct Device {
  DevicePtr handle;
  std::string kind;
  int ordinal;

  Device(std::string kind, int ordinal) : kind(std::move(kind)), ordinal(ordinal) {
    tessel_device device = nullptr;
    check(tessel_device_open(this->kind.c_str(), ordinal, &device));
    handle.reset(device, tessel_device_release);
  }

  std::vector<std::string> targets() const {
    std::vector<std::string> out;
    for (size_t i = 0; const char *target = tessel_device_target_at(handle.get(), i);
         ++i)
      out.emplace_back(target);
    return out;
  }
};

/// A kernel keeps its bundle alive: tessel_kernel handles are owned by it.
struct Kernel {
  BundlePtr bundle;
  tessel_kernel handle;

  std::vector<std::string> args() const {
    std::vector<std::string> out;
    for (size_t i = 0, e = tessel_kernel_num_args(handle); i < e; ++i)
      out.emplace_back(tessel_kernel_arg_name(handle, i));
    return out;
  }

  std::vector<bool> outputs() const {
    return argFlags(tessel_kernel_arg_is_output);
  }
  std::vector<bool> scalars() const {
    return argFlags(tessel_kernel_arg_is_scalar);
  }
  /// One flag of each argument, e.g. tessel_kernel_arg_is_output.
  std::vector<bool> argFlags(int (*flag)(tessel_kernel, size_t)) const {
    std::vector<bool> out;
    for (size_t i = 0, e = tessel_kernel_num_args(handle); i < e; ++i)
      out.push_back(flag(handle, i) != 0);
    return out;
  }

  /// The shape parameters, in bundle order.
  std::vector<std::pair<std::string, int64_t>> params() const {
    std::vector<std::pair<std::string, int64_t>> out;
    int64_t value = 0;
    for (size_t i = 0; const char *key = tessel_kernel_param_at(handle, i, &value);
         ++i)
      out.emplace_back(key, value);
    return out;
  }

  /// buffers: one (data pointer, tessel_dtype, shape) per argument.
  void launch(const std::vector<RawBuffer> &buffers, uintptr_t stream) const {
    std::vector<tessel_tensor> tensors;
    for (const RawBuffer &buffer : buffers)
      tensors.push_back(toTensor(buffer));
    tessel_status status;
    {
      py::gil_scoped_release release;
      status = tessel_kernel_launch(handle, tensors.data(), tensors.size(),
                                    reinterpret_cast<void *>(stream));
    }
    check(status);
  }
};

struct Bundle {
  BundlePtr handle;

  static Bundle adopt(tessel_bundle bundle) {
    return Bundle{BundlePtr(bundle, tessel_bundle_release)};
  }

  static Bundle loadFile(const Device &device, const std::string &path) {
    tessel_bundle bundle = nullptr;
    tessel_status status;
    {
      py::gil_scoped_release release;
      status = tessel_bundle_load_file(device.handle.get(), path.c_str(), &bundle);
    }
    check(status);
    return adopt(bundle);
  }

  static Bundle loadMemory(const Device &device, const py::buffer &bytes) {
    // PyBUF_SIMPLE: a contiguous byte buffer, held until the load returns
    // (the runtime copies what it keeps).
    Py_buffer view;
    if (PyObject_GetBuffer(bytes.ptr(), &view, PyBUF_SIMPLE) != 0)
      throw py::error_already_set();
    tessel_bundle bundle = nullptr;
    tessel_status status;
    {
      py::gil_scoped_release release;
      status = tessel_bundle_load_memory(device.handle.get(), view.buf,
                                         static_cast<size_t>(view.len), &bundle);
    }
    PyBuffer_Release(&view);
    check(status);
    return adopt(bundle);
  }

  std::vector<Kernel> kernels() const {
    std::vector<Kernel> out;
    for (size_t i = 0, e = tessel_bundle_kernel_count(handle.get()); i < e; ++i)
      out.push_back(Kernel{handle, tessel_bundle_kernel_at(handle.get(), i)});
    return out;
  }

  /// The index of a kernel the lookups returned, in kernels() order.
  size_t indexOf(tessel_kernel kernel) const {
    for (size_t i = 0, e = tessel_bundle_kernel_count(handle.get()); i < e; ++i)
      if (tessel_bundle_kernel_at(handle.get(), i) == kernel)
        return i;
    throw std::logic_error("a lookup returned a kernel of another bundle");
  }

  size_t find(const std::string &name) const {
    tessel_kernel kernel = nullptr;
    check(tessel_bundle_find_kernel(handle.get(), name.c_str(), &kernel));
    return indexOf(kernel);
  }

  size_t findByParams(const std::string &op, int dtype,
                      const std::vector<std::pair<std::string, int64_t>> &params)
      const {
    std::vector<tessel_param> cParams;
    for (const auto &[key, value] : params)
      cParams.push_back({key.c_str(), value});
    tessel_kernel kernel = nullptr;
    check(tessel_bundle_find_kernel_by_params(
        handle.get(), op.c_str(), static_cast<tessel_dtype>(dtype),
        cParams.data(), cParams.size(), &kernel));
    return indexOf(kernel);
  }
};

//===----------------------------------------------------------------------===//
// The attention dispatcher
//===----------------------------------------------------------------------===//

/// A dispatcher keeps its bundle alive (the C API needs the bundle to
/// outlive it); plans keep their dispatcher.
struct Attention {
  BundlePtr bundle;
  std::shared_ptr<tessel_attention_t> handle;

  /// `config`: the integer fields of tessel_attention_config by name; enums
  /// and dtypes as their integer values (the tessel package maps names).
  Attention(const Bundle &b, const std::map<std::string, int64_t> &config,
            double softmaxScale)
      : bundle(b.handle) {
    tessel_attention_config c;
    tessel_attention_config_init(&c);
    c.softmax_scale = static_cast<float>(softmaxScale);
    for (const auto &[key, value] : config) {
      int32_t v = static_cast<int32_t>(value);
      if (key == "kind") c.kind = static_cast<tessel_attention_kind>(v);
      else if (key == "dtype") c.dtype = static_cast<tessel_dtype>(v);
      else if (key == "num_q_heads") c.num_q_heads = v;
      else if (key == "num_kv_heads") c.num_kv_heads = v;
      else if (key == "head_dim") c.head_dim = v;
      else if (key == "v_head_dim") c.v_head_dim = v;
      else if (key == "block_size") c.block_size = v;
      else if (key == "kv_layout") c.kv_layout = v;
      else if (key == "latent_dim") c.latent_dim = v;
      else if (key == "rope_dim") c.rope_dim = v;
      else if (key == "latent_block_size") c.latent_block_size = v;
      else if (key == "routing") c.routing = static_cast<tessel_routing>(v);
      else if (key == "decode_threshold") c.decode_threshold = v;
      else if (key == "context_chunk_tokens") c.context_chunk_tokens = value;
      else if (key == "max_kv_splits") c.max_kv_splits = v;
      else if (key == "compute_units") c.compute_units = v;
      else
        throw py::type_error("tessel.Attention: no config field '" + key + "'");
    }
    tessel_attention attention = nullptr;
    check(tessel_attention_create(bundle.get(), &c, &attention));
    handle.reset(attention, tessel_attention_release);
  }

  std::string routing() const {
    return tessel_routing_name(tessel_attention_routing(handle.get()));
  }

  std::vector<int32_t> order(const std::vector<int32_t> &queryLens,
                             const std::vector<int32_t> &contextLens) const {
    if (queryLens.size() != contextLens.size())
      throw py::value_error("query_lens and context_lens differ in length");
    std::vector<int32_t> out(queryLens.size());
    check(tessel_attention_order(handle.get(), queryLens.data(),
                                 contextLens.data(), queryLens.size(),
                                 out.data()));
    return out;
  }

  /// tessel_attention_write_cache on k, v, k_cache, v_cache, slot_mapping.
  void writeCache(const RawBuffer &k, const RawBuffer &v,
                  const RawBuffer &kCache, const RawBuffer &vCache,
                  const RawBuffer &slotMapping, uintptr_t stream) const {
    tessel_tensor tk = toTensor(k), tv = toTensor(v), tkc = toTensor(kCache),
                  tvc = toTensor(vCache), slots = toTensor(slotMapping);
    tessel_status status;
    {
      py::gil_scoped_release release;
      status = tessel_attention_write_cache(handle.get(), &tk, &tv, &tkc,
                                            &tvc, &slots,
                                            reinterpret_cast<void *>(stream));
    }
    check(status);
  }
};

struct AttentionPlan {
  Attention attention;
  std::unique_ptr<tessel_attention_plan_t,
                  decltype(&tessel_attention_plan_release)>
      handle{nullptr, tessel_attention_plan_release};

  AttentionPlan(const Attention &attention, size_t capacity)
      : attention(attention) {
    tessel_attention_plan plan = nullptr;
    check(tessel_attention_plan_create(attention.handle.get(), capacity, &plan));
    handle.reset(plan);
  }

  void build(const std::vector<int32_t> &queryLens,
             const std::vector<int32_t> &contextLens, int32_t maxBlocks) {
    if (queryLens.size() != contextLens.size())
      throw py::value_error("query_lens and context_lens differ in length");
    check(tessel_attention_plan_build(handle.get(), queryLens.data(),
                                      contextLens.data(), queryLens.size(),
                                      maxBlocks));
  }

  py::dict info() const {
    tessel_attention_plan_info i;
    tessel_attention_plan_get_info(handle.get(), &i);
    py::dict d;
    d["num_decodes"] = i.num_decodes;
    d["num_extends"] = i.num_extends;
    d["num_prefills"] = i.num_prefills;
    d["decode_tokens"] = i.decode_tokens;
    d["extend_tokens"] = i.extend_tokens;
    d["prefill_tokens"] = i.prefill_tokens;
    d["kv_splits"] = i.kv_splits;
    d["context_chunks"] = i.context_chunks;
    d["context_chunks_parallel"] = i.context_chunks_parallel;
    d["workspace_bytes"] = i.workspace_bytes;
    return d;
  }

  std::vector<std::pair<int64_t, int64_t>> chunks() const {
    tessel_attention_plan_info i;
    tessel_attention_plan_get_info(handle.get(), &i);
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int32_t c = 0; c < i.context_chunks; ++c) {
      int64_t start = 0, width = 0;
      check(tessel_attention_plan_chunk(handle.get(), c, &start, &width));
      out.emplace_back(start, width);
    }
    return out;
  }

  /// buffers: tessel_attention_buffers fields by name.
  void run(const std::map<std::string, RawBuffer> &buffers,
           uintptr_t workspace, size_t workspaceBytes, uintptr_t stream) {
    tessel_attention_buffers b = {};
    const std::pair<const char *, tessel_tensor *> fields[] = {
        {"q", &b.q},
        {"k", &b.k},
        {"v", &b.v},
        {"k_cache", &b.k_cache},
        {"v_cache", &b.v_cache},
        {"block_table", &b.block_table},
        {"seq_lens", &b.seq_lens},
        {"slot_mapping", &b.slot_mapping},
        {"out", &b.out},
        {"q_latent", &b.q_latent},
        {"latent_cache", &b.latent_cache},
        {"latent_block_table", &b.latent_block_table},
        {"out_latent", &b.out_latent}};
    for (const auto &[name, buffer] : buffers) {
      tessel_tensor *field = nullptr;
      for (const auto &[fieldName, slot] : fields)
        if (name == fieldName)
          field = slot;
      if (!field)
        throw py::type_error("tessel.Attention: no buffer '" + name + "'");
      *field = toTensor(buffer);
    }
    tessel_status status;
    {
      py::gil_scoped_release release;
      status = tessel_attention_run(handle.get(), &b,
                                    reinterpret_cast<void *>(workspace),
                                    workspaceBytes,
                                    reinterpret_cast<void *>(stream));
    }
    check(status);
  }
};

//===----------------------------------------------------------------------===//
// DLPack
//===----------------------------------------------------------------------===//

// The ABI of DLPack's unversioned capsule ("dltensor", dlpack.h v0.5-0.8),
// which __dlpack__() returns unless the caller asks for a newer version.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; // NULL: compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

/// Reads a DLPack capsule without consuming it: the capsule keeps its name,
/// so its own destructor releases the tensor once Python drops it, and the
/// caller keeps it alive for as long as it uses the data pointer.
py::dict dlpackInfo(const py::capsule &capsule) {
  if (std::string(capsule.name() ? capsule.name() : "") != "dltensor")
    throw py::value_error(
        std::string("expected an unconsumed DLPack capsule named 'dltensor', "
                    "got one named '") +
        (capsule.name() ? capsule.name() : "") + "'");
  const DLTensor &t = capsule.get_pointer<DLManagedTensor>()->dl_tensor;
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  py::object strides = py::none();
  if (t.strides)
    strides = py::cast(std::vector<int64_t>(t.strides, t.strides + t.ndim));
  py::dict info;
  info["data"] = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
  info["device"] = py::make_tuple(t.device.device_type, t.device.device_id);
  info["dtype"] = py::make_tuple(t.dtype.code, t.dtype.bits, t.dtype.lanes);
  info["shape"] = py::tuple(py::cast(shape));
  info["strides"] = strides;
  return info;
}

//===----------------------------------------------------------------------===//
// Bundle writing
//===----------------------------------------------------------------------===//

tessel::bundle::Dim toDim(const std::tuple<int32_t, int32_t, int64_t> &dim) {
  return {std::get<0>(dim), std::get<1>(dim), std::get<2>(dim)};
}

/// Bundle bytes from kernel descriptions (dicts with the fields of
/// tessel::bundle::Kernel, dims as (sym, mul, add) tuples), through the one
/// writer tessel-aot uses. For tests and tools that need bundles the
/// compiler does not make (e.g. for the fake GPU drivers).
py::bytes serializeBundle(const std::vector<py::dict> &descriptions) {
  std::vector<tessel::bundle::Kernel> kernels;
  for (const py::dict &d : descriptions) {
    tessel::bundle::Kernel k;
    k.name = d["name"].cast<std::string>();
    k.op = d["op"].cast<std::string>();
    k.target = d["target"].cast<std::string>();
    k.entry = d["entry"].cast<std::string>();
    k.dtype = static_cast<tessel_dtype>(d["dtype"].cast<int>());
    for (const py::handle arg : d["args"]) {
      auto [name, dtype, isOutput, dims] =
          arg.cast<std::tuple<std::string, int, bool,
                              std::vector<std::tuple<int32_t, int32_t, int64_t>>>>();
      tessel::bundle::Arg a{name, static_cast<tessel_dtype>(dtype), isOutput, {}};
      for (const auto &dim : dims)
        a.dims.push_back(toDim(dim));
      k.args.push_back(std::move(a));
    }
    k.symbols = d["symbols"].cast<std::vector<std::string>>();
    k.params = d["params"].cast<std::vector<std::pair<std::string, int64_t>>>();
    auto grid = d["grid"].cast<std::vector<std::tuple<int32_t, int32_t, int64_t>>>();
    auto gridDiv = d["grid_div"].cast<std::vector<uint32_t>>();
    auto block = d["block"].cast<std::vector<uint32_t>>();
    if (grid.size() != 3 || gridDiv.size() != 3 || block.size() != 3)
      throw py::value_error("grid, grid_div and block have 3 entries each");
    for (size_t i = 0; i < 3; ++i) {
      k.grid[i] = toDim(grid[i]);
      k.gridDiv[i] = gridDiv[i];
      k.block[i] = block[i];
    }
    k.sharedBytes = d["shared_bytes"].cast<uint32_t>();
    std::string binary = d["binary"].cast<std::string>();
    k.binary.assign(binary.begin(), binary.end());
    kernels.push_back(std::move(k));
  }
  std::vector<uint8_t> bytes;
  std::string error = tessel::bundle::serializeBundle(kernels, bytes);
  if (!error.empty())
    throw py::value_error(error);
  return py::bytes(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

} // namespace

PYBIND11_MODULE(_tessel, m) {
  m.doc() = "Handles over the Tessel runtime's C API; use the tessel package.";

  py::enum_<tessel_status_code>(m, "StatusCode",
                                "The code of a failed runtime call.")
      .value("INVALID_ARGUMENT", TESSEL_INVALID_ARGUMENT)
      .value("NOT_FOUND", TESSEL_NOT_FOUND)
      .value("CORRUPT_BUNDLE", TESSEL_CORRUPT_BUNDLE)
      .value("UNSUPPORTED", TESSEL_UNSUPPORTED)
      .value("UNAVAILABLE", TESSEL_UNAVAILABLE)
      .value("INTERNAL", TESSEL_INTERNAL);

  errorType = PyErr_NewExceptionWithDoc(
      "tessel.Error",
      "A failed call of the Tessel runtime. `code` is the runtime's status "
      "code (a tessel.StatusCode), `message` (also str()) its message, "
      "unchanged.",
      PyExc_RuntimeError, nullptr);
  if (!errorType)
    throw py::error_already_set();
  m.add_object("Error", py::handle(errorType));

  // Dtype names ("f32", ...) and their tessel_dtype values.
  py::dict dtypes;
  for (int d = TESSEL_DTYPE_F32; d <= TESSEL_DTYPE_I64; ++d)
    dtypes[tessel_dtype_name(static_cast<tessel_dtype>(d))] = d;
  m.attr("DTYPES") = dtypes;

  py::class_<Device>(m, "Device",
                     "A device of the runtime: kind is 'host', 'cuda' or "
                     "'hip', ordinal the device index (for CUDA, in the "
                     "driver's order, which honours CUDA_VISIBLE_DEVICES).")
      .def(py::init<std::string, int>(), py::arg("kind") = "host",
           py::arg("ordinal") = 0)
      .def_readonly("kind", &Device::kind)
      .def_readonly("ordinal", &Device::ordinal)
      .def_property_readonly(
          "target",
          [](const Device &d) { return std::string(tessel_device_target(d.handle.get())); },
          "The bundle target this device prefers, e.g. 'host', 'sm90'.")
      .def_property_readonly("targets", &Device::targets,
                             "The bundle targets this device runs, most "
                             "preferred first.")
      .def("__repr__", [](const Device &d) {
        return "tessel.Device('" + d.kind + "', " + std::to_string(d.ordinal) +
               ")";
      });

  py::class_<Kernel>(m, "Kernel")
      .def_property_readonly("name", [](const Kernel &k) {
        return std::string(tessel_kernel_name(k.handle));
      })
      .def_property_readonly("op", [](const Kernel &k) {
        return std::string(tessel_kernel_op(k.handle));
      })
      .def_property_readonly("target", [](const Kernel &k) {
        return std::string(tessel_kernel_target(k.handle));
      })
      .def_property_readonly("dtype", [](const Kernel &k) {
        return std::string(tessel_dtype_name(tessel_kernel_dtype(k.handle)));
      })
      .def_property_readonly("args", &Kernel::args)
      .def_property_readonly("outputs", &Kernel::outputs)
      .def_property_readonly("scalars", &Kernel::scalars)
      .def_property_readonly("params", &Kernel::params)
      .def("launch", &Kernel::launch, py::arg("buffers"), py::arg("stream"));

  py::class_<Bundle>(m, "Bundle")
      .def_static("load_file", &Bundle::loadFile, py::arg("device"),
                  py::arg("path"))
      .def_static("load_memory", &Bundle::loadMemory, py::arg("device"),
                  py::arg("data"))
      .def("kernels", &Bundle::kernels)
      .def("find", &Bundle::find, py::arg("name"))
      .def("find_by_params", &Bundle::findByParams, py::arg("op"),
           py::arg("dtype"), py::arg("params"));

  py::class_<Attention>(m, "Attention")
      .def(py::init<const Bundle &, const std::map<std::string, int64_t> &,
                    double>(),
           py::arg("bundle"), py::arg("config"), py::arg("softmax_scale"))
      .def_property_readonly("routing", &Attention::routing)
      .def("order", &Attention::order, py::arg("query_lens"),
           py::arg("context_lens"))
      .def("write_cache", &Attention::writeCache, py::arg("k"), py::arg("v"),
           py::arg("k_cache"), py::arg("v_cache"), py::arg("slot_mapping"),
           py::arg("stream"));

  py::class_<AttentionPlan>(m, "AttentionPlan")
      .def(py::init<const Attention &, size_t>(), py::arg("attention"),
           py::arg("capacity"))
      .def("build", &AttentionPlan::build, py::arg("query_lens"),
           py::arg("context_lens"), py::arg("max_blocks"))
      .def_property_readonly("info", &AttentionPlan::info)
      .def_property_readonly("chunks", &AttentionPlan::chunks)
      .def("run", &AttentionPlan::run, py::arg("buffers"),
           py::arg("workspace"), py::arg("workspace_bytes"), py::arg("stream"));

  m.def("dlpack_info", &dlpackInfo, py::arg("capsule"),
        "data (with byte_offset), device, dtype (code, bits, lanes), shape "
        "and strides (None: row-major) of an unconsumed DLPack capsule.");
  m.def("serialize_bundle", &serializeBundle, py::arg("kernels"),
        "Bundle bytes from kernel descriptions, by the writer of tessel-aot.");
}
