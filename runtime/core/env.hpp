#pragma once
// The validated getters behind the one reader of the environment,
// runtime_env.hpp (Note [Environment read once]; docs/DESIGN.md, house style 2:
// "environment variables are read in one place"): only runtime_env.cpp calls
// them. Each validates the value and throws ValueError naming the variable, the
// value found and what is allowed, so bad input never turns into a silent default.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace distlab::env {

// The raw value, or nullopt when unset. An empty string counts as set.
std::optional<std::string> getString(const char* name);

// An integer in [min, max]; nullopt when unset. Throws ValueError when the
// value is not an integer or lies outside the range.
std::optional<int64_t> getInt(const char* name, int64_t min, int64_t max);

// 1/0, true/false, yes/no, on/off (any case); nullopt when unset.
std::optional<bool> getBool(const char* name);

// One of `allowed` (compared case-insensitively; returns the allowed
// spelling); nullopt when unset. Throws ValueError listing the allowed values.
std::optional<std::string> getChoice(const char* name, const std::vector<std::string>& allowed);

// Like getInt but the variable must be set; the error says to set it.
int64_t requireInt(const char* name, int64_t min, int64_t max);
std::string requireString(const char* name);

}  // namespace distlab::env
