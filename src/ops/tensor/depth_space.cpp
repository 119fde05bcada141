// DepthToSpace (DCR / CRD) and SpaceToDepth, as separable index maps over NCHW.
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

void depth_to_space(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 4) ctx.fail("input must be 4-D (N, C, H, W), found shape {}", shape_to_string(x.shape()));
  const int64_t b = ctx.attr_int("blocksize");
  if (b <= 0) ctx.fail("blocksize must be positive, found {}", b);
  std::string mode = ctx.opset() >= 11 ? ctx.attr_string("mode", "DCR") : "DCR";
  if (mode != "DCR" && mode != "CRD") ctx.fail("unknown mode '{}'", mode);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (C % (b * b) != 0) ctx.fail("channels {} are not divisible by blocksize^2 = {}", C, b * b);
  const int64_t Co = C / (b * b), HW = H * W;
  Shape out_shape = {N, Co, H * b, W * b};
  std::vector<std::vector<int64_t>> maps(4);
  maps[0].resize(static_cast<std::size_t>(N));
  for (int64_t n = 0; n < N; ++n) maps[0][n] = n * C * HW;
  maps[1].resize(static_cast<std::size_t>(Co));
  for (int64_t c = 0; c < Co; ++c) maps[1][c] = (mode == "DCR" ? c : c * b * b) * HW;
  maps[2].resize(static_cast<std::size_t>(H * b));
  for (int64_t oh = 0; oh < H * b; ++oh) {
    int64_t i = oh % b, h = oh / b;
    maps[2][oh] = (mode == "DCR" ? i * b * Co : i * b) * HW + h * W;
  }
  maps[3].resize(static_cast<std::size_t>(W * b));
  for (int64_t ow = 0; ow < W * b; ++ow) {
    int64_t j = ow % b, w = ow / b;
    maps[3][ow] = (mode == "DCR" ? j * Co : j) * HW + w;
  }
  gather_copy(ctx, 0, x, out_shape, maps);
}

void space_to_depth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 4) ctx.fail("input must be 4-D (N, C, H, W), found shape {}", shape_to_string(x.shape()));
  const int64_t b = ctx.attr_int("blocksize");
  if (b <= 0) ctx.fail("blocksize must be positive, found {}", b);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (H % b != 0 || W % b != 0) ctx.fail("height {} and width {} must be divisible by blocksize {}", H, W, b);
  const int64_t Ho = H / b, Wo = W / b, HW = H * W;
  Shape out_shape = {N, C * b * b, Ho, Wo};
  std::vector<std::vector<int64_t>> maps(4);
  maps[0].resize(static_cast<std::size_t>(N));
  for (int64_t n = 0; n < N; ++n) maps[0][n] = n * C * HW;
  maps[1].resize(static_cast<std::size_t>(C * b * b));
  for (int64_t oc = 0; oc < C * b * b; ++oc) {
    int64_t c = oc % C, ij = oc / C, i = ij / b, j = ij % b;
    maps[1][oc] = c * HW + i * W + j;
  }
  maps[2].resize(static_cast<std::size_t>(Ho));
  for (int64_t oh = 0; oh < Ho; ++oh) maps[2][oh] = oh * b * W;
  maps[3].resize(static_cast<std::size_t>(Wo));
  for (int64_t ow = 0; ow < Wo; ++ow) maps[3][ow] = ow * b;
  gather_copy(ctx, 0, x, out_shape, maps);
}

}  // namespace

PARITY_KERNEL("", "DepthToSpace", 1, depth_to_space);
PARITY_KERNEL("", "SpaceToDepth", 1, space_to_depth);

}  // namespace parity::ops::tensor
