// NonMaxSuppression: per batch and class, greedy selection by descending score (ties: lower box
// index first) of boxes scoring above score_threshold, suppressing boxes whose IoU with a
// selected one exceeds iou_threshold, up to max_output_boxes_per_class.
#include <algorithm>
#include <numeric>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

struct Box {
  double y1, x1, y2, x2;
};

void non_max_suppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.shape()[2] != 4)
    ctx.fail("boxes must be (num_batches, spatial_dimension, 4), found {}", shape_to_string(boxes.shape()));
  if (scores.rank() != 3) ctx.fail("scores must be (num_batches, num_classes, spatial_dimension), found {}",
                                   shape_to_string(scores.shape()));
  const int64_t nb = boxes.shape()[0], nbox = boxes.shape()[1], nc = scores.shape()[1];
  if (scores.shape()[0] != nb || scores.shape()[2] != nbox)
    ctx.fail("scores {} do not match boxes {}", shape_to_string(scores.shape()), shape_to_string(boxes.shape()));
  int64_t max_out = 0;
  if (ctx.has_input(2) && ctx.input(2).size() > 0) max_out = read_int_list(ctx.input(2), ctx).at(0);
  double iou_th = 0.0, score_th = 0.0;
  bool has_score_th = false;
  if (ctx.has_input(3) && ctx.input(3).size() > 0) iou_th = nn::read_floats(ctx, ctx.input(3)).at(0);
  if (ctx.has_input(4) && ctx.input(4).size() > 0) {
    score_th = nn::read_floats(ctx, ctx.input(4)).at(0);
    has_score_th = true;
  }
  const bool center = ctx.attr_int("center_point_box", 0) != 0;
  auto bv = nn::read_floats(ctx, boxes);
  auto sv = nn::read_floats(ctx, scores);
  std::vector<int64_t> selected;
  if (max_out > 0) {
    std::vector<Box> bx(static_cast<std::size_t>(nbox));
    std::vector<double> area(static_cast<std::size_t>(nbox));
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t i = 0; i < nbox; ++i) {
        const double* p = bv.data() + (b * nbox + i) * 4;
        Box r;
        if (center) {
          r = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
        } else {
          r = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
        }
        bx[i] = r;
        area[i] = (r.y2 - r.y1) * (r.x2 - r.x1);
      }
      for (int64_t c = 0; c < nc; ++c) {
        const double* s = sv.data() + (b * nc + c) * nbox;
        std::vector<int64_t> cand;
        for (int64_t i = 0; i < nbox; ++i)
          if (!has_score_th || s[i] > score_th) cand.push_back(i);
        std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t d) { return s[a] > s[d]; });
        std::vector<int64_t> kept;
        for (int64_t i : cand) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool suppressed = false;
          for (int64_t k : kept) {
            const double iy1 = std::max(bx[i].y1, bx[k].y1), ix1 = std::max(bx[i].x1, bx[k].x1);
            const double iy2 = std::min(bx[i].y2, bx[k].y2), ix2 = std::min(bx[i].x2, bx[k].x2);
            if (iy2 <= iy1 || ix2 <= ix1) continue;
            const double inter = (iy2 - iy1) * (ix2 - ix1);
            const double uni = area[i] + area[k] - inter;
            if (area[i] <= 0 || area[k] <= 0 || uni <= 0) continue;
            if (inter / uni > iou_th) {
              suppressed = true;
              break;
            }
          }
          if (!suppressed) kept.push_back(i);
        }
        for (int64_t k : kept) {
          selected.push_back(b);
          selected.push_back(c);
          selected.push_back(k);
        }
      }
    }
  }
  const int64_t count = static_cast<int64_t>(selected.size() / 3);
  Tensor& y = ctx.allocate_output(0, DType::kInt64, Shape{count, 3});
  std::copy(selected.begin(), selected.end(), y.mutable_data<int64_t>());
}

}  // namespace

PARITY_KERNEL("", "NonMaxSuppression", 10, non_max_suppression);

}  // namespace parity::ops
