// A driver or toolkit library opened with dlopen at run time (NVML, cuBLAS): nothing links it, so
// the binaries start and run where it is missing, and only the measurement that needs it fails,
// with the loader's reason. Entry points are typed from the library's header, which only declares
// them: decltype(&cublasCreate_v2) names the type without referencing the symbol. The library
// stays loaded for the life of the process.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace mlakit {

class SharedLibrary {
 public:
  // Opens the first of `paths` that loads (a soname goes through the loader's search path). On
  // failure error() holds the loader's reason for the first path.
  bool open(std::initializer_list<std::string> paths) {
    for (const std::string& path : paths) {
      handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) return true;
      if (error_.empty()) {
        const char* e = dlerror();
        error_ = e ? e : "unknown reason";
      }
    }
    return false;
  }

  const std::string& error() const { return error_; }

  // Sets `*fn` to the entry point `name`, or null when the library lacks it.
  template <class Fn>
  void bind(Fn* fn, const char* name) const {
    *fn = reinterpret_cast<Fn>(dlsym(handle_, name));
  }

 private:
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace mlakit
