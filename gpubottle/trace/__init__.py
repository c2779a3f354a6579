"""torch.profiler (Kineto / Chrome trace) reading and analysis. Never imports torch."""
