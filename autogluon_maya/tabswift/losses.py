"""TabSwift's training objectives (paper: cross-entropy, MSE and MAE on the query rows), shared by pretraining
(``autogluon_maya.pretraining``) and by fine-tuning on the user's table (``finetune``).

Stages 1-2: every task is run twice through the same backbone -- once with class ids on the support
rows (classification head), once with standardized targets (regression head) -- and the loss on the
query rows is CE + MSE + MAE, equal weights (the paper gives none).  Logits beyond a task's class
count are masked out, so the softmax only spreads over labels the task can have.

With ``cls_mask`` in the batch (``target_mode="one"``) each task runs in one head only -- half the
compute per task -- and the loss is CE over the classification tasks + (MSE + MAE) over the others,
each a mean over its own tasks, so its expectation is the two-mode loss.  A part whose tasks are
absent from the batch is left out of the sum (and of the returned parts).

Stage 3 (early exit; backbone frozen): each layer's prediction head gets the same loss as the final
head, and each exit head a binary cross-entropy on "this layer's prediction already agrees with the
final layer's" -- same arg-max class, or a standardized regression output within ``tolerance`` of the
final one (our choice: the paper's App. B.2 criterion is not available).
"""

from __future__ import annotations

from typing import Dict, List

import torch
import torch.nn.functional as F

from .network import CLASSIFICATION, REGRESSION, TabSwiftNetwork


def masked_logits(logits: torch.Tensor, n_classes: torch.Tensor) -> torch.Tensor:
    """(B, Q, C_max) logits with ids >= the task's class count set to a large negative value."""
    ids = torch.arange(logits.shape[-1], device=logits.device)
    invalid = ids[None, None, :] >= n_classes.to(logits.device)[:, None, None]
    return logits.float().masked_fill(invalid, torch.finfo(torch.float32).min / 4)


def task_loss(pred: torch.Tensor, target: torch.Tensor, task: str, n_classes: torch.Tensor) -> Dict[str, torch.Tensor]:
    if task == CLASSIFICATION:
        logits = masked_logits(pred, n_classes)
        return {"ce": F.cross_entropy(logits.flatten(0, 1), target.flatten())}
    pred = pred.float()
    return {"mse": F.mse_loss(pred, target), "mae": F.l1_loss(pred, target)}


def _split(batch: Dict[str, torch.Tensor]):
    n = int(batch["n_support"])
    x = batch["x"]
    return x[:, :n], x[:, n:], n


def backbone_loss(net: TabSwiftNetwork, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Stage 1-2 loss; returns the total under ``loss`` and its parts (detached) for logging."""
    xs, xq, n = _split(batch)
    parts: Dict[str, torch.Tensor] = {}
    mask = batch.get("cls_mask")
    for task, key in ((CLASSIFICATION, "y_cls"), (REGRESSION, "y_reg")):
        rows = slice(None) if mask is None else (mask if task == CLASSIFICATION else ~mask)
        if mask is not None and not bool(rows.any()):
            continue
        y = batch[key][rows]
        out = net(xs[rows], y[:, :n], xq[rows], task, n_features=batch["n_features"][rows], masked=False)
        parts.update(task_loss(out.prediction, y[:, n:], task, batch["n_classes"][rows]))
    parts["loss"] = sum(parts.values())
    return parts


#: regression "agreement" of a layer with the final layer, in standard deviations of the targets
EXIT_TOLERANCE = 0.1


def exit_targets(layer_preds: List[torch.Tensor], final: torch.Tensor, task: str, n_classes: torch.Tensor,
                 tolerance: float) -> List[torch.Tensor]:
    """1.0 where layer e's prediction agrees with the final layer's, per query (no gradient)."""
    with torch.no_grad():
        if task == CLASSIFICATION:
            final_cls = masked_logits(final, n_classes).argmax(-1)
            return [(masked_logits(p, n_classes).argmax(-1) == final_cls).float() for p in layer_preds]
        return [((p.float() - final.float()).abs() <= tolerance).float() for p in layer_preds]


def exit_loss(net: TabSwiftNetwork, batch: Dict[str, torch.Tensor], tolerance: float = EXIT_TOLERANCE) -> Dict[str, torch.Tensor]:
    """Stage 3 loss: per-layer head losses + exit BCE, averaged over the exit layers."""
    xs, xq, n = _split(batch)
    parts: Dict[str, torch.Tensor] = {}
    total = 0.0
    for task, key in ((CLASSIFICATION, "y_cls"), (REGRESSION, "y_reg")):
        y = batch[key]
        out = net(xs, y[:, :n], xq, task, n_features=batch["n_features"], masked=False, return_layers=True)
        if not out.exit_logits:
            raise ValueError("stage 3 needs a network built with early_exit=True and at least 2 layers")
        head = [task_loss(p, y[:, n:], task, batch["n_classes"]) for p in out.layer_predictions]
        head_loss = torch.stack([sum(h.values()) for h in head]).mean()
        targets = exit_targets(out.layer_predictions, out.prediction, task, batch["n_classes"], tolerance)
        bce = torch.stack([F.binary_cross_entropy_with_logits(s.float(), t)
                           for s, t in zip(out.exit_logits, targets)]).mean()
        parts[f"{task[:3]}_head"] = head_loss
        parts[f"{task[:3]}_exit_bce"] = bce
        parts[f"{task[:3]}_agree"] = torch.stack([t.mean() for t in targets]).mean()
        total = total + head_loss + bce
    parts["loss"] = total
    return parts


__all__ = ["EXIT_TOLERANCE", "backbone_loss", "exit_loss", "exit_targets", "masked_logits", "task_loss"]
