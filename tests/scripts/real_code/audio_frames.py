"""Keyword spotting on synthetic 1-s clips whose log-spectrogram __getitem__ computes frame by
frame (`for start in range(0, len(wav) - N_FFT + 1, HOP): frame = wav[start:start + N_FFT] *
window`, an rfft each). gpubottle named Clips.spectrogram with "make it cheaper first": a line,
not what its time goes to. It should name the loop over the clip's windows, with all windows at
once (sliding_window_view, one rfft over its rows: 0.93 ms a clip -> 0.28 ms, the same values).
Options: --epochs."""
import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

SR, N_FFT, HOP = 16000, 400, 160


class Clips(Dataset):
    def __init__(self, n=2000):
        rng = np.random.default_rng(0)
        self.wavs = rng.standard_normal((n, SR)).astype(np.float32)
        self.labels = rng.integers(0, 12, n)
        self.window = np.hanning(N_FFT).astype(np.float32)

    def __len__(self):
        return len(self.wavs)

    def spectrogram(self, wav):
        frames = []
        for start in range(0, len(wav) - N_FFT + 1, HOP):
            frame = wav[start:start + N_FFT] * self.window
            frames.append(np.abs(np.fft.rfft(frame)) ** 2)
        return np.log(np.stack(frames, axis=1) + 1e-6)

    def __getitem__(self, i):
        spec = self.spectrogram(self.wavs[i])
        return torch.from_numpy(spec.astype(np.float32)).unsqueeze(0), int(self.labels[i])


ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=2)
a = ap.parse_args()
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 12))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(Clips(), batch_size=32, shuffle=True)
for _epoch in range(a.epochs):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print(f"loss {loss.item():.4f}")
