"""Training as module transforms: weights lifted to parameters, losses and optimizers written
in dlvm, and a `train_step` function built from a model (see step.py); `dlvmrt.training` is the
Python API that runs it."""
from .lift import lift
from .step import LOSSES, SGD, Adam, TrainingError, TrainStep, build_train_step

__all__ = ["lift", "build_train_step", "TrainStep", "SGD", "Adam", "LOSSES", "TrainingError"]
