# Flight-recorder dump analysis (`distlab analyze`); needs only core + JSON.
list(APPEND DISTLAB_EMULATOR_SOURCES analyze/dump_reader.cpp analyze/dump_fields.cpp
     analyze/fr_analysis.cpp)
list(APPEND DISTLAB_EMULATOR_DEPS nlohmann_json::nlohmann_json)
