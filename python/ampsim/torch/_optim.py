"""emu.optimizer(opt): a torch.optim optimizer whose updates are rounded into
the weights' format as the C emulator's optimizer does (sim/optim.c).

With FP32 storage (fp32 and amp policies: the parameters are the FP32
masters) the wrapped optimizer's step runs unchanged. With narrow storage
(pure policies) the update u = p_new - p_old is formed from the optimizer's
FP32 step (exactly -lr*g, a float32 product, for plain SGD) and w + u, formed
in double, is rounded once into the weight format by the policy's update
mode: round (the policy's rounding), sr (stochastic) or kahan (compensated,
with a per-weight compensation in the optimizer-state format). Optimizer
states are rounded into the optimizer-state format. Every step the update
statistics go to ``<weight>.update`` and updates that leave the stored weight
unchanged are counted as vanished."""
import torch

from . import _rt


class EmulatedOptimizer:
    """Wraps a torch.optim optimizer (attributes are the optimizer's)."""

    def __init__(self, emu, opt):
        self.__dict__["emu"] = emu
        self.__dict__["opt"] = opt
        self.__dict__["_kahan"] = {}

    def __getattr__(self, name):
        return getattr(self.opt, name)

    def __setattr__(self, name, value):
        setattr(self.opt, name, value)

    def _unwrap(self):
        pass

    def zero_grad(self, set_to_none=False):
        return self.opt.zero_grad(set_to_none=set_to_none)

    def _plain_sgd(self, group):
        return (isinstance(self.opt, torch.optim.SGD) and not group.get("momentum") and
                not group.get("weight_decay") and not group.get("maximize", False))

    def step(self, closure=None):
        emu = self.emu
        pol = emu.policy
        params = []
        for group in self.opt.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    params.append((p, group))
        names = [emu._param_names.get(id(p), "param%d" % i) for i, (p, _) in enumerate(params)]
        for n in names:
            emu._register_weight(n)
        for n in names:
            emu._tid(n + ".update")
            if pol.update == "kahan" and pol.weight != "fp32":
                emu._tid(n + ".kahan")
        narrow = pol.weight != "fp32" and not pol.has_master
        with emu._quiet():
            # narrow storage: the stored weight is the parameter in the weight format,
            # as this step's forward cast it (the cast cache)
            olds = [self._stored(p) if narrow else p.detach().clone() for p, _ in params]
            res = self.opt.step(closure) if closure is not None else self.opt.step()
            vanished = 0
            for (p, group), old, name in zip(params, olds, names):
                if self._plain_sgd(group):
                    u = p.grad.detach() * (-float(group["lr"]))
                    if u.is_sparse:             # (nn.Embedding(sparse=True): the update of every row)
                        u = u.to_dense()
                else:
                    u = (p.detach().double() - old.double())
                store = pol.weight if narrow else "fp32"
                emu._round(u.float() if u.dtype == torch.float64 else u, store, name + ".update", "update")
                if not narrow:
                    vanished += int(((u != 0) & (p.detach() == old)).sum())
                    continue
                mode = "sr" if pol.update == "sr" else pol.rounding
                ud = u.double()
                with torch.no_grad():
                    if pol.update == "kahan":
                        c = self._kahan.get(id(p))
                        if c is None:
                            c = self._kahan[id(p)] = torch.zeros_like(old)
                        y = ud - c.double()
                        new = self._round_update(old.double() + y, store, name, mode)
                        cn, _ = _rt.round_t((new.double() - old.double()) - y, pol.optim_state, pol.rounding,
                                            seed=_rt.step_seed(emu.seed, emu.step_index) if pol.rounding == "sr" else 0,
                                            stream=emu._tid(name + ".kahan") if pol.rounding == "sr" else 0)
                        c.copy_(cn)
                    else:
                        new = self._round_update(old.double() + ud, store, name, mode)
                    p.copy_(new)
                    vanished += int(((u != 0) & (new == old)).sum())
                    for v in self.opt.state.get(p, {}).values():
                        if isinstance(v, torch.Tensor) and v.is_floating_point() and v.shape == p.shape:
                            v.copy_(_rt.round_t(v, pol.optim_state, pol.rounding)[0])
            emu._step_vanished += vanished
        emu._note_updates()
        if emu.scaler is None:
            emu.step(lr=self.opt.param_groups[0].get("lr"))
        return res

    def _stored(self, p):
        emu, pol = self.emu, self.emu.policy
        hit = emu._casts.get((id(p), pol.weight))
        if hit is not None and hit[0] == p._version:
            return hit[1].detach().clone()
        return _rt.round_t(p, pol.weight, "rne")[0]

    def _round_update(self, s, fmt, name, mode):
        emu = self.emu
        seed = stream = 0
        if mode == "sr":
            seed = _rt.step_seed(emu.seed, emu.step_index)
            stream = emu._tid(name) | (1 << 32)
        y, _ = _rt.round_t(s, fmt, mode, sr_bits=emu.policy.sr_bits, seed=seed, stream=stream)
        return y

    def state_dict(self):
        return self.opt.state_dict()

    def load_state_dict(self, sd):
        return self.opt.load_state_dict(sd)
