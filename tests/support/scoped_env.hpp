// SPDX-License-Identifier: Apache-2.0
// tests/support/scoped_env.hpp — set or unset an environment variable for one scope.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace vgpu_test {

/// Sets (or, with no value, unsets) name until the end of the scope, then restores it.
/// Not thread-safe (neither is setenv): use it before starting threads.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      ::setenv(name_.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace vgpu_test
