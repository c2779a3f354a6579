"""Hogwild training (torch's own mnist_hogwild example's shape): the model's parameters in shared
memory, two processes training it at once, the main one waiting for them."""
import torch
import torch.multiprocessing as mp
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(rank, model, steps):
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(4096, 256), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=64, shuffle=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    done = 0
    while done < steps:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
            if done >= steps:
                break


if __name__ == "__main__":
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))
    model.share_memory()
    procs = [mp.Process(target=train, args=(r, model, 400)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("done")
