"""What every frontend (ONNX, torch.export) shares: the typed value emitter with constant
folding at import (`values`), identifier naming (`names`), and the error with its report of
unsupported ops (`errors`)."""
