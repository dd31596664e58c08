// Anchor translation unit for the precompiled <torch/torch.h> (see TorchPch.cmake).
