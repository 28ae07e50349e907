"""The model zoo of ampsim.torch's coverage test and cost benchmark: models
nobody in the project wrote (torchvision, torch.nn), small inputs.

ZOO (= zoo()) maps a name to (make() -> model, batch(step) -> (inputs, targets),
loss(model, inputs, targets) -> loss)."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def _img(size, classes, batch=2):
    def b(s):
        g = torch.Generator().manual_seed(100 + s)
        return torch.randn(batch, 3, size, size, generator=g), torch.randint(0, classes, (batch,), generator=g)
    return b


def _xent(m, x, y):
    return F.cross_entropy(m(x), y)


def _tokens(vocab, T=12, batch=4):
    def b(s):
        g = torch.Generator().manual_seed(200 + s)
        idx = torch.randint(0, vocab, (batch, T + 1), generator=g)
        return idx[:, :-1], idx[:, 1:]
    return b


def _lm_loss(m, x, y):
    return F.cross_entropy(m(x).flatten(0, 1), y.flatten())


class RNNLM(nn.Module):
    """Embedding, a 2-layer LSTM or GRU (batch_first), a linear head."""

    def __init__(self, cell, vocab=50, C=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, C)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(C, C, num_layers=2, batch_first=True)
        self.head = nn.Linear(C, vocab)

    def forward(self, idx):
        return self.head(self.rnn(self.emb(idx))[0])


class EncoderLM(nn.Module):
    """Embedding, nn.TransformerEncoder (2 layers, 4 heads), a linear head."""

    def __init__(self, vocab=50, C=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, C)
        layer = nn.TransformerEncoderLayer(C, 4, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(C, vocab)

    def forward(self, idx):
        T = idx.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf")), 1)
        return self.head(self.enc(self.emb(idx), mask=mask))


def _tv(name, **kw):
    def make():
        import torchvision.models as tvm
        return getattr(tvm, name)(**kw)
    return make


def _vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64,
                             num_classes=10)


def train_step(model, opt, loss_fn, x, y, scaler=None, phases=None):
    """One training step (through scaler when given); returns the loss.
    phases: a list of three numbers to which the CPU seconds of the step's
    parts are added (the forward and the loss; zero_grad and the backward;
    the optimizer step with the scaler's unscaling and update), or None."""
    t0 = time.process_time()
    loss = loss_fn(model, x, y)
    t1 = time.process_time()
    opt.zero_grad()
    if scaler is not None:
        scaler.scale(loss).backward()
        t2 = time.process_time()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        t2 = time.process_time()
        opt.step()
    if phases is not None:
        phases[0] += t1 - t0
        phases[1] += t2 - t1
        phases[2] += time.process_time() - t2
    return loss


def zoo(scale=1):
    """The zoo with batches scale times the test's (the benchmark's --scale)."""
    return {
        "resnet18": (_tv("resnet18", num_classes=10), _img(32, 10, 2 * scale), _xent),
        "mobilenet_v3_small": (_tv("mobilenet_v3_small", num_classes=10), _img(32, 10, 2 * scale), _xent),
        "vit": (_vit, _img(32, 10, 2 * scale), _xent),
        "transformer_encoder": (EncoderLM, _tokens(50, batch=4 * scale), _lm_loss),
        "lstm_lm": (lambda: RNNLM("lstm"), _tokens(50, batch=4 * scale), _lm_loss),
        "gru_lm": (lambda: RNNLM("gru"), _tokens(50, batch=4 * scale), _lm_loss),
    }


ZOO = zoo()
