"""gpubottle: why is this PyTorch training run slow, and what should change."""

__version__ = "0.1.0"
