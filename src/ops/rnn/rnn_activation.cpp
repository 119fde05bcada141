// The recurrent kernels' activation functions (rnn_util.h), for the compute types float and double.
#include "rnn/rnn_util.h"

namespace parity::ops::rnn {

template <typename C>
C Activation::operator()(C x) const {
  switch (kind) {
    case Kind::kRelu: return x > C(0) ? x : C(0);
    case Kind::kTanh: return std::tanh(x);
    case Kind::kSigmoid: return x >= C(0) ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x));
    case Kind::kAffine: return C(alpha) * x + C(beta);
    case Kind::kLeakyRelu: return x >= C(0) ? x : C(alpha) * x;
    case Kind::kThresholdedRelu: return x > C(alpha) ? x : C(0);
    case Kind::kScaledTanh: return C(alpha) * std::tanh(C(beta) * x);
    case Kind::kHardSigmoid: return std::min(std::max(C(alpha) * x + C(beta), C(0)), C(1));
    case Kind::kElu: return x >= C(0) ? x : C(alpha) * (std::exp(x) - C(1));
    case Kind::kSoftsign: return x / (C(1) + std::abs(x));
    case Kind::kSoftplus: return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  return x;
}

template float Activation::operator()(float x) const;
template double Activation::operator()(double x) const;

}  // namespace parity::ops::rnn
