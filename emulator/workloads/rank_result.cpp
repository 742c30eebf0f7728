#include "emulator/workloads/rank_result.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "runtime/core/clock.hpp"
#include "runtime/core/errors.hpp"

namespace distlab::emulator {

std::string errorTypeName(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const DistTimeoutError&) {
    return "DistTimeoutError";
  } catch (const DistPeerFailureError&) {
    return "DistPeerFailureError";
  } catch (const DistBackendError&) {
    return "DistBackendError";
  } catch (const DistNetworkError&) {
    return "DistNetworkError";
  } catch (const DistStoreError&) {
    return "DistStoreError";
  } catch (const DistError&) {
    return "DistError";
  } catch (const ValueError&) {
    return "ValueError";
  } catch (const Error&) {
    return "Error";
  } catch (const std::exception&) {
    return "std::exception";
  } catch (...) {
    return "unknown";
  }
}

nlohmann::json jsonNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

nlohmann::json jsonNumbers(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(jsonNumber(v));
  return out;
}

double numberFromJson(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (j == "Infinity") return std::numeric_limits<double>::infinity();
  if (j == "-Infinity") return -std::numeric_limits<double>::infinity();
  throw Error("expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), found " + j.dump());
}

void noteNonFinite(RankResult& result, int step, std::string what) {
  if (result.nonFiniteStep >= 0) return;
  result.nonFiniteStep = step;
  result.nonFiniteUs = wallClockNowUs();
  result.nonFiniteWhat = std::move(what);
}

std::optional<std::pair<int, std::string>> firstNonFinite(
    const std::vector<std::optional<RankResult>>& results) {
  const RankResult* first = nullptr;
  int rank = -1;
  for (size_t r = 0; r < results.size(); ++r) {
    const auto& res = results[r];
    if (!res || res->nonFiniteStep < 0) continue;
    if (!first || res->nonFiniteStep < first->nonFiniteStep ||
        (res->nonFiniteStep == first->nonFiniteStep && res->nonFiniteUs < first->nonFiniteUs)) {
      first = &*res;
      rank = static_cast<int>(r);
    }
  }
  if (!first) return std::nullopt;
  return std::pair{rank, fmt::format("rank {} went non-finite first, at step {} ({})", rank,
                                     first->nonFiniteStep, first->nonFiniteWhat)};
}

nlohmann::json jsonSeries(const std::map<std::string, std::vector<double>>& series) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, values] : series) out[name] = jsonNumbers(values);
  return out;
}

void writeRankResult(const std::string& path, const RankResult& r) {
  nlohmann::json j = {{"rank", r.rank},         {"status", r.status},
                      {"error_type", r.errorType}, {"message", r.message},
                      {"start_us", r.startUs},  {"end_us", r.endUs},
                      {"error_us", r.errorUs},  {"losses", jsonNumbers(r.losses)},
                      {"param_checksum", r.paramChecksum},
                      {"reference_checked", r.referenceChecked},
                      {"reference_within_bound", r.referenceWithinBound},
                      {"reference_worst_ratio", jsonNumber(r.referenceWorstRatio)},
                      {"reference_detail", r.referenceDetail},
                      {"steps_run", r.stepsRun},
                      {"step_ms", r.stepMs},
                      {"non_finite_step", r.nonFiniteStep},
                      {"non_finite_us", r.nonFiniteUs},
                      {"non_finite_what", r.nonFiniteWhat}};
  j["reported"] = jsonSeries(r.reported);
  j["probe_loss_before"] = jsonNumber(r.probeLossBefore);
  j["probe_loss_after"] = jsonNumber(r.probeLossAfter);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

RankResult readRankResult(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("no rank result at " + path);
  nlohmann::json j;
  try {
    in >> j;
    RankResult r;
    r.rank = j.at("rank");
    r.status = j.at("status");
    r.errorType = j.at("error_type");
    r.message = j.at("message");
    r.startUs = j.at("start_us");
    r.endUs = j.at("end_us");
    r.errorUs = j.at("error_us");
    for (const auto& loss : j.at("losses")) r.losses.push_back(numberFromJson(loss));
    r.paramChecksum = j.at("param_checksum");
    r.referenceChecked = j.at("reference_checked");
    r.referenceWithinBound = j.at("reference_within_bound");
    r.referenceWorstRatio = numberFromJson(j.at("reference_worst_ratio"));
    r.referenceDetail = j.at("reference_detail");
    r.stepsRun = j.at("steps_run");
    r.stepMs = j.value("step_ms", std::vector<double>{});
    r.nonFiniteStep = j.at("non_finite_step");
    r.nonFiniteUs = j.at("non_finite_us");
    r.nonFiniteWhat = j.at("non_finite_what");
    r.probeLossBefore = numberFromJson(j.at("probe_loss_before"));
    r.probeLossAfter = numberFromJson(j.at("probe_loss_after"));
    for (const auto& [name, values] : j.at("reported").items()) {
      for (const auto& v : values) r.reported[name].push_back(numberFromJson(v));
    }
    return r;
  } catch (const std::exception& e) {  // nlohmann's errors and numberFromJson's
    throw Error("malformed rank result " + path + ": " + e.what());
  }
}

}  // namespace distlab::emulator
