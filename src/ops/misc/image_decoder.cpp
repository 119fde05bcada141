// ImageDecoder for the formats that need no codec library: BMP (uncompressed 24/32-bit) and
// binary/ASCII PNM (P2, P3, P5, P6). Other formats (JPEG, PNG, TIFF, WebP, JPEG 2000) are
// reported as unsupported. Output uint8 [H, W, 3] (RGB or BGR) or [H, W, 1] (Grayscale, with
// Pillow's integer luma weights).
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

struct Image {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height * width * 3
};

uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24); }
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

Image decode_bmp(const KernelContext& ctx, const uint8_t* d, std::size_t n) {
  if (n < 54) ctx.fail("BMP data is truncated ({} bytes)", n);
  const uint32_t offset = le32(d + 10);
  const uint32_t header = le32(d + 14);
  if (header < 40) ctx.unsupported("BMP with a {}-byte (OS/2) header is not supported", header);
  const auto width = static_cast<int32_t>(le32(d + 18));
  const auto raw_height = static_cast<int32_t>(le32(d + 22));
  const uint16_t bpp = le16(d + 28);
  const uint32_t compression = le32(d + 30);
  if (width <= 0 || raw_height == 0 || width > (1 << 16) || raw_height > (1 << 16) || raw_height < -(1 << 16))
    ctx.fail("BMP has invalid dimensions {}x{}", width, raw_height);
  if (!((bpp == 24 && compression == 0) || (bpp == 32 && (compression == 0 || compression == 3))))
    ctx.unsupported("BMP with {} bits per pixel and compression {} is not supported", bpp, compression);
  if (bpp == 32 && compression == 3) {
    if (n < 66 || le32(d + 54) != 0x00FF0000u || le32(d + 58) != 0x0000FF00u || le32(d + 62) != 0x000000FFu)
      ctx.unsupported("BMP with non-standard bit-field masks is not supported");
  }
  const bool top_down = raw_height < 0;
  const int64_t height = top_down ? -static_cast<int64_t>(raw_height) : raw_height;
  const int64_t bytes = bpp / 8;
  const int64_t stride = (width * bytes + 3) / 4 * 4;
  if (offset > n || static_cast<uint64_t>(offset) + static_cast<uint64_t>(stride * height) > n)
    ctx.fail("BMP pixel data is truncated");
  Image img;
  img.width = width;
  img.height = height;
  img.rgb.resize(static_cast<std::size_t>(width * height * 3));
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = d + offset + (top_down ? y : height - 1 - y) * stride;
    for (int64_t x = 0; x < width; ++x) {
      uint8_t* o = &img.rgb[static_cast<std::size_t>((y * width + x) * 3)];
      o[0] = row[x * bytes + 2];
      o[1] = row[x * bytes + 1];
      o[2] = row[x * bytes + 0];
    }
  }
  return img;
}

Image decode_pnm(const KernelContext& ctx, const uint8_t* d, std::size_t n) {
  const char kind = static_cast<char>(d[1]);
  std::size_t pos = 2;
  auto next_int = [&]() -> int64_t {
    while (pos < n) {
      if (d[pos] == '#') {
        while (pos < n && d[pos] != '\n' && d[pos] != '\r') ++pos;
      } else if (std::isspace(d[pos])) {
        ++pos;
      } else {
        break;
      }
    }
    if (pos >= n || !std::isdigit(d[pos])) ctx.fail("PNM header is malformed");
    int64_t v = 0;
    while (pos < n && std::isdigit(d[pos])) {
      v = v * 10 + (d[pos++] - '0');
      if (v > (int64_t{1} << 30)) ctx.fail("PNM header value is too large");
    }
    return v;
  };
  const int64_t width = next_int(), height = next_int(), maxval = next_int();
  if (width <= 0 || height <= 0 || width > (1 << 16) || height > (1 << 16)) ctx.fail("PNM has invalid dimensions");
  if (maxval <= 0 || maxval > 255) ctx.unsupported("PNM with maxval {} is not supported", maxval);
  const bool color = kind == '3' || kind == '6';
  const bool ascii = kind == '2' || kind == '3';
  const int64_t channels = color ? 3 : 1;
  const int64_t count = width * height * channels;
  std::vector<uint8_t> samples(static_cast<std::size_t>(count));
  if (ascii) {
    for (int64_t i = 0; i < count; ++i)
      samples[static_cast<std::size_t>(i)] = static_cast<uint8_t>(std::min<int64_t>(next_int(), maxval));
  } else {
    ++pos;  // the single whitespace after maxval
    if (pos + static_cast<std::size_t>(count) > n) ctx.fail("PNM pixel data is truncated");
    for (int64_t i = 0; i < count; ++i) samples[static_cast<std::size_t>(i)] = d[pos + static_cast<std::size_t>(i)];
  }
  Image img;
  img.width = width;
  img.height = height;
  img.rgb.resize(static_cast<std::size_t>(width * height * 3));
  for (int64_t p = 0; p < width * height; ++p)
    for (int64_t c = 0; c < 3; ++c) {
      int64_t v = samples[static_cast<std::size_t>(p * channels + (color ? c : 0))];
      if (maxval != 255) v = (v * 255 + maxval / 2) / maxval;
      img.rgb[static_cast<std::size_t>(p * 3 + c)] = static_cast<uint8_t>(v);
    }
  return img;
}

void image_decoder(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  if (data.dtype() != DType::kUInt8 || data.rank() != 1)
    ctx.fail("encoded_stream must be a 1-D uint8 tensor, found {} {}", dtype_name(data.dtype()),
             shape_to_string(data.shape()));
  const std::string format = ctx.attr_string("pixel_format");
  if (format != "RGB" && format != "BGR" && format != "Grayscale")
    ctx.fail("pixel_format must be RGB, BGR or Grayscale, found '{}'", format);
  const uint8_t* d = data.data<uint8_t>();
  const auto n = static_cast<std::size_t>(data.size());
  Image img;
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') img = decode_bmp(ctx, d, n);
  else if (n >= 3 && d[0] == 'P' && (d[1] == '2' || d[1] == '3' || d[1] == '5' || d[1] == '6'))
    img = decode_pnm(ctx, d, n);
  else if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8) ctx.unsupported("JPEG decoding is not supported (no codec library)");
  else if (n >= 8 && d[0] == 0x89 && d[1] == 'P' && d[2] == 'N' && d[3] == 'G')
    ctx.unsupported("PNG decoding is not supported (no codec library)");
  else ctx.unsupported("the image format is not supported (only BMP and PNM are decoded)");
  const int64_t pixels = img.width * img.height;
  if (format == "Grayscale") {
    Tensor& out = ctx.allocate_output(0, DType::kUInt8, {img.height, img.width, 1});
    uint8_t* o = out.mutable_data<uint8_t>();
    for (int64_t p = 0; p < pixels; ++p) {
      const uint8_t* c = &img.rgb[static_cast<std::size_t>(p * 3)];
      o[p] = static_cast<uint8_t>((c[0] * 19595u + c[1] * 38470u + c[2] * 7471u + 0x8000u) >> 16);
    }
    return;
  }
  Tensor& out = ctx.allocate_output(0, DType::kUInt8, {img.height, img.width, 3});
  uint8_t* o = out.mutable_data<uint8_t>();
  const bool bgr = format == "BGR";
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = 0; c < 3; ++c) o[p * 3 + c] = img.rgb[static_cast<std::size_t>(p * 3 + (bgr ? 2 - c : c))];
}

}  // namespace

PARITY_KERNEL("", "ImageDecoder", 20, image_decoder);

}  // namespace parity::ops
