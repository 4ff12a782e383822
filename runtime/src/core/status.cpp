//===- core/status.cpp - Status objects -----------------------------------===//

#include "status.h"

#include "../support/format.h"

#include <exception>
#include <new>
#include <utility>

namespace {

/// Returned when memory is too short even for a status of its own; never
/// freed (see tessel_status_free).
tessel_status_t outOfMemoryStatus{TESSEL_INTERNAL, "out of memory"};

} // namespace

namespace tessel::runtime {

tessel_status makeStatus(tessel_status_code code, std::string message) {
  return new tessel_status_t{code, std::move(message)};
}

tessel_status makeStatusf(tessel_status_code code, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = formatv(fmt, args);
  va_end(args);
  return makeStatus(code, std::move(message));
}

tessel_status annotate(tessel_status status, const std::string &context) {
  if (status)
    status->message.insert(0, context + ": ");
  return status;
}

tessel_status statusFromException(const char *what) noexcept {
  try {
    try {
      throw;
    } catch (const std::bad_alloc &) {
      return makeStatusf(TESSEL_INTERNAL, "out of memory while %s", what);
    } catch (const std::exception &e) {
      return makeStatusf(TESSEL_INTERNAL,
                         "unexpected exception while %s: %s (a bug in "
                         "Tessel: please report it)",
                         what, e.what());
    } catch (...) {
      return makeStatusf(TESSEL_INTERNAL,
                         "unknown exception while %s (a bug in Tessel: please "
                         "report it)",
                         what);
    }
  } catch (...) {
    return &outOfMemoryStatus;
  }
}

} // namespace tessel::runtime

extern "C" {

tessel_status_code tessel_status_get_code(tessel_status status) {
  return status ? status->code : TESSEL_OK;
}

const char *tessel_status_message(tessel_status status) {
  return status ? status->message.c_str() : "";
}

void tessel_status_free(tessel_status status) {
  if (status != &outOfMemoryStatus)
    delete status;
}

const char *tessel_status_code_name(tessel_status_code code) {
  switch (code) {
  case TESSEL_OK:
    return "OK";
  case TESSEL_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case TESSEL_NOT_FOUND:
    return "NOT_FOUND";
  case TESSEL_CORRUPT_BUNDLE:
    return "CORRUPT_BUNDLE";
  case TESSEL_UNSUPPORTED:
    return "UNSUPPORTED";
  case TESSEL_UNAVAILABLE:
    return "UNAVAILABLE";
  case TESSEL_INTERNAL:
    return "INTERNAL";
  }
  return "UNKNOWN";
}

} // extern "C"
