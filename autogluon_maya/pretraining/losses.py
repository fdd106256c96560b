"""The pretraining objectives live with the network they train (``autogluon_maya.tabswift.losses``): fine-tuning
on a user's table uses the same ones, and the model package does not depend on the pretraining package."""

from ..tabswift.losses import EXIT_TOLERANCE, backbone_loss, exit_loss, exit_targets, masked_logits, task_loss

__all__ = ["EXIT_TOLERANCE", "backbone_loss", "exit_loss", "exit_targets", "masked_logits", "task_loss"]
