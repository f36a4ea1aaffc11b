// Tests' access to a built-in policy's profile by name, as `--policy` finds it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "berth/plugins/builtin.h"

namespace berth::plugins {

inline framework::Profile BuiltinPolicy(const std::string& name) {
  framework::PolicyRegistry r;
  EXPECT_TRUE(RegisterBuiltinPolicies(r).ok());
  auto p = r.Find(name);
  EXPECT_TRUE(p.ok()) << name;
  p->name = name;
  return *p;
}

}  // namespace berth::plugins
