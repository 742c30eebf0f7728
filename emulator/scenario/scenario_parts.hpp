#pragma once
// Section parsers of scenario_parser.cpp (one file per concern).
#include "emulator/scenario/toml_reader.hpp"

namespace distlab::emulator::detail {

void parseCollectiveWorkload(const TomlReader& r, const toml::table& w, Scenario& s);
void parseTrainingWorkload(const TomlReader& r, const toml::table& w, Scenario& s);
void parseProgramWorkload(const TomlReader& r, const toml::table& w, Scenario& s);
void parseFaults(const TomlReader& r, const toml::table& root, Scenario& s);
void parseExpect(const TomlReader& r, const toml::table& root, Scenario& s);
// `topology` (when present) and `collective_algorithm` of `t` into `into`,
// failing at the key's line with the model's message ([cluster] and
// [expect.predicted]).
void readNetworkKeys(const TomlReader& r, const toml::table& t, NetworkModel& into);

}  // namespace distlab::emulator::detail
