"""Fitted MAYA networks, as a trained model keeps and pickles them.  ``FittedMaya`` holds a network with its
inference context (the key projections and label embeddings of its context rows, Eq. 14: every training row, or
the ``max_context_rows`` a fit drew, ``context.draw_context``) as buffers, so that
``.to(device)`` and pickling move them together and a model trained on a GPU loads on a CPU.

Saved predictors name these classes by ``autogluon_maya.maya.trainer``, where they were first defined; that module
re-exports them so that such pickles keep loading."""

from __future__ import annotations

from typing import List

import torch
from torch import nn

from .network import MayaNetwork


class FittedMaya(nn.Module):
    """A trained network together with its inference context."""

    def __init__(self, net: MayaNetwork):
        super().__init__()
        self.net = net
        self.n_keys = len(net.decoder)
        self.register_buffer("ctx_values", torch.zeros(0))
        for i in range(self.n_keys):
            self.register_buffer(f"ctx_keys_{i}", torch.zeros(0))

    @torch.no_grad()
    def set_context(self, x_num: torch.Tensor, x_cat: torch.Tensor, y: torch.Tensor, chunk: int = 1024):
        """Encode every context row once (Eq. 14); queries then run the encoder on themselves only."""
        self.net.eval()
        enc = torch.cat([self.net.encode(x_num[s:s + chunk], x_cat[s:s + chunk]).float()
                         for s in range(0, len(x_num), chunk)])
        for i, k in enumerate(self.net.project_keys(enc)):
            setattr(self, f"ctx_keys_{i}", k)
        self.ctx_values = self.net.embed_labels(y)
        return enc

    @property
    def context_size(self) -> int:
        return self.ctx_values.shape[0]

    @torch.no_grad()
    def predict_raw(self, x_num: torch.Tensor, x_cat: torch.Tensor, chunk_size: int = 1024) -> torch.Tensor:
        """Raw outputs (logits / standardized values) in query chunks; the chunk shrinks for large contexts so
        that the similarity block stays under ~64M entries."""
        self.net.eval()
        keys = [getattr(self, f"ctx_keys_{i}") for i in range(self.n_keys)]
        chunk = max(1, min(chunk_size, (1 << 26) // max(1, self.context_size)))
        outs = []
        for s in range(0, len(x_num), chunk):
            q = self.net.encode(x_num[s:s + chunk], x_cat[s:s + chunk]).float()
            outs.append(self.net.decode(q, keys, self.ctx_values).float())
        if not outs:  # zero query rows: keep the (0, out_dim) shape callers index into
            return torch.zeros(0, self.net.predictor.out_features, device=x_num.device)
        return torch.cat(outs)


class FittedMayaMembers(nn.Module):
    """Networks of one fit trained from different seeds; the wrapper averages their predictions."""

    def __init__(self, members: List[FittedMaya]):
        super().__init__()
        self.members = nn.ModuleList(members)

    def __len__(self) -> int:
        return len(self.members)

    def predict_raw_members(self, x_num: torch.Tensor, x_cat: torch.Tensor) -> List[torch.Tensor]:
        return [m.predict_raw(x_num, x_cat) for m in self.members]
