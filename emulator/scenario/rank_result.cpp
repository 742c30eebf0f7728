#include "emulator/scenario/rank_result.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

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

void writeRankResult(const std::string& path, const RankResult& r) {
  nlohmann::json j = {{"rank", r.rank},         {"status", r.status},
                      {"error_type", r.errorType}, {"message", r.message},
                      {"start_us", r.startUs},  {"end_us", r.endUs},
                      {"error_us", r.errorUs},  {"losses", r.losses},
                      {"param_checksum", r.paramChecksum},
                      {"reference_checked", r.referenceChecked},
                      {"reference_within_bound", r.referenceWithinBound},
                      {"reference_worst_ratio", r.referenceWorstRatio},
                      {"reference_detail", r.referenceDetail},
                      {"steps_run", r.stepsRun}};
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
    r.losses = j.at("losses").get<std::vector<double>>();
    r.paramChecksum = j.at("param_checksum");
    r.referenceChecked = j.at("reference_checked");
    r.referenceWithinBound = j.at("reference_within_bound");
    r.referenceWorstRatio = j.at("reference_worst_ratio");
    r.referenceDetail = j.at("reference_detail");
    r.stepsRun = j.at("steps_run");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw Error("malformed rank result " + path + ": " + e.what());
  }
}

}  // namespace distlab::emulator
