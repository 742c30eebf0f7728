#pragma once
// Note [Backend options]
// BackendContext::options maps "<backend>.<name>" keys to text values
// ("shm.slot_bytes" = "1048576"). Every backend reads its options through the
// readers below and declares the keys it owns in its BackendInfo (name,
// one-line help, and a check that parses the value exactly as the backend
// will). validateBackendOptions() runs every check up front: initProcessGroup
// and newGroup call it before any rendezvous, and the CLI before it forks a
// rank, so a bad value is one ValueError naming the key, the value and the
// valid range, never a hang or a failure from inside the ranks.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace distlab::comm {

using BackendOptionMap = std::map<std::string, std::string>;

struct BackendOptionSpec {
  std::string key;   // "shm.slot_bytes"
  std::string help;  // "data slot per rank per parity (bytes, multiple of 4096)"
  // Throws ValueError naming the key and the valid values when `value` is bad.
  std::function<void(const std::string& value)> check;
};

// A whole number in [lo, hi] ("262144"; no sign, unit or spaces). Throws
// ValueError naming `key`, the text and the range.
uint64_t parseOptionUInt(const std::string& key, const std::string& value, uint64_t lo,
                         uint64_t hi);
// "1"/"true" or "0"/"false".
bool parseOptionFlag(const std::string& key, const std::string& value);
// One of `choices`; returns its index.
size_t parseOptionChoice(const std::string& key, const std::string& value,
                         const std::vector<std::string>& choices);

// `options[key]` read with `parse`, or `fallback` when the key is absent.
template <typename T, typename Parse>
T readOption(const BackendOptionMap& options, const std::string& key, T fallback, Parse parse) {
  auto it = options.find(key);
  return it == options.end() ? fallback : parse(key, it->second);
}

// Checks every key of `options` against the registered backends' specs:
// the prefix before '.' must name a registered backend, the key must be one it
// declares, and its check must accept the value. Throws ValueError listing the
// known keys on an unknown one. Keys of backends other than the group's are
// checked too: a misspelt key is an error wherever it appears.
void validateBackendOptions(const BackendOptionMap& options);

// Every declared key, sorted ("shm.slot_bytes", ...): for --help texts.
std::vector<std::string> knownBackendOptionKeys();

}  // namespace distlab::comm
