// How the binding reports errors: a Python exception of the documented type, raised from C++ by
// setting it and throwing nanobind's python_error (nanobind restores it at the boundary).
//   Status kInvalidArgument -> ValueError, kUnsupported -> NotImplementedError, others -> RuntimeError.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "mlakit/status.h"

namespace mlakit::python {

[[noreturn]] inline void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nanobind::python_error();
}

[[noreturn]] inline void raise_status(const Status& status) {
  PyObject* type = PyExc_RuntimeError;
  if (status.code() == Code::kInvalidArgument) type = PyExc_ValueError;
  if (status.code() == Code::kUnsupported) type = PyExc_NotImplementedError;
  raise(type, status.message());
}

// The pending Python error as "TypeName: message", cleared; "" when none is pending.
inline std::string take_python_error() {
  if (!PyErr_Occurred()) return "";
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* error = PyErr_GetRaisedException();
#else
  PyObject *type = nullptr, *error = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &error, &traceback);
  PyErr_NormalizeException(&type, &error, &traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
#endif
  std::string text;
  if (error != nullptr) {
    text = Py_TYPE(error)->tp_name;
    if (PyObject* str = PyObject_Str(error)) {
      if (const char* utf8 = PyUnicode_AsUTF8(str); utf8 != nullptr && *utf8 != '\0')
        text += std::string(": ") + utf8;
      Py_DECREF(str);
    }
    Py_DECREF(error);
  }
  PyErr_Clear();
  return text;
}

}  // namespace mlakit::python
