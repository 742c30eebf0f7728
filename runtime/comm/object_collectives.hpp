#pragma once
// Object collectives on byte strings (PyTorch broadcast_object_list,
// all_gather_object, gather_object, scatter_object_list; the caller serialises).
// Protocol as PyTorch: exchange sizes first (one collective), then the bytes
// (a second collective). All are blocking and use the group's timeout; ranks are
// group ranks. Non-members: ValueError (PyTorch leaves the list unmodified).
#include <vector>

#include "runtime/comm/process_group.hpp"
#include "runtime/comm/store/store.hpp"

namespace distlab::comm {

// Replaces `object` on every rank but `src` with src's bytes.
void broadcastObject(ProcessGroup& group, Bytes& object, int src = 0);
// Every rank's bytes, in group-rank order.
std::vector<Bytes> allGatherObject(ProcessGroup& group, const Bytes& object);
// Every rank's bytes on `dst`; an empty vector elsewhere.
std::vector<Bytes> gatherObject(ProcessGroup& group, const Bytes& object, int dst = 0);
// `inputs` (one per rank, only read on `src`) -> the calling rank's entry.
Bytes scatterObject(ProcessGroup& group, const std::vector<Bytes>& inputs, int src = 0);

}  // namespace distlab::comm
