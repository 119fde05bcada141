// Feeds taken one at a time: work over many feeds (calibration) that must not hold them all, fed
// by a source that may still be producing them (a data loader script's process) or by a list.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "parity/core/array_io.h"
#include "parity/core/tensor_metadata.h"

namespace parity {

class FeedStream {
 public:
  virtual ~FeedStream() = default;
  // The next feed, nullopt once there are no more (and from then on). Called by one thread at a
  // time; throws what the source raises (a script that failed, a malformed record).
  virtual std::optional<NamedTensors> next() = 0;
  // How many feeds there are in all, where known before they are all taken.
  virtual std::optional<std::size_t> size() const { return std::nullopt; }
};

// A data loader that gives its feeds as a stream, given the model's inputs.
using FeedStreamFunc = std::function<std::unique_ptr<FeedStream>(const TensorMetadata&)>;

// The feeds of a list, moved out one at a time (the list is not kept).
std::unique_ptr<FeedStream> feed_stream_of(std::vector<NamedTensors> feeds);

}  // namespace parity
