#include "parity/core/feed_stream.h"

#include <utility>

namespace parity {
namespace {

class ListFeedStream final : public FeedStream {
 public:
  explicit ListFeedStream(std::vector<NamedTensors> feeds) : feeds_(std::move(feeds)) {}

  std::optional<NamedTensors> next() override {
    if (next_ == feeds_.size()) return std::nullopt;
    NamedTensors feed = std::move(feeds_[next_]);
    feeds_[next_++].clear();
    return feed;
  }

  std::optional<std::size_t> size() const override { return feeds_.size(); }

 private:
  std::vector<NamedTensors> feeds_;
  std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<FeedStream> feed_stream_of(std::vector<NamedTensors> feeds) {
  return std::make_unique<ListFeedStream>(std::move(feeds));
}

}  // namespace parity
