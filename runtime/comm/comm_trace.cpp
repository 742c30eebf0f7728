#include "runtime/comm/comm_trace.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cctype>

#include "runtime/core/trace.hpp"

namespace distlab::comm {
namespace {

std::atomic<uint64_t> gNextId{1};

int64_t bytesOf(const WorkInfo& info) {
  int64_t bytes = 0;
  for (size_t i = 0; i < info.inputs.size(); ++i) {
    bytes += info.inputs.numel(i) * static_cast<int64_t>(elementSize(info.inputs.dtype(i)));
  }
  return bytes;
}

class TraceObserver : public WorkObserver {
 public:
  explicit TraceObserver(const Work& work)
      : label_(fmt::format("{} #{}", traceOpName(work.info().opType), work.info().seq)),
        track_(trace::virtualTrack("comm " + work.info().groupName)) {}

  void onScheduled(const Work& work) override {
    // The group tells apart equal labels of two groups (emulator/predict reads it).
    trace::instant(trace::Category::kMark, "issue " + label_,
                   fmt::format(R"("group":"{}")", work.info().groupName), work.scheduledNs());
  }
  void onStarted(const Work& work) override {
    trace::instant(trace::Category::kMark, "start " + label_, {}, work.startedNs());
  }
  void onCompleted(const Work& work) override {
    const WorkInfo& info = work.info();
    trace::instant(trace::Category::kMark, "end " + label_, {}, work.completedNs());
    const int64_t start = work.startedNs() != 0 ? work.startedNs() : work.completedNs();
    trace::asyncSpan(track_, trace::Category::kComm, label_, id_, start, work.completedNs(),
                     fmt::format(R"("group":"{}","seq":{},"bytes":{},"ok":{})", info.groupName,
                                 info.seq, bytesOf(info), work.isSuccess()));
  }

 private:
  std::string label_;
  uint32_t track_;
  uint64_t id_ = gNextId.fetch_add(1);
};

}  // namespace

std::string traceOpName(OpType op) {
  std::string name(opTypeName(op));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::shared_ptr<WorkObserver> traceObserver(const Work& work) {
  if (!trace::enabled()) return nullptr;
  return std::make_shared<TraceObserver>(work);
}

}  // namespace distlab::comm
