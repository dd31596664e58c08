#include "trainers/classifier/model.h"

#include <cmath>

namespace sb::classifier {

namespace {

/// He et al. 2015: weights ~ N(0, 2 / fan_in), biases zero (de Brebisson & Vincent 2016, sec. 4).
void he_init(const torch::Tensor& weight, const torch::Tensor& bias) {
  torch::NoGradGuard no_grad;
  const auto fan_in = static_cast<double>(weight[0].numel());
  weight.normal_(0, std::sqrt(2.0 / fan_in));
  bias.zero_();
}

}  // namespace

ConvNetImpl::ConvNetImpl(ConvNetOptions options) : options_(std::move(options)) {
  namespace nn = torch::nn;
  conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, options_.conv1, 5)));
  conv2 =
      register_module("conv2", nn::Conv2d(nn::Conv2dOptions(options_.conv1, options_.conv2, 5)));
  fc = register_module("fc", nn::Linear(options_.conv2 * 4 * 4, options_.fc));
  out = register_module("out", nn::Linear(options_.fc, options_.classes));
  he_init(conv1->weight, conv1->bias);
  he_init(conv2->weight, conv2->bias);
  he_init(fc->weight, fc->bias);
  {
    torch::NoGradGuard no_grad;
    // Zero output weights (paper sec. 4); heads whose gradient vanishes at z = 0 need a small
    // random start instead (config.h validate()).
    if (options_.output_init_std > 0)
      out->weight.normal_(0, options_.output_init_std);
    else
      out->weight.zero_();
    out->bias.zero_();
  }
  if (!options_.mse)
    head = register_module("head", heads::OutputHead(heads::OutputHeadOptions(
                                       options_.head, options_.fc, options_.fc)));
}

torch::Tensor ConvNetImpl::hidden(const torch::Tensor& images) {
  namespace F = torch::nn::functional;
  auto x =
      F::max_pool2d(torch::relu(conv1(images)), F::MaxPool2dFuncOptions(2));  // (N, c1, 12, 12)
  x = F::max_pool2d(torch::relu(conv2(x)), F::MaxPool2dFuncOptions(2));       // (N, c2, 4, 4)
  return torch::relu(fc(x.flatten(/*start_dim=*/1)));                         // (N, fc)
}

torch::Tensor ConvNetImpl::logits(const torch::Tensor& h) { return out(h); }

torch::Tensor ConvNetImpl::log_probs(const torch::Tensor& h) {
  TORCH_CHECK(!options_.mse, "ConvNet::log_probs: the mse model has no probabilities");
  return head->forward(h, out->weight, out->bias);
}

torch::Tensor ConvNetImpl::loss(const torch::Tensor& h, const torch::Tensor& targets) {
  if (options_.mse) {
    const auto o = logits(h);                                                // (N, M)
    const auto y = torch::one_hot(targets, options_.classes).to(o.dtype());  // (N, M)
    return (o - y).pow(2).sum(/*dim=*/1).mean();
  }
  return head->loss(h, out->weight, out->bias, targets);
}

}  // namespace sb::classifier
